#include "gpu_bench/bench_store.h"

#include "core/clock.h"

namespace cuda_agent {

BaselineKey baseline_key(const AuditRecord& a) {
  BaselineKey k{a.task_hash, a.gpu_name, a.torch_version, {}};
  for (const std::string& f : a.precision_flags)
    k.precision += (k.precision.empty() ? "" : ";") + f;
  return k;
}

Expected<std::optional<CachedBaseline>> find_baseline(const RunStore& store,
                                                      const BaselineKey& key) {
  auto b =
      store.get_baseline(TaskId{key.task_hash}, key.gpu_name, key.torch_version, key.precision);
  if (!b) {
    if (b.error().category == ErrorCategory::kNotFound) return std::optional<CachedBaseline>{};
    return b.error();
  }
  return std::optional<CachedBaseline>{
      CachedBaseline{b->eager_ms * 1000.0, b->compile_ms * 1000.0}};
}

StoreWrite evaluation_write(const BenchEvaluation& e, const EvaluationIds& ids) {
  const BenchResult& r = e.result;
  StoreWrite w;
  EvaluationRecord ev;
  ev.evaluation_id = ids.evaluation_id;
  ev.run_id = ids.run_id;
  ev.task_id = ids.task_id;
  ev.episode_id = ids.episode_id;
  ev.artifact_hash = r.audit.artifact_hash;
  ev.reward = r.reward.tier;
  ev.verified = e.passed;
  ev.speedup_vs_eager = r.speedup_vs_eager;
  ev.speedup_vs_compile = r.speedup_vs_compile;
  ev.audit = encode_audit_record(r.audit);
  ev.created_unix_ms = now_unix_ms();
  w.evaluations.push_back(std::move(ev));
  if (e.passed && !r.eager_trial_us.empty() && !r.compile_trial_us.empty()) {
    const BaselineKey k = baseline_key(r.audit);
    BaselineRecord b;
    b.task_id = TaskId{k.task_hash};
    b.device = k.gpu_name;
    b.torch_version = k.torch_version;
    b.precision = k.precision;
    b.eager_ms = median_of(r.eager_trial_us) / 1000.0;
    b.compile_ms = median_of(r.compile_trial_us) / 1000.0;
    b.recorded_unix_ms = now_unix_ms();
    w.baselines.push_back(std::move(b));
  }
  return w;
}

}  // namespace cuda_agent
