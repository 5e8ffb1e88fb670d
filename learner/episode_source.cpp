#include "learner/episode_source.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "core/escape.h"
#include "messages/trajectory_codec.h"

namespace cuda_agent {
namespace {

std::string episode_name(const RunId& run, const EpisodeId& episode) {
  std::string out = "run '";
  append_escaped(out, run.value());
  out += "' episode '";
  append_escaped(out, episode.value());
  out += "'";
  return out;
}

// A fault of this one stored value (the store names its column family and key), not of the store.
bool is_bad_value(const Error& e) {
  return e.code == "store.corrupt_value" || e.code == "store.unsupported_version" ||
         e.code == "store.newer_version";
}

}  // namespace

Expected<LoadedSequences> load_sequences(const RunStore& store,
                                         const std::vector<EpisodeSummary>& picked,
                                         const SequenceLimits& limits) {
  LoadedSequences out;
  out.sequences.reserve(picked.size());
  for (const EpisodeSummary& s : picked) {
    const std::string name = episode_name(s.run_id, s.episode_id);
    Expected<EpisodeRecord> record = store.get_episode(s.run_id, s.episode_id);
    if (!record) {
      Error e = record.error().with_context("loading " + name);
      if (!is_bad_value(record.error())) return e;
      out.refused.push_back(std::move(e));
      continue;
    }
    Expected<Episode> episode = decode_episode(record->trajectory_bytes);
    if (!episode) {
      out.refused.push_back(episode.error().with_context("decoding the trajectory of " + name));
      continue;
    }
    if (episode->run_id != s.run_id || episode->episode_id != s.episode_id) {
      out.refused.push_back(make_error(
          ErrorCategory::kInvalidInput, "learner.episode_mismatch",
          name + ": its trajectory names " + episode_name(episode->run_id, episode->episode_id)));
      continue;
    }
    Expected<TrainSequence> seq = to_train_sequence(*episode, limits);
    if (!seq) {
      out.refused.push_back(seq.error());
      continue;
    }
    out.sequences.push_back(std::move(seq).value());
  }
  return out;
}

std::vector<bool> rft_selection(const std::vector<EpisodeSummary>& batch, bool best_of_task) {
  std::vector<bool> keep;
  keep.reserve(batch.size());
  std::map<std::string, double> best;  // task -> highest reward of its kept episodes
  for (const EpisodeSummary& s : batch) {
    keep.push_back(s.final_reward > 0 && s.invalid_tool_calls == 0 && s.wasted_loops == 0);
    if (!keep.back()) continue;
    auto [it, fresh] = best.emplace(s.task_id.value(), s.final_reward);
    if (!fresh) it->second = std::max(it->second, s.final_reward);
  }
  if (best_of_task)
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (keep[i]) keep[i] = batch[i].final_reward >= best.at(batch[i].task_id.value());
  return keep;
}

}  // namespace cuda_agent
