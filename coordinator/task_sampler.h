// The coordinator's task sampler: which task the next new episode works on. Each epoch is one
// permutation of the run's task ids, drawn from (seed, epoch) alone, so the position (epoch,
// index) is all that must be saved: the same seed, task set and position give the same
// continuation after a restart (DESIGN.md section 7: checkpoints hold the sampler position).
//
//   TaskSampler sampler(tasks, seed, saved_position);
//   TaskId next = sampler.next();
//   SamplerPosition pos = sampler.position();   // store it with the coordinator's state
//
// The task ids are sorted first, so the order the caller lists them in does not matter. The
// permutation uses its own generator (splitmix64 + Fisher-Yates with rejection sampling), not
// std::uniform_int_distribution, whose output differs between standard libraries.
//
// Threading: a plain value owned by one actor (or test); no internal locking.
#pragma once

#include <cstdint>
#include <vector>

#include "messages/store_codec.h"  // TaskId

namespace cuda_agent {

struct SamplerPosition {
  std::uint64_t epoch = 0;  ///< how many full passes over the tasks were completed
  std::uint64_t index = 0;  ///< the next draw's place in this epoch's permutation
  friend bool operator==(const SamplerPosition&, const SamplerPosition&) = default;
};

class TaskSampler {
 public:
  /// `tasks` must not be empty; duplicates are removed.
  TaskSampler(std::vector<TaskId> tasks, std::uint64_t seed, SamplerPosition position = {});

  /// The next task; moves to the next epoch after the last task of this one.
  TaskId next();
  SamplerPosition position() const { return position_; }
  std::size_t task_count() const { return tasks_.size(); }

 private:
  void shuffle_for_epoch();

  std::vector<TaskId> tasks_;       // sorted
  std::vector<std::size_t> order_;  // this epoch's permutation of indexes into tasks_
  std::uint64_t seed_;
  SamplerPosition position_;
};

}  // namespace cuda_agent
