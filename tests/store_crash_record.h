// The records the crash test's child writes (tests/store_crash_writer.cpp) and the parent checks
// (tests/store_crash_test.cpp): every field and every trajectory byte is a function of the run and
// the episode number, and the trajectory ends with a checksum of the rest, so the parent can tell
// an intact record from a torn or damaged one without having seen it written.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "messages/store_codec.h"

namespace cuda_agent::crash_record {

inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

inline std::uint64_t fnv1a(const char* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
  return h;
}

/// Trajectory sizes from 512 B to 32 KiB, so some values are inline and some in blob files.
inline std::size_t size_of(long id) { return 512 + mix(static_cast<std::uint64_t>(id)) % 32'257; }

inline EpisodeRecord make(const std::string& run, long id) {
  EpisodeRecord e;
  const std::uint64_t h = mix(static_cast<std::uint64_t>(id) + 17);
  e.run_id = RunId{run};
  e.episode_id = EpisodeId{std::to_string(id)};
  e.task_id = TaskId{"task" + std::to_string(h % 13)};
  e.stage = static_cast<EpisodeStage>(h % 4);
  e.policy_version = PolicyVersion{static_cast<std::uint64_t>(id / 7)};
  e.status = static_cast<EpisodeStatus>(h % 4);
  e.final_reward = static_cast<double>(static_cast<int>(h % 5) - 1);
  e.turns = static_cast<std::uint32_t>(h % 200);
  e.invalid_tool_calls = static_cast<std::uint32_t>(h % 3);
  e.wasted_loops = static_cast<std::uint32_t>(h % 2);
  e.total_tokens = h % 100'000;
  e.created_unix_ms = 1'800'000'000'000 + id;
  std::string& t = e.trajectory_bytes;
  t.resize(size_of(id) - 8);
  std::uint64_t x = h | 1;
  for (char& c : t) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  const std::uint64_t sum = fnv1a(t.data(), t.size());
  t.append(reinterpret_cast<const char*>(&sum), 8);
  return e;
}

/// Empty when the summary fields are those of `make(run, id)`; otherwise what differs.
inline std::string check_summary(const EpisodeSummary& got, const std::string& run, long id) {
  const EpisodeRecord want = make(run, id);
  if (got.run_id != want.run_id || got.episode_id != want.episode_id ||
      got.task_id != want.task_id || got.stage != want.stage ||
      got.policy_version != want.policy_version || got.status != want.status ||
      got.final_reward != want.final_reward || got.turns != want.turns ||
      got.invalid_tool_calls != want.invalid_tool_calls || got.wasted_loops != want.wasted_loops ||
      got.total_tokens != want.total_tokens || got.created_unix_ms != want.created_unix_ms ||
      got.trajectory_size != want.trajectory_bytes.size()) {
    return "summary fields differ";
  }
  return "";
}

/// Empty when `got` is exactly the record `make(run, id)`; otherwise what differs.
inline std::string check(const EpisodeRecord& got, const std::string& run, long id) {
  const std::string& t = got.trajectory_bytes;
  if (t.size() < 8) return "trajectory of " + std::to_string(t.size()) + " bytes";
  std::uint64_t sum;
  std::memcpy(&sum, t.data() + t.size() - 8, 8);
  if (sum != fnv1a(t.data(), t.size() - 8)) return "trajectory checksum mismatch";
  if (t != make(run, id).trajectory_bytes) return "trajectory differs";
  if (got.trajectory_size != t.size()) return "trajectory size field differs";
  return check_summary(got, run, id);
}

}  // namespace cuda_agent::crash_record
