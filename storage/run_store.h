// The run store: RocksDB as the system of record of a run (DESIGN.md sections 1 and 3). Every
// trajectory, evaluation, artifact, task, baseline, checkpoint and metric lands here before
// anything consumes it, so a crash loses nothing acknowledged and RFT, replay and audits are
// queries. Key layout and value formats: docs/formats/store.md; values: messages/store_codec.h.
//
//   ASSIGN_OR_RETURN(auto store, RunStore::open(options.store, StoreMode::kWrite));
//   StoreWrite w;
//   w.episodes.push_back(std::move(episode));
//   RETURN_IF_ERROR(store->write(std::move(w), std::chrono::seconds(10)));  // durable now
//   ASSIGN_OR_RETURN(auto picked, store->select_rft({.run = run, .per_task_top_k = 4}));
//
// Durability: a write is acknowledged (its callback gets OK, `write` returns OK) only after its
// batch is in the write-ahead log and synced (fdatasync). One writer thread gathers concurrent
// writes into one synced WriteBatch (group commit), so appenders share fsyncs: it takes all that
// is queued, then waits for more at most StoreOptions::group_commit_ms, or until the group holds
// as many writes as the previous one. Each StoreWrite is atomic: all of its records are stored or
// none; a crash at any moment leaves every acknowledged write intact and no write half-done.
//
// Idempotency: writing an episode (run, episode id) or an evaluation (evaluation id) again with
// identical content is acknowledged without writing anything (a retried request gets the stored
// answer); different content under the same id fails that write with "store.conflict". Episodes
// are compared by their summary fields (trajectory size included, not its bytes), evaluations by
// their whole value. Tasks, baselines, artifacts, runs, checkpoints and metrics are overwritten
// (last write wins).
//
// Processes: one writer per store (StoreMode::kWrite takes RocksDB's LOCK file; a second writer
// gets "store.locked" naming the directory). Others open kReadOnly (a fixed view) or kSecondary
// (follows the live writer through catch_up()).
//
// Errors: a value that is corrupt, of another format version or written by a newer version gives
// an Error naming the column family and key (codes store.corrupt_value, store.unsupported_version,
// store.newer_version); every other key stays readable.
//
// Damage (files changed on disk): never a crash and never a shorter answer. Every open checks the
// file set (RocksDB's paranoid checks: each table and blob file the MANIFEST names exists with its
// size; table footers and index blocks are read), so a missing, truncated or corrupt-footer file
// fails the open in every mode with store.corruption naming it. Every read checks checksums
// (table blocks, each blob's CRC) and every scan its iterator's status: a read that meets damage
// fails with store.corruption naming the file; other keys stay readable. A writer that met damage
// refuses all further writes (store.corruption). verify_store checks every checksum of every file.
//
// Threading: every method may be called from any thread concurrently, except that the destructor
// must not overlap any other call. Write callbacks run on the store's writer thread once their
// group is synced (or refused); they must return quickly and must not wait on the store (no
// `write` from a callback). Read methods see every write acknowledged before they were called
// (kWrite), the state at opening (kReadOnly) or at the last catch_up (kSecondary).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/store_codec.h"
#include "storage/store_options.h"

namespace cuda_agent {

/// How a process opens a store.
enum class StoreMode {
  /// The one writer (the coordinator). Takes the directory's LOCK. A missing or empty directory
  /// becomes a new store; a non-empty directory that is not a store is refused.
  kWrite,
  /// A fixed view as of opening (RocksDB OpenForReadOnly). Takes no lock.
  kReadOnly,
  /// Follows a live writer: catch_up() brings in its newer writes by reopening the store
  /// read-only when its WAL or MANIFEST changed (not RocksDB's secondary instance, which does
  /// not support blob files and silently hides missing ones). Takes no lock.
  kSecondary,
};

/// One atomic write. Ids (run, episode, task, evaluation, artifact hash, metric name) must be
/// non-empty, at most 1024 bytes and free of 0x00 bytes; rewards must be finite.
struct StoreWrite {
  std::vector<EpisodeRecord> episodes;
  std::vector<EvaluationRecord> evaluations;
  std::vector<TaskRecord> tasks;
  std::vector<BaselineRecord> baselines;
  std::vector<ArtifactRecord> artifacts;
  std::vector<RunRecord> runs;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<MetricRecord> metrics;
  /// Rollout workers' attempts at episodes (last write wins). Written with the episode record in
  /// one StoreWrite, an attempt's `committed` state is atomic with the episode itself.
  std::vector<EpisodeAttemptRecord> attempts;
};

using StoreClock = std::chrono::steady_clock;

/// Counters of the writer since the store was opened (kWrite).
struct WriteStats {
  std::uint64_t synced_batches = 0;       ///< synced WriteBatches (one fdatasync each)
  std::uint64_t acknowledged_writes = 0;  ///< StoreWrites in them (retried duplicates included)
  std::uint64_t bytes = 0;                ///< keys and values written
};
/// Called once per submitted write: OK when durable, else why it was not written.
using WriteCallback = std::function<void(const Status&)>;
/// Called per episode by scans; return false to stop the scan early.
using SummaryVisitor = std::function<bool(const EpisodeSummary&)>;

/// Rejection-sampling fine-tuning selection (DESIGN.md section 6, stage 2): positive-outcome
/// episodes of one run, filtered, at most `per_task_top_k` per task, the best first.
struct RftQuery {
  RunId run;
  /// Only episodes of this stage. Default: any stage.
  std::optional<EpisodeStage> stage;
  /// Keep episodes whose final reward is strictly above this. Default: 0 (positive rewards).
  double min_reward = 0;
  /// Keep only status completed (not truncated, aborted or failed). Default: true.
  bool completed_only = true;
  std::uint32_t max_invalid_tool_calls = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t min_turns = 0;
  std::uint32_t max_turns = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t max_wasted_loops = std::numeric_limits<std::uint32_t>::max();
  /// Per-task cap: the best k of each task by final reward, ties broken by fewer total tokens
  /// (then by episode id). Default: no cap.
  std::uint32_t per_task_top_k = std::numeric_limits<std::uint32_t>::max();
};

/// Episodes for replay: one run, one stage or all, policy versions in [min, max], ordered by
/// policy version (then episode id).
struct ReplayQuery {
  RunId run;
  std::optional<EpisodeStage> stage;
  PolicyVersion min_policy{0};
  PolicyVersion max_policy{std::numeric_limits<std::uint64_t>::max()};
};

/// counts[0]: values below edges[0]; counts[i]: [edges[i-1], edges[i]); last: >= edges.back().
struct RewardHistogram {
  std::vector<double> edges = {-1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3};
  std::vector<std::uint64_t> counts = std::vector<std::uint64_t>(10, 0);
  void add(double reward);
};

/// Size of one column family as RocksDB reports it.
struct ColumnFamilySize {
  std::string name;
  std::uint64_t sst_bytes = 0;       ///< table files (compressed)
  std::uint64_t blob_bytes = 0;      ///< blob files (episodes, artifacts, tasks)
  std::uint64_t memtable_bytes = 0;  ///< not yet flushed (held in the WAL on disk)
  std::uint64_t estimated_keys = 0;
};

struct StoreStats {
  std::uint64_t episodes = 0;
  std::map<std::string, std::uint64_t> by_status;  ///< "completed" -> count, ...
  std::map<std::string, std::uint64_t> by_stage;   ///< "agent_warmup" -> count, ...
  RewardHistogram rewards;
  std::optional<double> best_reward;
  std::uint64_t trajectory_bytes = 0;  ///< sum of trajectory sizes
  std::vector<ColumnFamilySize> column_families;
  std::uint64_t disk_bytes = 0;  ///< every file under the store directory
};

/// A run found in the store: its metadata record if one was written, and its episode count.
struct RunSummary {
  RunId run;
  std::optional<RunRecord> record;
  std::uint64_t episodes = 0;
};

/// JSONL export: one line per episode (docs/formats/store.md, "JSONL export").
struct ExportOptions {
  /// Only this run's episodes, in creation order. Default: every episode, by episode id.
  std::optional<RunId> run;
  /// Skip (and count) episodes whose value is corrupt instead of stopping. Default: true.
  bool skip_corrupt = true;
};
struct ExportReport {
  std::uint64_t exported = 0;
  std::uint64_t corrupt = 0;
  std::vector<Error> errors;  ///< the first few corrupt records' errors
};
/// Which tasks `scan_tasks` visits. Task ids sort as bytes, so an id prefix is a range scan; a
/// suite is checked on each record (task ids made by tasks/task.h start with "<suite>/", so
/// giving both, e.g. {"kernelbench/level1/", "kernelbench/level1"}, reads only that suite).
struct TaskScan {
  /// Only ids that start with this. Default: every task.
  std::string id_prefix;
  /// Only tasks whose suite is exactly this. Default: any suite.
  std::optional<std::string> suite;
};
/// Called per task by scan_tasks; return false to stop the scan early.
using TaskVisitor = std::function<bool(const TaskRecord&)>;

/// Receives each JSONL line (with its trailing '\n'); an error stops the export.
using LineSink = std::function<Status(std::string_view line)>;

class RunStore {
 public:
  /// Opens (kWrite: creates) the store in `options.dir`. Errors name the directory:
  /// store.missing (no such directory), store.not_a_store, store.locked (another writer holds
  /// it), store.newer_version (written by a newer build), store.corruption (a file missing or
  /// damaged, named), store.io.
  static Expected<std::unique_ptr<RunStore>> open(const StoreOptions& options, StoreMode mode);
  /// kWrite: writes everything already submitted, acknowledges it, then closes.
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& dir() const;
  StoreMode mode() const;

  // Writing (kWrite only; other modes fail the write with store.read_only).

  /// Queues `write`; `done` is called once it is durable or has failed (store.corruption,
  /// unwritten, once any read or write of this store met damage). Does not wait for the disk; waits
  /// (until `deadline`) only while more than the pending limit (1 GiB) is queued. A write still
  /// queued when its deadline passes fails with store.deadline, unwritten.
  void submit(StoreWrite write, StoreClock::time_point deadline, WriteCallback done);
  /// submit() and wait for the acknowledgement. store.ack_timeout after `timeout`: the write may
  /// still land; retrying it is safe (see idempotency above).
  Status write(StoreWrite write, std::chrono::milliseconds timeout);

  // Reading.

  /// kSecondary: brings in what the writer has written since (a read-only reopen, only when the
  /// writer wrote or flushed something; reads in flight finish on the view they started with).
  /// Other modes: no-op.
  Status catch_up();

  Expected<EpisodeRecord> get_episode(const RunId& run, const EpisodeId& episode) const;
  Expected<EpisodeSummary> get_episode_summary(const RunId& run, const EpisodeId& episode) const;
  /// Every run's episode with this id (ids are unique per run; usually one).
  Expected<std::vector<EpisodeSummary>> find_episode(const EpisodeId& episode) const;
  Expected<EvaluationRecord> get_evaluation(const EvaluationId& evaluation) const;
  Expected<TaskRecord> get_task(const TaskId& task) const;
  Expected<ArtifactRecord> get_artifact(std::string_view hash) const;
  Expected<BaselineRecord> get_baseline(const TaskId& task, std::string_view device,
                                        std::string_view torch_version,
                                        std::string_view precision) const;
  Expected<RunRecord> get_run(const RunId& run) const;

  /// A run's episodes in creation order.
  Status scan_run(const RunId& run, const SummaryVisitor& visit) const;
  /// Episodes for replay (see ReplayQuery).
  Status scan_replay(const ReplayQuery& query, const SummaryVisitor& visit) const;
  /// A task's episodes across runs, by run then episode id.
  Status scan_task(const TaskId& task, const SummaryVisitor& visit) const;
  /// RFT selection, ordered by task id, then best first within a task.
  Expected<std::vector<EpisodeSummary>> select_rft(const RftQuery& query) const;
  /// The best verified evaluation of a task: highest reward, then highest speedup over
  /// torch.compile. nullopt when the task has none.
  Expected<std::optional<EvaluationRecord>> best_verified(const TaskId& task) const;
  /// best_verified for every task that has one, by task id.
  Expected<std::vector<EvaluationRecord>> best_verified_per_task() const;

  /// Tasks by id (see TaskScan). A corrupt task value stops the scan with its error.
  Status scan_tasks(const TaskScan& scan, const TaskVisitor& visit) const;

  /// A run's episode attempts by episode id, then attempt number; only `episode`'s when it is
  /// non-empty. A read-only view of a store older than the attempts family visits none.
  Status scan_attempts(const RunId& run, std::string_view episode,
                       const std::function<bool(const EpisodeAttemptRecord&)>& visit) const;

  Expected<std::vector<RunSummary>> list_runs() const;
  /// A run's checkpoints by step; the last is the latest.
  Expected<std::vector<CheckpointRecord>> list_checkpoints(const RunId& run) const;
  /// One metric of a run by step, from `from_step` on; `visit` returns false to stop.
  Status scan_metrics(const RunId& run, std::string_view name, std::uint64_t from_step,
                      const std::function<bool(const MetricRecord&)>& visit) const;

  /// Episode count of one run or of the whole store (reads index keys only).
  Expected<std::uint64_t> count_episodes(const std::optional<RunId>& run) const;
  /// Counts by status and stage and the reward histogram of one run (or all episodes), and the
  /// store's size per column family and on disk.
  Expected<StoreStats> stats(const std::optional<RunId>& run) const;
  /// Compacts every column family now, running the metrics TTL filter. Long runs do not need
  /// it (RocksDB compacts in the background); tests and maintenance tools do. kWrite only.
  Status compact();
  /// The writer's counters (all zero in read modes): writes per synced batch shows group commit.
  WriteStats write_stats() const;
  /// Streams episodes as JSONL to `sink`; `progress` (may be empty) is called after each one.
  Expected<ExportReport> export_jsonl(const ExportOptions& options, const LineSink& sink,
                                      const std::function<void(bool ok)>& progress) const;

  struct Impl;

 private:
  explicit RunStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One file checked by verify_store.
struct FileCheck {
  std::string path;
  std::string kind;           ///< "table" (.sst) or "blob" (.blob)
  std::string column_family;  ///< empty when the store could not be opened
  std::uint64_t bytes = 0;
  /// Whether a whole-file checksum recorded when the file was written was compared (every file
  /// written by this build; blob files of older builds have none, see values_read).
  bool whole_file_checksum = false;
  Status result;  ///< OK, or why the file is damaged (store.corruption naming it)
};

struct VerifyReport {
  std::string dir;
  std::vector<FileCheck> files;
  /// Damage not tied to one listed file: the open (a missing or truncated file, a bad footer)
  /// or a bad blob in blob files that have no recorded checksum.
  std::vector<Error> errors;
  /// Values read to check blob files without a recorded whole-file checksum (each blob's CRC).
  std::uint64_t values_read = 0;
  bool clean() const;
};

/// Checks every checksum of the store in `options.dir` without changing it (no lock taken; a
/// live writer may run): opening it read-only checks the file set (every table and blob file the
/// MANIFEST names exists with its recorded size); then every table file's block checksums, every
/// whole-file checksum recorded in the MANIFEST, and for blob files without one, every blob's own
/// CRC by reading it. When the store cannot be opened, every table file in the directory is
/// checked on its own. The result's error is only for a directory that is not a store
/// (store.missing, store.not_a_store, store.newer_version); damage is in the report.
Expected<VerifyReport> verify_store(const StoreOptions& options);

/// Files under `dir`, in bytes (what `runs show` reports as the store's size).
std::uint64_t directory_bytes(const std::string& dir);

/// One episode as its JSONL export line, with the trailing '\n' (docs/formats/store.md).
std::string episode_json_line(const EpisodeRecord& episode);

}  // namespace cuda_agent
