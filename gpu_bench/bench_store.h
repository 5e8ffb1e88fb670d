// What the bench keeps in the run store (storage/run_store.h): every evaluation with its encoded
// audit record, and the baseline cache, keyed per (task hash, GPU model, torch version, precision
// flags) so a later evaluation of the same task on the same kind of node can skip re-measuring
// eager and torch.compile (final evaluations re-measure; DESIGN.md section 5).
//
//   auto cached = find_baseline(*store, key);            // nullopt: measure them
//   ... evaluate with job.baseline = cached ...
//   RETURN_IF_ERROR(store->write(evaluation_write(e, ids), 30s));
#pragma once

#include <optional>
#include <string>

#include "core/error.h"
#include "gpu_bench/bench_types.h"
#include "storage/run_store.h"

namespace cuda_agent {

/// The baseline cache key. `task_hash` is the task's model.py content hash (AuditRecord).
struct BaselineKey {
  std::string task_hash;
  std::string gpu_name;
  std::string torch_version;
  std::string precision;  ///< the precision flags, joined by ';'
};

BaselineKey baseline_key(const AuditRecord& audit);

/// The cached medians for `key`, or nullopt when none is stored.
Expected<std::optional<CachedBaseline>> find_baseline(const RunStore& store,
                                                      const BaselineKey& key);

/// Ids of one stored evaluation.
struct EvaluationIds {
  EvaluationId evaluation_id;
  RunId run_id;
  TaskId task_id;
  EpisodeId episode_id;  ///< empty for a stand-alone bench
};

/// The evaluation record (reward tier, speedups, encoded audit record) and, when this evaluation
/// measured both eager and torch.compile, the baseline record for the cache.
StoreWrite evaluation_write(const BenchEvaluation& e, const EvaluationIds& ids);

}  // namespace cuda_agent
