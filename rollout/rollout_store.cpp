#include "rollout/rollout_store.h"

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

}  // namespace cuda_agent
