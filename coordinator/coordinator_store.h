// The coordinator's narrow view of the run store (storage/run_store.h): the few calls it makes, so
// tests can swap in a fake (coordinator/fake_coordinator_store.h, test-only) whose writes complete
// when the test says so. The coordinator is the store's single writer (DESIGN.md section 2).
//
//   std::unique_ptr<CoordinatorStore> store = make_run_store_adapter(*run_store, {});
//   store->submit(std::move(write), [](const Status& s) { /* durable, or why not */ });
//
// Threading: every method may be called from any thread. `done` runs on a thread of the store
// (RunStore's writer thread; the test's thread for the fake) once the write is synced or refused:
// it must return quickly and must not call the store; an actor turns it into a message to itself.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "core/error.h"
#include "storage/run_store.h"

namespace cuda_agent {

class CoordinatorStore {
 public:
  virtual ~CoordinatorStore() = default;

  /// Queues one atomic write; `done` gets OK once it is durable (synced), else the error.
  virtual void submit(StoreWrite write, WriteCallback done) = 0;
  /// The run's record; nullopt when the run was never written.
  virtual Expected<std::optional<RunRecord>> get_run(const RunId& run) const = 0;
  /// The run's latest checkpoint; nullopt when it has none.
  virtual Expected<std::optional<CheckpointRecord>> latest_checkpoint(const RunId& run) const = 0;
  /// The run's stored episodes in creation order.
  virtual Status scan_run(const RunId& run, const SummaryVisitor& visit) const = 0;
};

struct RunStoreAdapterOptions {
  /// How long a write may wait in the store's queue before it fails with store.deadline.
  /// Default: 60 s.
  std::chrono::milliseconds write_deadline_ms{60'000};
};

/// The real store behind the interface. `store` (opened kWrite) must outlive the adapter.
std::unique_ptr<CoordinatorStore> make_run_store_adapter(RunStore& store,
                                                         RunStoreAdapterOptions options = {});

}  // namespace cuda_agent
