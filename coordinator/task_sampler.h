// The coordinator's task sampler: which task the next new episode works on. Each epoch is one
// permutation of the run's task ids, drawn from (seed, epoch) alone, so the position (epoch,
// index) is all that must be saved: the same seed, task set and position give the same
// continuation after a restart (DESIGN.md section 7: checkpoints hold the sampler position).
//
//   TaskSampler sampler(tasks, seed, saved_position);
//   TaskId next = sampler.next();
//   SamplerPosition pos = sampler.position();   // store it with the coordinator's state
//
// With a group size G > 1 each task of the permutation is drawn G times in a row (the
// learner's group-relative advantages compare those episodes with one another); an epoch is then
// G x tasks draws and the position's index counts draws.
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
  std::uint64_t index = 0;  ///< the next draw's place in this epoch (of group x tasks draws)
  friend bool operator==(const SamplerPosition&, const SamplerPosition&) = default;
};

class TaskSampler {
 public:
  /// `tasks` must not be empty; duplicates are removed. `group` (>= 1; 0 counts as 1): draws of
  /// each task in a row.
  TaskSampler(std::vector<TaskId> tasks, std::uint64_t seed, SamplerPosition position = {},
              std::uint64_t group = 1);

  /// The next task; moves to the next epoch after the last task of this one.
  TaskId next();
  SamplerPosition position() const { return position_; }
  std::size_t task_count() const { return tasks_.size(); }
  std::uint64_t group() const { return group_; }

 private:
  void shuffle_for_epoch();

  std::vector<TaskId> tasks_;       // sorted
  std::vector<std::size_t> order_;  // this epoch's permutation of indexes into tasks_
  std::uint64_t seed_;
  std::uint64_t group_;
  SamplerPosition position_;
};

}  // namespace cuda_agent
