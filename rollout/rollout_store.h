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
#include "messages/store_codec.h"
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

}  // namespace cuda_agent
