#include "rollout/rollout_store.h"

#include "core/clock.h"

namespace cuda_agent {

Status RunStoreRollout::write(StoreWrite w, std::chrono::milliseconds timeout) {
  return store_.write(std::move(w), timeout);
}

Expected<std::vector<EpisodeAttemptRecord>> RunStoreRollout::attempts(const RunId& run) const {
  std::vector<EpisodeAttemptRecord> out;
  RETURN_IF_ERROR(store_.scan_attempts(run, "", [&](const EpisodeAttemptRecord& a) {
    out.push_back(a);
    return true;
  }));
  return out;
}

Expected<std::optional<EpisodeSummary>> RunStoreRollout::episode(const RunId& run,
                                                                 const EpisodeId& episode) const {
  Expected<EpisodeSummary> s = store_.get_episode_summary(run, episode);
  if (s) return std::optional<EpisodeSummary>(std::move(*s));
  if (s.error().code == "store.not_found") return std::optional<EpisodeSummary>();
  return s.error();
}

StoreWrite final_evaluation_write(const EvaluationOutcome& final, const EvaluationIds& ids,
                                  double reward) {
  if (final.bench) {
    StoreWrite w = evaluation_write({.result = *final.bench, .passed = final.correct}, ids);
    w.evaluations.front().reward = reward;
    return w;
  }
  StoreWrite w;
  w.evaluations.push_back({.evaluation_id = ids.evaluation_id,
                           .run_id = ids.run_id,
                           .task_id = ids.task_id,
                           .episode_id = ids.episode_id,
                           .reward = reward,
                           .verified = final.correct,
                           .speedup_vs_eager = final.speedup_vs_eager,
                           .speedup_vs_compile = final.speedup_vs_compile,
                           .created_unix_ms = now_unix_ms()});
  return w;
}

}  // namespace cuda_agent
