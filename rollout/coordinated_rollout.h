// A rollout worker fed by the run's coordinator (DESIGN.md sections 2 and 3; issue 24): it asks
// the coordinator for episodes, runs them, and submits each trajectory to the coordinator, which
// acknowledges it only after its durable store write. The worker opens no store.
//
//   ActorRuntime runtime;                                // actors/actor_runtime.h, one per process
//   CoordinatorWorkSource source(**client);              // the coordinator in another process
//   CoordinatedRollout loop(runtime.system(), source, prepare,
//                           {.worker_id = WorkerId{"host-pid-gpu0"}, .concurrent_episodes = 8});
//   // or the coordinator actor of this process: CoordinatedRollout loop(system, coordinator, ...)
//   std::thread t([&] { report = loop.run(RunId{"run-1"}); });
//   // or, so that an episode whose policy server died is rerun once it is back (see below):
//   CoordinatedRollout loop(system, source, prepare, options, [url] {
//     Expected<HttpResponse> r = http_get(url, {}, {.total_ms = 5000});  // rollout/http_post.h
//     return r && r->status < 500;
//   });
//   ... on SIGTERM: loop.request_stop(); t.join();
//
// The loop is CAF typed actors (rollout/rollout_worker_actor.h): a worker actor that asks,
// dispatches and submits, and one episode runner per slot; this class spawns them and waits for
// the worker's report.
//
// Slots: `concurrent_episodes` episodes at once. The worker asks the coordinator for work, one
// request per free slot:
//   "none now"   -> ask again after retry_after_ms (at most max_idle_wait_ms; a stop ends the
//                   wait), with ONE request for the whole worker while admission stays closed
//                   (one poll per worker per retry hint, not one per idle slot); its assignment
//                   opens admission and the other free slots ask at once;
//   "run finished" -> no more asking;
//   assigned     -> a free slot prepares the episode for the assignment's task (`prepare`), runs
//                   it with the assignment's stage and policy version and the sampling seed of
//                   episode_sampling_seed(run, episode) (policy calls bounded across slots by
//                   `generation_slots`, rollout/generation_gate.h), builds its EpisodeRecord
//                   (episode_record() in rollout_worker.h); the worker submits it. The slot is
//                   free again as soon as the episode ended, while its submission goes on.
//
// Determinism: every policy call of an episode asks for a seed derived from the run and episode
// ids alone (episode_sampling_seed, plus the turn index: rollout/episode.cpp), so a rerun of the
// episode (another attempt, another worker, a rerun after its policy server died) samples the
// same tokens from the same weights and prompt.
//
// A policy server that went away: when an episode ends aborted because its last policy call found
// no server (policy_server_gone: connection refused, reset or closed, HTTP 502/503; the policy
// engine was killed or is restarting), it is not submitted: the slot warns, probes the server
// (`policy_probe`, the worker's /health look) until it answers, then runs the same assignment
// again from scratch (a fresh `prepare`, same episode id and seed). It waits at most
// policy_wait_ms from the episode's first such abort; past that (or without a probe, or for any
// other abort: a context overflow, a malformed reply) the aborted episode is submitted as usual.
// A stop during the wait ends the assignment as kStopped, not submitted.
//
// Submission (TrajectorySubmission{worker, attempt, episode}): kAcknowledged -> done;
// kStoreFailed or a transport error -> the same submission again after a pause (doubling, at
// most 5 s) until submit_deadline_ms, then the episode is counted as failed (the coordinator
// reruns it once it takes this worker for lost, or it stays in flight there: nothing is lost that
// was acknowledged); kSuperseded / kUnknown -> dropped with a log line (another attempt owns the
// episode, or the coordinator never dispatched it). Submitting twice is safe: the coordinator
// answers a repeat of an acknowledged episode with kAcknowledged and writes nothing.
//
// An assignment that cannot be prepared (a task id this worker's train set does not hold, a
// transcript missing) is submitted as an aborted episode with reward 0 and an empty trajectory,
// so the coordinator counts it once instead of rerunning it on every worker; the learner refuses
// empty trajectories (learner/train_sequence.h), so nothing is trained on it.
//
// request_work failing (transport error) is retried, one request for the worker, with the same
// backoff; when it has failed without a break for request_deadline_ms, the worker asks no more,
// lets its episodes in flight end, and the report carries the error (the CLI exits 1): a worker
// that cannot reach its coordinator has nothing to do.
//
// Stopping (request_stop(), e.g. on SIGTERM): no slot asks for work again; an episode in flight
// is cut at its next policy call (a tool call already running finishes first) and is not
// submitted (the coordinator reruns it once this worker is lost); an episode whose policy was
// already done (its final evaluation running) is submitted as usual, with its tries until
// submit_deadline_ms (a stop ends a wait after "none now", not a submission's: a finished
// trajectory is worth the wait).
//
// Threading: run() blocks until the worker actor answered its report; request_stop() from any
// thread, any time. `prepare` and the policy probe are called from the runners' threads,
// concurrently; the hooks from the worker actor, one at a time. A WorkSource must be thread-safe
// (its calls come from two threads: work requests and submissions, rollout/blocking_work_source.h).
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "actors/work_protocol.h"
#include "core/error.h"
#include "core/ids.h"
#include "messages/coordinator_protocol.h"
#include "rollout/rollout_worker.h"

namespace cuda_agent {

/// A blocking work source: the coordinator in another process (CoordinatorWorkSource over
/// coordinator/coordinator_client.h), or a fake in tests. rollout/blocking_work_source.h turns it
/// into a work_source_actor. Both calls are thread-safe and bounded by the source's own request
/// timeout; an Error is a transport failure (the call may be repeated), a reply is the
/// coordinator's answer.
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  virtual Expected<WorkReply> request_work() = 0;
  virtual Expected<SubmitReply> submit(const TrajectorySubmission& submission) = 0;
  /// Ends the request_work() calls waiting now and every later one at once (the loop is
  /// stopping: a coordinator that has gone away must not hold the stop for its request
  /// timeout). Submissions are not affected.
  virtual void cancel_work_requests() {}
};

/// WorkReply::reason when the run is over (coordinator/coordinator_actor.cpp sends it).
inline constexpr std::string_view kRunFinishedReason = "run finished";

struct CoordinatedRolloutOptions {
  /// This worker, as the coordinator knows it (CoordinatorClientOptions::member).
  WorkerId worker_id;
  /// Episodes run at once (slots). Default: 4.
  std::int64_t concurrent_episodes = 4;
  /// Policy calls at once across the slots; 0: as many as concurrent_episodes.
  std::int64_t generation_slots = 0;
  /// Longest wait after a "none now" reply, whatever its retry_after_ms. Default: 10 s.
  std::int64_t max_idle_wait_ms = 10'000;
  /// All tries of one submission. Default: 10 min (a coordinator restarting from its store).
  std::int64_t submit_deadline_ms = 600'000;
  /// request_work failing without a break this long ends the slot. Default: 10 min.
  std::int64_t request_deadline_ms = 600'000;
  /// First pause between tries of a failed submit or request_work, doubled after each (at most
  /// 5 s). Default: 200 ms.
  std::int64_t retry_initial_ms = 200;
  /// An episode aborted because its policy server went away is rerun once the server answers
  /// again, waiting this long at most from its first such abort; then it is submitted aborted.
  /// Default: 20 min (what the worker waits for its policy server at start: a large model on a
  /// slow disk).
  std::int64_t policy_wait_ms = 1'200'000;
};

/// One look at the policy server (its /health): true when it answers. Called from slot threads,
/// concurrently; each call bounded by its own timeout.
using PolicyProbe = std::function<bool()>;

/// True for a policy error that means the server was not there: no connection ("http.connect"),
/// a connection reset or closed mid-request ("http.transport", rollout/http_post.h), or HTTP 502
/// / 503 ("policy.http_502", "policy.http_503", rollout/openai_policy.cpp). Not a timeout (the
/// server may be alive and slow) and not a 4xx (the request itself was refused).
bool policy_server_gone(const Error& error);

/// The sampling seed of every coordinated episode: 64-bit FNV-1a of "RUN/EPISODE", kept below
/// 2^63 (backends with signed seeds) and never 0 (0 asks for none). The same for every attempt
/// of an episode on any worker; different across episodes.
std::uint64_t episode_sampling_seed(const RunId& run, const EpisodeId& episode);

/// Prepares one attempt of an assigned episode: policy, tools and spec for the assignment's task.
/// Ids, stage and policy version of the spec are set by the loop from the assignment.
using PrepareAssignment = std::function<Expected<PreparedEpisode>(const Assignment&)>;

/// How one assignment ended for this worker.
enum class AssignmentOutcome : std::uint8_t {
  kAcknowledged,  ///< ran (or could not be prepared: submitted aborted), and was acknowledged
  kSuperseded,    ///< the coordinator answered kSuperseded: dropped
  kUnknown,       ///< the coordinator answered kUnknown: dropped
  kFailed,        ///< not acknowledged before submit_deadline_ms (see error)
  kStopped,       ///< cut by a stop in flight: not submitted
};
std::string_view to_string(AssignmentOutcome outcome);

struct AssignmentResult {
  Assignment assignment;
  AssignmentOutcome outcome = AssignmentOutcome::kFailed;
  EpisodeSummary summary;  ///< as submitted (not for kStopped)
  /// The final evaluation's reward tier; -1 when none ran.
  std::int32_t final_reward_tier = -1;
  std::uint32_t submit_tries = 0;
  /// Times the episode ran again from scratch because its policy server went away.
  std::uint32_t policy_reruns = 0;
  /// The assignment could not be prepared; it was submitted as an aborted, empty episode.
  bool not_prepared = false;
  /// The episode ended aborted (summary.status): why, from its last failed tool result (e.g. the
  /// policy backend's error); empty otherwise.
  std::string abort_reason;
  std::optional<Error> error;  ///< kFailed: why; otherwise, with not_prepared: why not
};

struct CoordinatedReport {
  std::uint64_t acknowledged = 0, superseded = 0, unknown = 0, failed = 0, stopped = 0;
  /// Assignments that could not be prepared (submitted as aborted; counted in acknowledged etc.).
  std::uint64_t not_prepared = 0;
  /// Episode runners replaced after a failure (rollout/rollout_worker_actor.h, supervision).
  std::uint64_t runner_restarts = 0;
  /// The coordinator answered "run finished".
  bool run_finished = false;
  /// Why the worker gave up: request_work kept failing (request_deadline_ms), or its runners
  /// crashed in a loop.
  std::optional<Error> error;
  std::int64_t max_concurrent_generations = 0;
};

struct CoordinatedHooks {
  /// An assignment was received (before it is prepared).
  std::function<void(const Assignment&)> on_assigned;
  /// An assignment ended.
  std::function<void(const AssignmentResult&)> on_finished;
};

class CoordinatedRollout {
 public:
  /// A coordinator reached through a blocking source (another process). `policy_probe` may be
  /// empty: then an episode whose policy server went away is submitted aborted, like any other
  /// aborted episode. `source` and `system` must outlive this object.
  CoordinatedRollout(caf::actor_system& system, WorkSource& source, PrepareAssignment prepare,
                     CoordinatedRolloutOptions options, PolicyProbe policy_probe = {});
  /// A coordinator actor of this process (or any work_source_actor).
  CoordinatedRollout(caf::actor_system& system, work_source_actor source, PrepareAssignment prepare,
                     CoordinatedRolloutOptions options, PolicyProbe policy_probe = {});
  ~CoordinatedRollout();
  CoordinatedRollout(const CoordinatedRollout&) = delete;
  CoordinatedRollout& operator=(const CoordinatedRollout&) = delete;

  /// Runs the worker until the run finishes, the stop, or it gives up (see above). Once.
  CoordinatedReport run(const RunId& run, const CoordinatedHooks& hooks = {});
  /// See "Stopping" above. Idempotent.
  void request_stop();
  bool stopping() const { return stop_.load(); }

  const CoordinatedRolloutOptions& options() const { return options_; }

 private:
  caf::actor_system& system_;
  WorkSource* blocking_ = nullptr;  // the blocking source, when one was given
  work_source_actor source_;
  PrepareAssignment prepare_;
  CoordinatedRolloutOptions options_;
  PolicyProbe policy_probe_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;   // guards worker_
  caf::actor worker_;  // the worker actor while run() runs
};

}  // namespace cuda_agent
