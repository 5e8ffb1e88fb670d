// Staleness admission control (DESIGN.md section 6; AReaL's staleness manager, RL_INFRA_NOTES
// item 1). Before the coordinator hands out a new episode it asks for capacity:
//
//   capacity = min(max_concurrent - running,
//                  (S + version + 1) * batch - (accepted + running))
//
// where `version` is the policy version now published, `running` the episodes in flight,
// `accepted` those acknowledged and still counted (trained, or waiting for a batch), and S the
// staleness bound in versions. The `+ 1` admits the first batch at S = 0, version 0. S = 0 is
// synchronous PPO: every version admits exactly one batch, and nothing more until the learner
// publishes the next version.
//
// An episode moves the counters as it moves through the ledger (coordinator/episode_ledger.h):
//   admit()       running + 1            (dispatched, or re-dispatched after its worker was lost)
//   on_lost()     running - 1            (its worker was lost; the episode waits for a rerun)
//   on_accepted() running - 1, accepted + 1   (the store acknowledged its trajectory)
//   on_dropped()  accepted - 1, rejected + 1  (stale or orphaned: never trained, so the batch it
//                                              would have filled is admitted again)
//   on_rejected() running - 1, rejected + 1   (finished but not acknowledged for training)
// so accepted + running <= (S + version + 1) * batch holds after every admission.
//
// Threading: a plain value owned by one actor (or test); no internal locking.
#pragma once

#include <cstdint>

#include "core/ids.h"

namespace cuda_agent {

struct StalenessOptions {
  /// Episodes per learner step (LearnerOptions::batch_episodes). Default: 64.
  std::uint64_t batch_episodes = 64;
  /// S: versions an episode may lag behind the policy it is trained into. 0 is synchronous PPO.
  /// Default: 1.
  std::uint64_t max_staleness = 1;
  /// Episodes in flight at once across all rollout workers; 0 means no limit but the bound.
  /// Default: 0.
  std::uint64_t max_concurrent = 0;
};

/// AReaL's counters; saved with the coordinator's state.
struct StalenessCounters {
  std::uint64_t accepted = 0;
  std::uint64_t running = 0;
  std::uint64_t rejected = 0;
};

class StalenessController {
 public:
  explicit StalenessController(StalenessOptions options, StalenessCounters counters = {})
      : options_(options), counters_(counters) {}

  /// Episodes that may be admitted now at `version` (0 when none).
  std::uint64_t capacity(PolicyVersion version) const;
  /// The bound on accepted + running at `version`: (S + version + 1) * batch.
  std::uint64_t bound(PolicyVersion version) const;
  /// Takes one unit of capacity; false (and nothing changes) when there is none.
  bool admit(PolicyVersion version);

  void on_lost();
  void on_accepted();
  void on_rejected();
  void on_dropped();

  const StalenessCounters& counters() const { return counters_; }
  const StalenessOptions& options() const { return options_; }

 private:
  StalenessOptions options_;
  StalenessCounters counters_;
};

}  // namespace cuda_agent
