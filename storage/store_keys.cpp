#include "storage/store_keys.h"

#include <cstring>

namespace cuda_agent::store_keys {
namespace {

void add_part(std::string& out, std::string_view id) {
  out.append(id);
  out.push_back('\0');
}

std::string start(Index index) { return std::string(1, static_cast<char>(index)); }

}  // namespace

std::string_view cf_name(Cf cf) {
  switch (cf) {
    case Cf::kDefault: return "default";
    case Cf::kTasks: return "tasks";
    case Cf::kBaselines: return "baselines";
    case Cf::kArtifacts: return "artifacts";
    case Cf::kEvaluations: return "evaluations";
    case Cf::kEpisodes: return "episodes";
    case Cf::kIndexes: return "indexes";
    case Cf::kRuns: return "runs";
    case Cf::kCheckpoints: return "checkpoints";
    case Cf::kMetrics: return "metrics";
    case Cf::kAttempts: return "attempts";
    case Cf::kCount: break;
  }
  return "unknown";
}

bool added_later(Cf cf) { return cf == Cf::kAttempts; }

Status check_id(std::string_view id, std::string_view what) {
  if (id.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "store.bad_id",
                      std::string(what) + " is empty");
  }
  if (id.size() > 1024) {
    return make_error(
        ErrorCategory::kInvalidInput, "store.bad_id",
        std::string(what) + " is " + std::to_string(id.size()) + " bytes long; the limit is 1024");
  }
  if (id.find('\0') != std::string_view::npos) {
    return make_error(ErrorCategory::kInvalidInput, "store.bad_id",
                      std::string(what) + " '" + printable(id) + "' contains a 0x00 byte");
  }
  return Status::ok();
}

void append_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

void append_be64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

std::uint64_t read_be64(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8 && i < bytes.size(); ++i) {
    v = v << 8 | static_cast<std::uint8_t>(bytes[i]);
  }
  return v;
}

std::uint64_t ordered_double(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  // Negative numbers: flip every bit (larger magnitude sorts first); positive: flip the sign bit.
  return (bits >> 63) ? ~bits : bits ^ (1ull << 63);
}

std::uint64_t descending_double(double v) { return ~ordered_double(v); }

double from_descending_double(std::uint64_t key) {
  const std::uint64_t ordered = ~key;
  const std::uint64_t bits = (ordered >> 63) ? ordered ^ (1ull << 63) : ~ordered;
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string episode_key(const RunId& run, const EpisodeId& episode) {
  std::string k;
  add_part(k, run.value());
  k.append(episode.value());
  return k;
}

std::string evaluation_key(const EvaluationId& evaluation) { return evaluation.value(); }
std::string task_key(const TaskId& task) { return task.value(); }

std::string baseline_key(const BaselineRecord& b) {
  std::string k;
  add_part(k, b.task_id.value());
  add_part(k, b.device);
  add_part(k, b.torch_version);
  k.append(b.precision);
  return k;
}

std::string artifact_key(std::string_view hash) { return std::string(hash); }
std::string run_key(const RunId& run) { return run.value(); }

std::string checkpoint_key(const RunId& run, std::uint64_t step) {
  std::string k;
  add_part(k, run.value());
  append_be64(k, step);
  return k;
}

std::string attempt_key(const RunId& run, const EpisodeId& episode, std::uint32_t attempt) {
  std::string k = attempt_prefix(run, episode.value());
  append_be32(k, attempt);
  return k;
}

std::string attempt_prefix(const RunId& run, std::string_view episode) {
  std::string k;
  add_part(k, run.value());
  if (!episode.empty()) add_part(k, episode);
  return k;
}

std::string metric_key(const RunId& run, std::string_view name, std::uint64_t step) {
  std::string k;
  add_part(k, run.value());
  add_part(k, name);
  append_be64(k, step);
  return k;
}

std::string episode_by_id_key(const EpisodeId& episode, const RunId& run) {
  std::string k = episode_by_id_prefix(episode);
  k.append(run.value());
  return k;
}

std::string episode_by_id_prefix(const EpisodeId& episode) {
  return index_prefix(Index::kEpisodeById, episode.value());
}

std::string episode_by_run_key(const EpisodeSummary& s) {
  std::string k = index_prefix(Index::kEpisodeByRun, s.run_id.value());
  append_be64(k, static_cast<std::uint64_t>(s.created_unix_ms));
  k.append(s.episode_id.value());
  return k;
}

std::string episode_by_stage_key(const EpisodeSummary& s) {
  std::string k = index_prefix(Index::kEpisodeByStage, s.run_id.value());
  k.push_back(static_cast<char>(s.stage));
  append_be64(k, s.policy_version.value());
  k.append(s.episode_id.value());
  return k;
}

std::string episode_by_task_key(const EpisodeSummary& s) {
  std::string k = index_prefix(Index::kEpisodeByTask, s.task_id.value(), s.run_id.value());
  k.append(s.episode_id.value());
  return k;
}

std::string episode_by_reward_key(const EpisodeSummary& s) {
  std::string k = index_prefix(Index::kEpisodeByReward, s.run_id.value(), s.task_id.value());
  append_be64(k, descending_double(s.final_reward));
  append_be64(k, s.total_tokens);
  k.append(s.episode_id.value());
  return k;
}

std::string episode_by_policy_key(const EpisodeSummary& s) {
  std::string k = index_prefix(Index::kEpisodeByPolicy, s.run_id.value());
  append_be64(k, s.policy_version.value());
  k.append(s.episode_id.value());
  return k;
}

std::string best_verified_key(const EvaluationRecord& e) {
  std::string k = index_prefix(Index::kBestVerified, e.task_id.value());
  append_be64(k, descending_double(e.reward));
  append_be64(k, descending_double(e.speedup_vs_compile));
  k.append(e.evaluation_id.value());
  return k;
}

std::string evaluation_by_run_key(const EvaluationRecord& e) {
  std::string k = index_prefix(Index::kEvaluationByRun, e.run_id.value());
  k.append(e.evaluation_id.value());
  return k;
}

std::string index_prefix(Index index, std::string_view part) {
  std::string k = start(index);
  add_part(k, part);
  return k;
}

std::string index_prefix(Index index, std::string_view part1, std::string_view part2) {
  std::string k = index_prefix(index, part1);
  add_part(k, part2);
  return k;
}

std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(prefix.back());
    if (last != 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return prefix;  // empty: no upper bound
}

std::string_view part(std::string_view key, int n) {
  std::size_t pos = 1;
  for (int i = 0; i <= n; ++i) {
    const std::size_t end = key.find('\0', pos);
    if (end == std::string_view::npos) return {};
    if (i == n) return key.substr(pos, end - pos);
    pos = end + 1;
  }
  return {};
}

std::string_view evaluation_of_index_key(std::string_view key) {
  if (key.empty()) return {};
  const std::size_t sep = key.find('\0', 1);
  if (sep == std::string_view::npos) return {};
  const std::size_t skip = static_cast<Index>(key[0]) == Index::kBestVerified ? 16 : 0;
  if (sep + 1 + skip >= key.size()) return {};
  return key.substr(sep + 1 + skip);
}

std::string printable(std::string_view key) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace cuda_agent::store_keys
