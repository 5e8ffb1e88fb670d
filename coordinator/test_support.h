// Test-only helpers of the coordinator's tests (never linked into the product): the seed of a
// random test, and FakeCoordinatorStore, an in-memory store whose writes complete only when the
// test says so (complete_next), so a test controls when the store's callback runs.
//
// Threading: single-threaded tests only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "coordinator/coordinator_store.h"

namespace cuda_agent {
/// gtest prints strong ids by their value.
template <class Tag, class Rep>
void PrintTo(const StrongId<Tag, Rep>& id, std::ostream* os) {
  *os << id.value();
}
}  // namespace cuda_agent

namespace cuda_agent::coord_test {

/// COORDINATOR_TEST_SEED when set, else a fresh seed; printed either way.
inline std::uint64_t test_seed(const char* test) {
  std::uint64_t seed = 0;
  if (const char* env = std::getenv("COORDINATOR_TEST_SEED")) {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = std::random_device{}();
  }
  std::printf("%s: seed %llu (rerun with COORDINATOR_TEST_SEED=%llu)\n", test,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

class FakeCoordinatorStore final : public CoordinatorStore {
 public:
  struct Pending {
    StoreWrite write;
    WriteCallback done;
  };

  void submit(StoreWrite write, WriteCallback done) override {
    ++submitted;
    pending.push_back({std::move(write), std::move(done)});
  }

  /// Applies the oldest pending write when `status` is OK, then calls its callback.
  void complete_next(Status status = Status::ok()) {
    Pending p = std::move(pending.front());
    pending.pop_front();
    if (status) apply(p.write);
    p.done(status);
  }
  void complete_all() {
    while (!pending.empty()) complete_next();
  }

  /// Records as if written (also used to seed a store before a restore).
  void apply(const StoreWrite& w) {
    for (const EpisodeRecord& e : w.episodes) {
      bool seen = false;
      for (const EpisodeRecord& x : episodes) seen = seen || x.episode_id == e.episode_id;
      if (!seen) episodes.push_back(e);
    }
    for (const RunRecord& r : w.runs) runs[r.run_id] = r;
    for (const CheckpointRecord& c : w.checkpoints) checkpoints[c.step] = c;
    for (const MetricRecord& m : w.metrics) metrics.push_back(m);
    evaluations.insert(evaluations.end(), w.evaluations.begin(), w.evaluations.end());
    baselines.insert(baselines.end(), w.baselines.begin(), w.baselines.end());
  }

  Expected<std::optional<RunRecord>> get_run(const RunId& run) const override {
    auto it = runs.find(run);
    if (it == runs.end()) return std::optional<RunRecord>();
    return std::optional<RunRecord>(it->second);
  }
  Expected<std::optional<CheckpointRecord>> latest_checkpoint(const RunId&) const override {
    if (checkpoints.empty()) return std::optional<CheckpointRecord>();
    return std::optional<CheckpointRecord>(checkpoints.rbegin()->second);
  }
  Status scan_run(const RunId& run, const SummaryVisitor& visit) const override {
    for (const EpisodeRecord& e : episodes) {
      if (e.run_id == run && !visit(e)) break;
    }
    return Status::ok();
  }

  std::deque<Pending> pending;
  std::vector<EpisodeRecord> episodes;
  std::map<RunId, RunRecord> runs;
  std::map<std::uint64_t, CheckpointRecord> checkpoints;
  std::vector<MetricRecord> metrics;
  std::vector<EvaluationRecord> evaluations;
  std::vector<BaselineRecord> baselines;
  std::uint64_t submitted = 0;
};

}  // namespace cuda_agent::coord_test
