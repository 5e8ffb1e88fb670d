// What a rollout worker needs of the run store (storage/run_store.h): durable writes of episodes
// with their attempt markers, and the reads that recovery and resumption make. One interface, the
// real implementation over a RunStore here, and fault-injecting fakes in the tests.
//
//   RunStoreRollout store(*run_store);
//   RETURN_IF_ERROR(store.write(std::move(w), std::chrono::seconds(10)));  // durable on OK
//
// Threading: every method may be called from any thread concurrently (as RunStore).
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "core/error.h"
#include "gpu_bench/bench_store.h"
#include "messages/store_codec.h"
#include "rollout/episode.h"
#include "storage/run_store.h"

namespace cuda_agent {

class RolloutStore {
 public:
  virtual ~RolloutStore() = default;
  /// Writes `w` atomically and returns OK only once it is durable (RunStore::write). Retrying a
  /// write whose acknowledgement timed out is safe: an identical episode is acknowledged again.
  virtual Status write(StoreWrite w, std::chrono::milliseconds timeout) = 0;
  /// Every attempt of `run`, by episode id then attempt number.
  virtual Expected<std::vector<EpisodeAttemptRecord>> attempts(const RunId& run) const = 0;
  /// The stored summary of an acknowledged episode; nullopt when it is not in the store.
  virtual Expected<std::optional<EpisodeSummary>> episode(const RunId& run,
                                                          const EpisodeId& episode) const = 0;
};

/// The real one: a RunStore opened kWrite by this process.
class RunStoreRollout final : public RolloutStore {
 public:
  explicit RunStoreRollout(RunStore& store) : store_(store) {}
  Status write(StoreWrite w, std::chrono::milliseconds timeout) override;
  Expected<std::vector<EpisodeAttemptRecord>> attempts(const RunId& run) const override;
  Expected<std::optional<EpisodeSummary>> episode(const RunId& run,
                                                  const EpisodeId& episode) const override;

 private:
  RunStore& store_;
};

/// The records of an episode's final evaluation (`final`, as run_episode reported it), with the
/// episode's reward: when a bench ran it, the bench's own record (artifact hash, encoded audit
/// record, and the baselines it measured; gpu_bench/bench_store.h evaluation_write), as `cuda-agent
/// bench --store` keeps one; when none ran (the episode never built, or a compile-only reward),
/// the reward alone, with nothing to audit. One write path for `eval` (its own run store) and for
/// training episodes (their submission to the coordinator, which stores it with the episode).
StoreWrite final_evaluation_write(const EvaluationOutcome& final, const EvaluationIds& ids,
                                  double reward);

}  // namespace cuda_agent
