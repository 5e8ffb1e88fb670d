// RunStore::export_jsonl: one JSON object per episode per line (docs/formats/store.md). The
// summary fields come from the index, the trajectory from the episodes column family, base64
// encoded under "trajectory_capnp_b64".
#include <cstdio>

#include "core/escape.h"
#include "storage/run_store_impl.h"

namespace cuda_agent {
namespace {

using store_keys::Cf;
using store_keys::Index;

constexpr std::size_t kMaxReportedErrors = 10;

void append_base64(std::string& out, std::string_view in) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out.reserve(out.size() + (in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const std::uint32_t v = static_cast<std::uint8_t>(in[i]) << 16 |
                            static_cast<std::uint8_t>(in[i + 1]) << 8 |
                            static_cast<std::uint8_t>(in[i + 2]);
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back(alphabet[v & 63]);
  }
  if (i < in.size()) {
    std::uint32_t v = static_cast<std::uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<std::uint8_t>(in[i + 1]) << 8;
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? alphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
}

void field(std::string& out, const char* name, std::string_view text) {
  out += ",\"";
  out += name;
  out += "\":\"";
  append_escaped(out, text);
  out += '"';
}

void field(std::string& out, const char* name, std::uint64_t v) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(v);
}

void field(std::string& out, const char* name, std::int64_t v) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(v);
}

void field(std::string& out, const char* name, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += ",\"";
  out += name;
  out += "\":";
  out += buf;
}

}  // namespace

/// The export line of one episode (exposed to the CLI through trajectories show --json).
std::string episode_json_line(const EpisodeRecord& e) {
  std::string out = "{\"episode_id\":\"";
  append_escaped(out, e.episode_id.value());
  out += '"';
  field(out, "run_id", e.run_id.value());
  field(out, "task_id", e.task_id.value());
  field(out, "stage", to_string(e.stage));
  field(out, "stage_number", static_cast<std::uint64_t>(e.stage));
  field(out, "policy_version", e.policy_version.value());
  field(out, "status", to_string(e.status));
  field(out, "final_reward", e.final_reward);
  field(out, "turns", static_cast<std::uint64_t>(e.turns));
  field(out, "invalid_tool_calls", static_cast<std::uint64_t>(e.invalid_tool_calls));
  field(out, "wasted_loops", static_cast<std::uint64_t>(e.wasted_loops));
  field(out, "total_tokens", e.total_tokens);
  field(out, "created_unix_ms", e.created_unix_ms);
  field(out, "trajectory_size", static_cast<std::uint64_t>(e.trajectory_bytes.size()));
  out += ",\"trajectory_capnp_b64\":\"";
  append_base64(out, e.trajectory_bytes);
  out += "\"}\n";
  return out;
}

Expected<ExportReport> RunStore::export_jsonl(const ExportOptions& options, const LineSink& sink,
                                              const std::function<void(bool ok)>& progress) const {
  ExportReport report;
  const std::string prefix =
      options.run ? store_keys::index_prefix(Index::kEpisodeByRun, options.run->value())
                  : std::string(1, static_cast<char>(Index::kEpisodeById));
  Status sink_status;
  Status scan = scan_summaries(*impl_, prefix, "", [&](const EpisodeSummary& s) {
    Expected<EpisodeRecord> e = get_episode(s.run_id, s.episode_id);
    if (!e) {
      if (!options.skip_corrupt) {
        sink_status = e.error();
        return false;
      }
      ++report.corrupt;
      if (report.errors.size() < kMaxReportedErrors) report.errors.push_back(e.error());
      if (progress) progress(false);
      return true;
    }
    sink_status = sink(episode_json_line(*e));
    if (!sink_status) return false;
    ++report.exported;
    if (progress) progress(true);
    return true;
  });
  RETURN_IF_ERROR(scan);
  RETURN_IF_ERROR(sink_status);
  return report;
}

}  // namespace cuda_agent
