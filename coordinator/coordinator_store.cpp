#include "coordinator/coordinator_store.h"

namespace cuda_agent {
namespace {

class RunStoreAdapter final : public CoordinatorStore {
 public:
  RunStoreAdapter(RunStore& store, RunStoreAdapterOptions options)
      : store_(store), options_(options) {}

  void submit(StoreWrite write, WriteCallback done) override {
    store_.submit(std::move(write), StoreClock::now() + options_.write_deadline_ms,
                  std::move(done));
  }

  Expected<std::optional<RunRecord>> get_run(const RunId& run) const override {
    Expected<RunRecord> r = store_.get_run(run);
    if (!r) {
      if (r.error().category == ErrorCategory::kNotFound) return std::optional<RunRecord>();
      return r.error();
    }
    return std::optional<RunRecord>(std::move(*r));
  }

  Expected<std::optional<CheckpointRecord>> latest_checkpoint(const RunId& run) const override {
    ASSIGN_OR_RETURN(std::vector<CheckpointRecord> all, store_.list_checkpoints(run));
    if (all.empty()) return std::optional<CheckpointRecord>();
    return std::optional<CheckpointRecord>(std::move(all.back()));
  }

  Status scan_run(const RunId& run, const SummaryVisitor& visit) const override {
    return store_.scan_run(run, visit);
  }

 private:
  RunStore& store_;
  RunStoreAdapterOptions options_;
};

}  // namespace

std::unique_ptr<CoordinatorStore> make_run_store_adapter(RunStore& store,
                                                         RunStoreAdapterOptions options) {
  return std::make_unique<RunStoreAdapter>(store, options);
}

}  // namespace cuda_agent
