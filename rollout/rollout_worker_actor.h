// The coordinated rollout worker as CAF typed actors (DESIGN.md section 3; issue 21 item 1). The
// loop's contract is rollout/coordinated_rollout.h's (read it first); this file is its actors.
//
//   rollout_worker_actor ---- work_atom / submit_atom ----> work_source_actor
//        |   (asks, submits, retries on its own timers)      (the coordinator actor in this
//        |                                                    process, or the coordinator's
//        '-- run_episode_atom --> episode_runner_actor x N    client: blocking_work_source.h)
//                                 (one per slot, detached: an episode is blocking work, HTTP
//                                  to the policy and the tools' subprocesses)
//
// The worker actor owns every decision: how many work requests are out (one per free slot while
// admission is open; while it is closed, or the coordinator cannot be reached, one for the whole
// worker, asked again after the retry hint or the backoff), which slot runs an assignment, the
// submission of each finished episode with its retries and deadline, the counters of the report,
// and the end of the run. Runners only run episodes: prepare, the episode with its seeded policy
// calls, the rerun of an episode whose policy server went away (they probe and wait, bounded),
// and they answer an EpisodeRun that carries the TrajectorySubmission to send.
//
// Supervision: the worker spawns its runners (`make_runner`) and supervises them. A runner that
// fails a request (an exception escaped an episode, or it died) is replaced by a fresh one; its
// assignment is submitted as an aborted, empty episode with the failure as the reason (so the
// coordinator counts it once and never trains on it), like one that could not be prepared. More
// than `max_runner_restarts` replacements within 10 minutes is a crash loop: the worker escalates
// (asks for no more work, lets the other episodes finish, and ends with the error in its report).
//
// Stopping: stop_rollout_atom (or the `stop` flag set before the worker started) ends the asking
// at once; episodes in flight are cut by the runners at their next policy call (the shared `stop`
// flag, read by rollout/generation_gate.h) and answered as stopped, not submitted; finished ones
// are still submitted until their deadline. The worker answers run_rollout_atom with the report
// once no episode runs and no submission is pending, sends its runners an exit and quits.
//
// Threading: the worker is an event-based actor (its state is touched by its own handlers only);
// runners are detached actors (a thread each), which share with the worker only the read-only
// context and the atomic stop flag. Time comes from the actor clock, so tests on CAF's test
// coordinator control it.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "actors/work_protocol.h"
#include "rollout/coordinated_rollout.h"

namespace cuda_agent {

class GenerationGate;

/// Run one assignment (a runner's only message).
using run_episode_atom = caf::atom_constant<caf::atom("rrunep")>;
/// Run the loop until the run finishes, the stop, or the coordinator stays unreachable; the
/// reply is the report.
using run_rollout_atom = caf::atom_constant<caf::atom("rrun")>;
/// Stop asking; cut the episodes in flight.
using stop_rollout_atom = caf::atom_constant<caf::atom("rstop")>;
/// Internal timers of the worker: ask again; try submission `key` again.
using ask_again_atom = caf::atom_constant<caf::atom("raskagn")>;
using resubmit_atom = caf::atom_constant<caf::atom("rresub")>;

/// How a runner ran one assignment.
struct EpisodeRun {
  Assignment assignment;
  /// Cut by the stop: nothing to submit.
  bool stopped = false;
  /// It could not be prepared: `submission` holds an aborted, empty episode; `error` says why.
  bool not_prepared = false;
  std::uint32_t policy_reruns = 0;
  std::int32_t final_reward_tier = -1;
  std::string abort_reason;
  std::optional<Error> error;
  /// What to send the coordinator (unless stopped): the episode record, and the final
  /// evaluation's record and baselines when a bench ran it.
  TrajectorySubmission submission;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EpisodeRun& x) {
  return f(caf::meta::type_name("cuda_agent.EpisodeRun"), x.assignment, x.stopped, x.not_prepared,
           x.policy_reruns, x.final_reward_tier, x.abort_reason, x.error, x.submission);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CoordinatedReport& x) {
  return f(caf::meta::type_name("cuda_agent.CoordinatedReport"), x.acknowledged, x.superseded,
           x.unknown, x.failed, x.stopped, x.not_prepared, x.runner_restarts, x.run_finished,
           x.error, x.max_concurrent_generations);
}

using episode_runner_actor =
    caf::typed_actor<caf::replies_to<run_episode_atom, Assignment>::with<EpisodeRun>>;

using rollout_worker_actor =
    caf::typed_actor<caf::replies_to<run_rollout_atom>::with<CoordinatedReport>,
                     caf::reacts_to<stop_rollout_atom>, caf::reacts_to<ask_again_atom>,
                     caf::reacts_to<resubmit_atom, std::uint64_t>>;

/// Registers the rollout worker's message types (and the work protocol's).
void add_rollout_message_types(caf::actor_system_config& config);

/// What a production runner needs; shared by every runner of a worker, read-only but for the
/// gate (thread-safe) and the stop flag. Must outlive the runners.
struct EpisodeRunnerContext {
  RunId run;
  CoordinatedRolloutOptions options;
  PrepareAssignment prepare;
  PolicyProbe policy_probe;  ///< may be empty (see coordinated_rollout.h)
  GenerationGate* gate = nullptr;
  const std::atomic<bool>* stop = nullptr;
};

/// A runner on its own thread (detached), running `context`'s episodes.
episode_runner_actor spawn_episode_runner(caf::actor_system& system,
                                          const EpisodeRunnerContext& context);

/// Runs one assignment as a runner does (the blocking body of spawn_episode_runner's actor).
EpisodeRun run_assignment(const EpisodeRunnerContext& context, const Assignment& assignment);

struct RolloutWorkerConfig {
  RunId run;
  CoordinatedRolloutOptions options;
  CoordinatedHooks hooks;  ///< called on the worker actor
  /// A fresh runner for slot `index` (at start, and to replace one that failed).
  std::function<episode_runner_actor(std::int64_t index)> make_runner;
  /// Set by whoever stops the loop from outside the actor (read at start; the runners read it).
  const std::atomic<bool>* stop = nullptr;
  /// Replacements of failed runners allowed within 10 minutes before the worker escalates.
  /// Default: 5.
  std::int64_t max_runner_restarts = 5;
  /// Limit of one work request or submission to the source (the source's own timeout is
  /// normally shorter). Default: 2 min.
  std::chrono::milliseconds request_timeout{120'000};
};

rollout_worker_actor spawn_rollout_worker(caf::actor_system& system, work_source_actor source,
                                          RolloutWorkerConfig config);

}  // namespace cuda_agent
