// The records of the run store (storage/run_store.h) as plain C++ types, and their codecs to and
// from store values (messages/store.capnp). Codecs in messages/ are the only code that touches
// capnp builders; this header is capnp-free and C++17 (see messages/CMakeLists.txt).
//
// Value format: a 12-byte prefix, then one Cap'n Proto message in packed encoding.
//   bytes 0-3   magic "CARS"
//   bytes 4-5   store format version, big-endian (kStoreFormatVersion when written)
//   byte  6     record kind (StoreRecordKind)
//   byte  7     flags, 0
//   bytes 8-11  size of the unpacked message in 8-byte words, big-endian
//
//   std::string v = encode_store_value(episode);
//   EpisodeRecord back;
//   if (Status s = decode_store_value(v, &back); !s) ...   // s.error().code: "store.corrupt_value"
//
// Decoding never trusts its input: a wrong magic, garbage, a truncated value, a record of another
// kind, version 0 or a version newer than this build gives an Error (category invalid_input; codes
// "store.corrupt_value", "store.unsupported_version", "store.newer_version"), never an exception.
// The storage layer adds the column family and key to the message.
//
// Threading: free functions without shared state; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"

namespace cuda_agent {

// Tags are declared, not defined, so another header may declare the same aliases again.
struct TaskIdTag;
struct EpisodeIdTag;
struct EvaluationIdTag;
/// One task of a task set, unique within a store (e.g. "kernelbench/level2/19").
using TaskId = StrongId<TaskIdTag, std::string>;
/// One agent episode, unique within a store.
using EpisodeId = StrongId<EpisodeIdTag, std::string>;
/// One bench outcome, unique within a store.
using EvaluationId = StrongId<EvaluationIdTag, std::string>;

/// The store format version this build writes; it reads every version from 1 up to this one.
constexpr std::uint16_t kStoreFormatVersion = 1;
/// Length of the prefix in front of every value.
constexpr std::size_t kStoreValuePrefixBytes = 12;

/// The kind byte of a value's prefix (wire::store::RecordKind).
enum class StoreRecordKind : std::uint8_t {
  kUnknown = 0,
  kStoreHeader = 1,
  kTask = 2,
  kBaseline = 3,
  kArtifact = 4,
  kEvaluation = 5,
  kEpisode = 6,
  kEpisodeSummary = 7,
  kRun = 8,
  kCheckpoint = 9,
  kMetric = 10,
  kEpisodeAttempt = 11,
};
std::string_view to_string(StoreRecordKind kind);

/// RL stage (DESIGN.md section 6). Stored as a number; numbers this build does not name survive.
enum class EpisodeStage : std::uint8_t {
  kEvaluation = 0,        ///< an evaluation episode, not for training
  kSingleTurnWarmup = 1,  ///< stage 1
  kAgentWarmup = 2,       ///< stage 2: trajectories for RFT and value pretraining
  kAgenticPpo = 3,        ///< stage 3
};
/// "evaluation", "single_turn_warmup", "agent_warmup", "agentic_ppo", or "stage_<n>".
std::string to_string(EpisodeStage stage);

/// How an episode ended.
enum class EpisodeStatus : std::uint8_t {
  kCompleted = 0,
  kAborted = 1,
  kTruncated = 2,
  kFailed = 3
};
/// "completed", "aborted", "truncated", "failed".
std::string_view to_string(EpisodeStatus status);

/// Marks a directory as a run store (default column family, key "store_header").
struct StoreHeader {
  std::string magic;  ///< kStoreMagic
  std::uint16_t format_version = 0;
  std::int64_t created_unix_ms = 0;
  std::string created_by;
};
constexpr std::string_view kStoreMagic = "cuda-agent run store";

/// The fixed-size facts of an episode that the indexes carry and queries filter on.
struct EpisodeSummary {
  EpisodeId episode_id;
  RunId run_id;
  TaskId task_id;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  PolicyVersion policy_version;
  EpisodeStatus status = EpisodeStatus::kCompleted;
  double final_reward = 0;
  std::uint32_t turns = 0;
  std::uint32_t invalid_tool_calls = 0;
  std::uint32_t wasted_loops = 0;
  std::uint64_t total_tokens = 0;
  std::int64_t created_unix_ms = 0;
  /// Size of the trajectory in bytes; set by the encoder from trajectory_bytes.
  std::uint64_t trajectory_size = 0;
};

/// One episode: its summary and the encoded trajectory message, opaque to the store (the
/// trajectory codec in messages/ decodes it).
struct EpisodeRecord : EpisodeSummary {
  std::string trajectory_bytes;
};

struct TaskRecord {
  TaskId task_id;
  std::string suite;
  std::string content_hash;
  std::string body;  ///< the encoded task, opaque to the store
  std::int64_t created_unix_ms = 0;
};

/// Baselines of one task on one device setup; keyed by (task, device, torch_version, precision).
struct BaselineRecord {
  TaskId task_id;
  std::string device;
  std::string torch_version;
  std::string precision;
  double eager_ms = 0;
  double compile_ms = 0;
  std::int64_t recorded_unix_ms = 0;
};

/// A compile output, content-addressed: `hash` (lowercase hex, from the compile farm) is the key.
struct ArtifactRecord {
  std::string hash;
  TaskId task_id;
  std::string kind;
  std::string bytes;
  std::string build_log;
  std::int64_t created_unix_ms = 0;
};

struct EvaluationRecord {
  EvaluationId evaluation_id;
  RunId run_id;
  TaskId task_id;
  EpisodeId episode_id;  ///< empty for a stand-alone bench
  std::string artifact_hash;
  double reward = 0;
  bool verified = false;
  double speedup_vs_eager = 0;
  double speedup_vs_compile = 0;
  std::string audit;  ///< the encoded audit record, opaque to the store
  std::int64_t created_unix_ms = 0;
};

/// One episode the coordinator dispatched and has not seen trained (store.capnp LedgerEpisode).
struct LedgerEpisodeRecord {
  EpisodeId episode_id;
  TaskId task_id;
  std::uint64_t seq = 0;      ///< the coordinator's mint number
  std::uint32_t attempt = 1;  ///< the attempt dispatched last
  WorkerId worker_id;         ///< that attempt's worker; empty while queued for a rerun
  PolicyVersion dispatched_version;
  std::uint8_t phase = 0;  ///< 0 queued for a rerun, 1 in flight, 2 acknowledged
  EpisodeStage stage = EpisodeStage::kEvaluation;
  std::uint64_t ack_seq = 0;  ///< order of acknowledgement (phase 2)
};

/// One learner step as the coordinator sent it (store.capnp RecordedStep).
struct RecordedStep {
  std::uint64_t step = 0;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  PolicyVersion version;            ///< the weights the step started from
  std::vector<EpisodeId> episodes;  ///< in the order the learner trained them
  friend bool operator==(const RecordedStep& a, const RecordedStep& b) {
    return a.step == b.step && a.stage == b.stage && a.version == b.version &&
           a.episodes == b.episodes;
  }
};

/// The coordinator's state (store.capnp CoordinatorState; coordinator/coordinator_state.h).
struct CoordinatorStateRecord {
  std::uint64_t step = 0;
  std::uint32_t stage_index = 0;
  std::uint64_t stage_steps = 0;
  PolicyVersion policy_version;
  std::uint64_t sampler_epoch = 0;
  std::uint64_t sampler_index = 0;
  std::uint64_t next_episode_seq = 0;
  std::uint64_t accepted = 0;
  std::uint64_t running = 0;
  std::uint64_t rejected = 0;
  std::uint64_t trained = 0;
  std::uint64_t stale = 0;
  std::uint64_t orphaned = 0;
  std::uint64_t next_ack_seq = 0;
  std::vector<LedgerEpisodeRecord> episodes;
  std::vector<EpisodeId> last_step_episodes;
  /// The steps after the run's latest recorded checkpoint, oldest first (a restarted learner
  /// trains them again from that checkpoint).
  std::vector<RecordedStep> steps_since_checkpoint;
};

struct RunRecord {
  RunId run_id;
  std::int64_t created_unix_ms = 0;
  std::int64_t updated_unix_ms = 0;
  std::string state;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  PolicyVersion policy_version;
  std::string manifest;  ///< TOML text
  /// The coordinator's state after its latest step; unset before the first.
  std::optional<CoordinatorStateRecord> coordinator_state;
};

struct CheckpointRecord {
  RunId run_id;
  std::uint64_t step = 0;
  PolicyVersion policy_version;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  std::string path;
  std::uint64_t size_bytes = 0;
  std::string checksum;
  std::int64_t created_unix_ms = 0;
  /// The coordinator's state at this checkpoint, written in the same record; unset when none.
  std::optional<CoordinatorStateRecord> coordinator_state;
};

struct MetricRecord {
  RunId run_id;
  std::string name;
  std::uint64_t step = 0;
  double value = 0;
  std::int64_t unix_ms = 0;  ///< the metrics TTL counts from here
};

/// Where one attempt at an episode stands (store.capnp AttemptState).
enum class AttemptState : std::uint8_t {
  kRunning = 0,    ///< started, not acknowledged: in flight, or its worker was lost
  kCommitted = 1,  ///< its episode record was written in the same atomic write
  kAborted = 2,    ///< its worker was lost first; the attempt left nothing
};
/// "running", "committed", "aborted" (or "state_<n>" for a newer value).
std::string to_string(AttemptState state);

/// One rollout worker's attempt at one episode; keyed by (run, episode, attempt). A separate
/// record from the episode, so marking an attempt in flight or aborted never rewrites (and never
/// conflicts with) an acknowledged episode record.
struct EpisodeAttemptRecord {
  RunId run_id;
  EpisodeId episode_id;
  std::uint32_t attempt = 1;  ///< 1 for the first attempt, counting up
  TaskId task_id;
  WorkerId worker_id;
  AttemptState state = AttemptState::kRunning;
  std::int64_t started_unix_ms = 0;
  std::int64_t updated_unix_ms = 0;
  std::string note;  ///< why it was aborted; empty otherwise
};

/// Encoders: prefix + packed message. Encoding an EpisodeRecord sets trajectorySize itself.
std::string encode_store_value(const StoreHeader& v);
std::string encode_store_value(const EpisodeSummary& v);
std::string encode_store_value(const EpisodeRecord& v);
std::string encode_store_value(const TaskRecord& v);
std::string encode_store_value(const BaselineRecord& v);
std::string encode_store_value(const ArtifactRecord& v);
std::string encode_store_value(const EvaluationRecord& v);
std::string encode_store_value(const RunRecord& v);
std::string encode_store_value(const CheckpointRecord& v);
std::string encode_store_value(const MetricRecord& v);
std::string encode_store_value(const EpisodeAttemptRecord& v);

/// Decoders: check the prefix (magic, version, kind, size), then read the message.
Status decode_store_value(std::string_view bytes, StoreHeader* out);
Status decode_store_value(std::string_view bytes, EpisodeSummary* out);
Status decode_store_value(std::string_view bytes, EpisodeRecord* out);
Status decode_store_value(std::string_view bytes, TaskRecord* out);
Status decode_store_value(std::string_view bytes, BaselineRecord* out);
Status decode_store_value(std::string_view bytes, ArtifactRecord* out);
Status decode_store_value(std::string_view bytes, EvaluationRecord* out);
Status decode_store_value(std::string_view bytes, RunRecord* out);
Status decode_store_value(std::string_view bytes, CheckpointRecord* out);
Status decode_store_value(std::string_view bytes, MetricRecord* out);
Status decode_store_value(std::string_view bytes, EpisodeAttemptRecord* out);

/// The kind and version of a value's prefix without decoding it (for diagnostics and tools).
struct StoreValuePrefix {
  std::uint16_t format_version = 0;
  StoreRecordKind kind = StoreRecordKind::kUnknown;
  std::uint32_t unpacked_words = 0;
};
Expected<StoreValuePrefix> read_store_value_prefix(std::string_view bytes);

}  // namespace cuda_agent
