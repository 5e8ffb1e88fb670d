// Key layout of the run store: column family names and the byte layout of every key
// (docs/formats/store.md has the table). Numbers are big-endian so that keys sort as numbers; ids
// are raw bytes ending with a 0x00 separator where something follows them, which is why ids may
// not contain 0x00. Doubles are mapped to 8 bytes whose unsigned order is the numeric order
// (`ordered_double`), or its reverse (`descending_double`) where the largest must come first.
//
// Threading: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "messages/store_codec.h"

namespace cuda_agent::store_keys {

/// Column families, in the order the store opens them (their index in RunStore's handle table).
enum class Cf : int {
  kDefault = 0,  ///< "default": the store header only
  kTasks,
  kBaselines,
  kArtifacts,
  kEvaluations,
  kEpisodes,
  kIndexes,
  kRuns,
  kCheckpoints,
  kMetrics,
  kAttempts,  ///< "attempts": rollout workers' attempts at episodes (added after format 1)
  kCount
};
/// Families added after the first release: a read-only view of an older store opens without them
/// (and sees none of their records) instead of refusing the store.
bool added_later(Cf cf);
std::string_view cf_name(Cf cf);

/// Key of the store header in the default column family.
constexpr std::string_view kHeaderKey = "store_header";

/// First byte of every key in the "indexes" column family: which index it belongs to.
enum class Index : std::uint8_t {
  kEpisodeById = 0x01,      ///< episode | 00 | run                         -> EpisodeSummary
  kEpisodeByRun = 0x02,     ///< run | 00 | created BE8 | episode             -> EpisodeSummary
  kEpisodeByStage = 0x03,   ///< run | 00 | stage | policy BE8 | episode      -> EpisodeSummary
  kEpisodeByTask = 0x04,    ///< task | 00 | run | 00 | episode               -> EpisodeSummary
  kEpisodeByReward = 0x05,  ///< run | 00 | task | 00 | reward desc8 | tokens BE8 | episode
  kEpisodeByPolicy = 0x06,  ///< run | 00 | policy BE8 | episode              -> EpisodeSummary
  kBestVerified = 0x10,     ///< task | 00 | reward desc8 | speedup desc8 | evaluation -> empty
  kEvaluationByRun = 0x11,  ///< run | 00 | evaluation                        -> empty
};

/// Ids must be non-empty, at most 1024 bytes and free of 0x00. `what` names the field in errors.
Status check_id(std::string_view id, std::string_view what);

void append_be32(std::string& out, std::uint32_t v);
void append_be64(std::string& out, std::uint64_t v);
std::uint64_t read_be64(std::string_view bytes);
/// 8 bytes whose unsigned big-endian order is the order of `v` (-0.0 sorts just below +0.0).
std::uint64_t ordered_double(double v);
/// The reverse: larger values give smaller keys.
std::uint64_t descending_double(double v);
/// Inverse of descending_double.
double from_descending_double(std::uint64_t key);

// Primary keys.
std::string episode_key(const RunId& run, const EpisodeId& episode);
std::string evaluation_key(const EvaluationId& evaluation);
std::string task_key(const TaskId& task);
std::string baseline_key(const BaselineRecord& b);
std::string artifact_key(std::string_view hash);
std::string run_key(const RunId& run);
std::string checkpoint_key(const RunId& run, std::uint64_t step);
std::string metric_key(const RunId& run, std::string_view name, std::uint64_t step);
/// run | 00 | episode | 00 | attempt BE4: a run's attempts sort by episode, then attempt.
std::string attempt_key(const RunId& run, const EpisodeId& episode, std::uint32_t attempt);
/// run | 00, or run | 00 | episode | 00 when `episode` is non-empty.
std::string attempt_prefix(const RunId& run, std::string_view episode);

// Index keys. The prefixes are what scans seek to; "part" is an id followed by 0x00.
std::string episode_by_id_key(const EpisodeId& episode, const RunId& run);
std::string episode_by_id_prefix(const EpisodeId& episode);
std::string episode_by_run_key(const EpisodeSummary& s);
std::string episode_by_stage_key(const EpisodeSummary& s);
std::string episode_by_task_key(const EpisodeSummary& s);
std::string episode_by_reward_key(const EpisodeSummary& s);
std::string episode_by_policy_key(const EpisodeSummary& s);
std::string best_verified_key(const EvaluationRecord& e);
std::string evaluation_by_run_key(const EvaluationRecord& e);
/// `index` byte followed by each part and a 0x00 after each.
std::string index_prefix(Index index, std::string_view part);
std::string index_prefix(Index index, std::string_view part1, std::string_view part2);

/// The smallest key greater than every key that starts with `prefix` (for upper bounds).
std::string prefix_end(std::string prefix);
/// The `n`-th (0-based) 0x00-terminated part after the index byte; empty if there is none.
std::string_view part(std::string_view key, int n);
/// The evaluation id at the end of a kBestVerified or kEvaluationByRun key; empty if malformed.
std::string_view evaluation_of_index_key(std::string_view key);

/// A key for people: printable ASCII as is, other bytes as \xNN.
std::string printable(std::string_view key);

}  // namespace cuda_agent::store_keys
