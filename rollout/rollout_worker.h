// The rollout worker (DESIGN.md sections 3 and 6): runs many episodes at once and hands each
// finished trajectory to the run store, counting it done only once the store acknowledged it.
//
//   RunStoreRollout store(*run_store);
//   RolloutWorker worker(store, {.worker_id = WorkerId{"host:pid"}, .concurrent_episodes = 8});
//   ASSIGN_OR_RETURN(RecoveryReport rec, worker.recover(run, RolloutWorker::all_others_lost()));
//   RolloutReport r = worker.run(run, jobs, hooks, &stop);
//
// Concurrency: `concurrent_episodes` episodes run at once, each on its own thread; generation is
// bounded separately by `generation_slots` (the policy backend's capacity): an episode holds a
// slot only while its policy call runs, so an episode waiting on a compile or a benchmark costs
// no generation slot. Waiting for a slot is bounded by the turn's deadline.
//
// Records (docs/formats/store.md, column family "attempts"): before an episode starts, the worker
// writes its attempt (run, episode, attempt n, worker id) as `running` and waits for the store's
// acknowledgement; the finished episode record (trajectory: token ids, logprobs, loss mask, turn
// boundaries, policy version per turn, reward), its evaluation record when the job asks for one,
// and the attempt now `committed` go in one atomic write. Store errors that may pass (timeout,
// unavailable, I/O) are retried with backoff until `store_deadline_ms`; a refused write (bad
// input, store.conflict) is not retried.
//
// Recovery rule (recover(), run by a restarted worker or by whoever takes over a lost one): the
// `running` attempts of lost workers are marked `aborted` (their episodes left nothing in the
// store). run() then, per job: an episode already in the store is skipped (never run or written
// twice); otherwise the next attempt number is 1 + the highest recorded one; past `max_attempts`
// the episode is given up: an episode record with status aborted, reward 0 and an empty
// trajectory is written, so final counts are exact and a later resume does not retry it. An
// attempt whose episode cannot be prepared (no transcript, no endpoint) is aborted at once.
// Because the episode record is unique per (run, episode) in the store, a lost worker that was
// only slow cannot duplicate an episode: the second commit of different content is refused
// (store.conflict) and reported as superseded.
//
// Stopping (run()'s `stop`, set by `cuda-agent serve rollout-worker` on SIGTERM): jobs not yet
// started are left; an episode in flight is cut at its next policy call (a tool call already
// running finishes first, bounded by its own deadline), its attempt is marked `aborted` with a
// note starting "stopped:" and nothing of the episode is stored, so a later run or another worker
// runs it again. Such stopped attempts do not count towards `max_attempts`: stopping a worker is
// not a failure of the episode. An episode whose policy was already done when the stop came (its
// final evaluation running) is stored as usual.
//
// Threading: run() blocks until every job is done or stopped; recover() and run() must not
// overlap on one worker. Hooks are called from the episode threads, concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/store_codec.h"
#include "messages/trajectory_codec.h"
#include "rollout/episode.h"
#include "rollout/rollout_store.h"

namespace cuda_agent {

struct RolloutWorkerOptions {
  /// This worker, as recorded on its attempts; unique per process start (e.g. "host:pid:ms").
  WorkerId worker_id;
  /// Episodes run at once. Default: 4.
  std::int64_t concurrent_episodes = 4;
  /// Policy calls at once across this worker's episodes; 0: as many as concurrent_episodes.
  std::int64_t generation_slots = 0;
  /// Attempts per episode, counting the first; an episode whose attempts are all spent (their
  /// worker lost, or the episode could not be prepared) is given up (stored as aborted).
  /// Default: 2.
  std::uint32_t max_attempts = 2;
  /// Wait for one store acknowledgement. Default: 10 s.
  std::int64_t store_ack_timeout_ms = 10'000;
  /// All tries of one store write, retries included. Default: 120 s.
  std::int64_t store_deadline_ms = 120'000;
  /// First pause between retries, doubled after each (at most 5 s). Default: 100 ms.
  std::int64_t store_retry_initial_ms = 100;
};

/// Everything one attempt at an episode needs; `spec.policy` and `spec.tools` point into the
/// owned backends (or elsewhere, outliving the attempt).
struct PreparedEpisode {
  EpisodeSpec spec;
  std::unique_ptr<PolicyBackend> policy;
  std::unique_ptr<EvaluationTools> tools;
};

/// One episode to run. `prepare` is called once per attempt (a replay transcript starts over).
struct RolloutJob {
  EpisodeId episode_id;
  TaskId task_id;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  /// When set, an EvaluationRecord of the final evaluation is written with the episode.
  std::optional<EvaluationId> evaluation_id;
  std::function<Expected<PreparedEpisode>()> prepare;
};

/// How one job ended for this worker.
enum class JobOutcome : std::uint8_t {
  kAcknowledged,   ///< ran, and the store acknowledged its episode
  kAlreadyStored,  ///< in the store before this run (resume): not run
  kGivenUp,        ///< its attempts were spent: stored as aborted, not run
  kSuperseded,     ///< another attempt's different episode is in the store (store.conflict)
  kFailed,         ///< preparing it or the store failed: nothing acknowledged (see error)
  kNotStarted,     ///< stopped before it started
  kStopped,        ///< in flight when stopped: its attempt is marked aborted, nothing stored
};
std::string_view to_string(JobOutcome outcome);

struct JobResult {
  EpisodeId episode_id;
  TaskId task_id;
  JobOutcome outcome = JobOutcome::kNotStarted;
  std::uint32_t attempt = 0;        ///< the attempt run (0 when none ran)
  EpisodeSummary summary;           ///< as stored (acknowledged, already stored, given up)
  EvaluationOutcome final_outcome;  ///< kAcknowledged only
  std::optional<Error> error;       ///< kFailed, kSuperseded
};

struct RolloutReport {
  std::vector<JobResult> jobs;  ///< in the order of the jobs given
  std::uint64_t count(JobOutcome outcome) const;
  std::int64_t max_concurrent_generations = 0;  ///< policy calls seen running at once
};

struct RecoveryReport {
  std::vector<EpisodeAttemptRecord> aborted;  ///< attempts marked aborted now
};

/// Called with the attempt once its `running` record is durable, and with the result once the
/// episode is acknowledged (or not). Either may be empty.
struct RolloutHooks {
  std::function<void(const EpisodeAttemptRecord&)> on_started;
  std::function<void(const JobResult&)> on_finished;
};

class GenerationGate;  // rollout/generation_gate.h: bounds policy calls across episodes

class RolloutWorker {
 public:
  RolloutWorker(RolloutStore& store, RolloutWorkerOptions options);

  /// True for a worker id whose process is gone.
  using LostWorker = std::function<bool(const WorkerId&)>;
  /// Every worker but this one: right when this process holds the store exclusively (the
  /// embedded case: RunStore's writer lock means no other writer lives).
  LostWorker all_others_lost() const;

  /// Marks the `running` attempts of lost workers in `run` aborted (one durable write).
  Expected<RecoveryReport> recover(const RunId& run, const LostWorker& lost);

  /// Runs the jobs (see the recovery rule above). Jobs not yet started when `*stop` becomes true
  /// are left (kNotStarted); running ones are cut at their next policy call (kStopped, see
  /// "Stopping" above).
  RolloutReport run(const RunId& run, const std::vector<RolloutJob>& jobs,
                    const RolloutHooks& hooks = {}, const std::atomic<bool>* stop = nullptr);

  const RolloutWorkerOptions& options() const { return options_; }

 private:
  JobResult run_job(const RunId& run, const RolloutJob& job,
                    const std::vector<EpisodeAttemptRecord>& attempts, const RolloutHooks& hooks,
                    GenerationGate& gate, const std::atomic<bool>* stop);
  Status write_durably(const StoreWrite& w, const std::string& what);

  RolloutStore& store_;
  RolloutWorkerOptions options_;
};

/// How the note of an attempt aborted because its worker was stopped begins.
inline constexpr std::string_view kStoppedAttemptNote = "stopped:";

/// The store's record of a finished episode (summary and encoded trajectory).
EpisodeRecord episode_record(const Episode& episode);

/// The record of an episode that did not run (given up, not prepared, its runner failed): aborted,
/// no turns, ended now, so the coordinator or the store counts it once and nothing trains on it.
EpisodeRecord aborted_episode_record(const RunId& run, const EpisodeId& episode, const TaskId& task,
                                     EpisodeStage stage);

/// A record's summary, with the trajectory's size.
EpisodeSummary summary_of(const EpisodeRecord& record);

}  // namespace cuda_agent
