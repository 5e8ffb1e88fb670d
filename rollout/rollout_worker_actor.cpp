#include "rollout/rollout_worker_actor.h"

#include <caf/all.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <thread>
#include <vector>

#include "actors/actor_runtime.h"
#include "core/log.h"
#include "rollout/generation_gate.h"
#include "rollout/rollout_store.h"

namespace cuda_agent {
namespace {

using Ms = std::chrono::milliseconds;

constexpr std::int64_t kMaxBackoffMs = 5'000;

std::string episode_name(const Assignment& a) {
  return "episode " + a.episode_id.value() + " (task " + a.task_id.value() + ", attempt " +
         std::to_string(a.attempt) + ")";
}

// The episode's policy as the gate sees it: the backend's answers passed through, the error of
// the last call kept (none after a call that answered), so the runner can tell an episode cut
// short by a policy server that went away from one the backend refused.
class LastErrorPolicy final : public PolicyBackend {
 public:
  explicit LastErrorPolicy(PolicyBackend& inner) : inner_(inner) {}
  Expected<PolicyTurn> next(const PolicyRequest& request) override {
    // A backend that throws (a bug, e.g. text it cannot encode) aborts this episode with the
    // reason, not the whole worker: a rerun of the same seeded episode would throw again.
    Expected<PolicyTurn> turn = make_error(ErrorCategory::kInternal, "policy.exception", "");
    try {
      turn = inner_.next(request);
    } catch (const std::exception& e) {
      turn = make_error(ErrorCategory::kInternal, "policy.exception",
                        std::string("the policy backend threw: ") + e.what());
    }
    last_error_ = turn ? std::nullopt : std::optional<Error>(turn.error());
    return turn;
  }
  std::string describe() const override { return inner_.describe(); }
  const std::optional<Error>& last_error() const { return last_error_; }

 private:
  PolicyBackend& inner_;
  std::optional<Error> last_error_;
};

// Why an aborted episode ended: its last failed tool result (the policy backend's error, a tool
// that could not run), as the episode recorded it.
std::string abort_reason(const Episode& episode) {
  for (auto turn = episode.turns.rbegin(); turn != episode.turns.rend(); ++turn) {
    for (const ToolResult& r : turn->tool_results) {
      if (r.is_error) return r.content;
    }
  }
  return "aborted before any turn";
}

// The record of an assignment that did not run (it could not be prepared, or its runner failed):
// an aborted, empty episode, so the coordinator counts it once and nothing trains on it.
EpisodeRecord aborted_record(const RunId& run, const Assignment& a) {
  EpisodeRecord record = aborted_episode_record(run, a.episode_id, a.task_id, a.stage);
  record.policy_version = a.policy_version;
  return record;
}

enum class PolicyWait : std::uint8_t { kAnswered, kDeadline, kStopped };

bool stopped(const EpisodeRunnerContext& c) { return c.stop && c.stop->load(); }

// Probes the policy server until it answers, `deadline` passes or the stop (looked at every
// 50 ms while waiting between probes).
PolicyWait wait_for_policy(const EpisodeRunnerContext& c,
                           std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  std::int64_t pause = std::max<std::int64_t>(c.options.retry_initial_ms, 1);
  for (;;) {
    if (stopped(c)) return PolicyWait::kStopped;
    if (c.policy_probe()) return PolicyWait::kAnswered;
    const auto next = std::min(Clock::now() + Ms(pause), deadline);
    if (Clock::now() >= deadline) return PolicyWait::kDeadline;
    while (Clock::now() < next) {
      if (stopped(c)) return PolicyWait::kStopped;
      std::this_thread::sleep_for(
          std::min(Ms(50), std::chrono::duration_cast<Ms>(next - Clock::now() + Ms(1))));
    }
    pause = std::min(pause * 2, kMaxBackoffMs);
  }
}

}  // namespace

EpisodeRun run_assignment(const EpisodeRunnerContext& c, const Assignment& a) {
  using Clock = std::chrono::steady_clock;
  EpisodeRun result{.assignment = a};
  result.submission.worker = c.options.worker_id;
  result.submission.attempt = a.attempt;
  // Set at the episode's first abort for a policy server that went away: when to stop waiting
  // for it and submit the aborted episode (see "A policy server that went away" in
  // coordinated_rollout.h).
  std::optional<Clock::time_point> policy_deadline;
  for (;;) {  // once, and again for each rerun after the policy server came back
    Expected<PreparedEpisode> prepared =
        c.prepare
            ? c.prepare(a)
            : Expected<PreparedEpisode>(make_error(ErrorCategory::kInvalidInput, "rollout.job",
                                                   "the rollout loop has no prepare"));
    if (prepared && (!prepared->spec.policy || !prepared->spec.tools)) {
      prepared = make_error(ErrorCategory::kInvalidInput, "rollout.job",
                            "prepare gave no policy or no tools");
    }
    if (!prepared) {
      Error e = prepared.error().with_context("prepare " + episode_name(a));
      log_error(e, {{"episode", a.episode_id.value()}});
      result.not_prepared = true;
      result.error = std::move(e);
      result.submission.episode = aborted_record(c.run, a);
      return result;
    }
    EpisodeSpec spec = prepared->spec;
    spec.episode_id = a.episode_id;
    spec.run_id = c.run;
    spec.task_id = a.task_id;
    spec.stage = a.stage;
    spec.policy_version = a.policy_version;
    spec.seed = episode_sampling_seed(c.run, a.episode_id);
    LastErrorPolicy backend(*spec.policy);
    GatedPolicy gated(backend, *c.gate, c.stop);
    spec.policy = &gated;
    EvaluationOutcome final_outcome;
    Episode episode = run_episode(spec, &final_outcome);
    if (gated.cut()) {
      result.stopped = true;
      return result;
    }
    if (episode.status == EpisodeStatus::kAborted) result.abort_reason = abort_reason(episode);

    // Aborted because the policy server was not there (killed, restarting): the episode says
    // nothing about the task or the policy, so it runs again once the server is back.
    const bool server_gone = episode.status == EpisodeStatus::kAborted && backend.last_error() &&
                             policy_server_gone(*backend.last_error());
    if (server_gone && c.policy_probe) {
      if (!policy_deadline) policy_deadline = Clock::now() + Ms(c.options.policy_wait_ms);
      log_warn("the policy server went away mid-episode; the episode runs again once it answers",
               {{"episode", a.episode_id.value()},
                {"attempt", std::to_string(a.attempt)},
                {"error", backend.last_error()->to_string()}});
      const PolicyWait waited = wait_for_policy(c, *policy_deadline);
      if (waited == PolicyWait::kStopped) {
        result.stopped = true;
        return result;
      }
      if (waited == PolicyWait::kAnswered) {
        ++result.policy_reruns;
        result.abort_reason.clear();
        continue;
      }
      log_warn("the policy server did not answer in time; the aborted episode is submitted",
               {{"episode", a.episode_id.value()},
                {"waited_ms", std::to_string(c.options.policy_wait_ms)}});
    }
    result.final_reward_tier = final_outcome.reward_tier;
    result.submission.episode = episode_record(episode);
    if (final_outcome.bench) {
      // A bench ran the final evaluation: its record (artifact hash, audit, baselines) goes with
      // the episode, and the coordinator stores both in one write.
      StoreWrite ew = final_evaluation_write(final_outcome,
                                             {.evaluation_id = EvaluationId{a.episode_id.value()},
                                              .run_id = c.run,
                                              .task_id = a.task_id,
                                              .episode_id = a.episode_id},
                                             result.submission.episode.final_reward);
      result.submission.evaluations = std::move(ew.evaluations);
      result.submission.baselines = std::move(ew.baselines);
    }
    return result;
  }
}

episode_runner_actor spawn_episode_runner(caf::actor_system& system,
                                          const EpisodeRunnerContext& context) {
  return system.spawn<caf::detached>(
      [&context](episode_runner_actor::pointer self) -> episode_runner_actor::behavior_type {
        self->set_exception_handler(keep_exception_text);
        return {[&context](run_episode_atom, const Assignment& a) {
          return run_assignment(context, a);
        }};
      });
}

namespace {

// One finished episode on its way to the coordinator.
struct PendingSubmit {
  AssignmentResult result;
  TrajectorySubmission submission;
  caf::actor_clock::time_point deadline;
  std::int64_t pause_ms = 0;
};

struct Slot {
  episode_runner_actor runner;
  bool busy = false;
};

struct RolloutWorkerState {
  static inline const char* name = "cuda_agent.rollout_worker";
  // Declared, so that the state is no aggregate: CAF would build it from the actor pointer.
  RolloutWorkerState() = default;
  work_source_actor source;
  RolloutWorkerConfig config;
  std::vector<Slot> slots;
  std::int64_t asking = 0;        // work requests out
  bool admission_closed = false;  // ask with one request for the worker (none now, or failing)
  bool timer_set = false;         // an ask_again is due: ask nothing before it
  std::int64_t request_pause_ms = 0;
  std::optional<caf::actor_clock::time_point> failing_since;
  bool started = false, stopping = false, finished = false, gave_up = false;
  std::map<std::uint64_t, PendingSubmit> submits;
  std::uint64_t next_submit = 0;
  std::deque<caf::actor_clock::time_point> restarts;  // runner replacements, last 10 minutes
  CoordinatedReport report;
  std::vector<caf::typed_response_promise<CoordinatedReport>> waiting;

  const CoordinatedRolloutOptions& options() const { return config.options; }
  bool asking_allowed() const { return !stopping && !finished && !gave_up; }
};

using Self = rollout_worker_actor::stateful_pointer<RolloutWorkerState>;

void ask(Self self);
void fill(Self self);

// Ends the run once nothing is left: no asking, no episode running, no submission pending.
void maybe_done(Self self) {
  auto& st = self->state;
  if (!st.started || st.asking_allowed()) return;
  // A work request still out matters only when its answer could be an assignment to run: after a
  // stop it is not waited for (the coordinator reruns such an episode once this worker is lost).
  if (st.asking > 0 && !st.stopping) return;
  for (const Slot& s : st.slots) {
    if (s.busy) return;
  }
  if (!st.submits.empty()) return;
  for (auto& p : st.waiting) p.deliver(st.report);
  st.waiting.clear();
  for (Slot& s : st.slots) self->send_exit(s.runner, caf::exit_reason::user_shutdown);
  self->quit();
}

void finish_assignment(Self self, const AssignmentResult& r) {
  auto& st = self->state;
  CoordinatedReport& c = st.report;
  switch (r.outcome) {
    case AssignmentOutcome::kAcknowledged: ++c.acknowledged; break;
    case AssignmentOutcome::kSuperseded: ++c.superseded; break;
    case AssignmentOutcome::kUnknown: ++c.unknown; break;
    case AssignmentOutcome::kFailed: ++c.failed; break;
    case AssignmentOutcome::kStopped: ++c.stopped; break;
  }
  c.not_prepared += r.not_prepared;
  if (st.config.hooks.on_finished) st.config.hooks.on_finished(r);
}

void send_submit(Self self, std::uint64_t key);

// A try of submission `key` failed with `problem`: again after the pause, or failed past the
// deadline.
void submit_failed(Self self, std::uint64_t key, const Error& problem) {
  auto& st = self->state;
  auto it = st.submits.find(key);
  if (it == st.submits.end()) return;
  PendingSubmit& p = it->second;
  if (self->clock().now() + Ms(p.pause_ms) >= p.deadline) {
    p.result.outcome = AssignmentOutcome::kFailed;
    p.result.error =
        problem.with_context("submit " + episode_name(p.result.assignment) + " (after " +
                             std::to_string(p.result.submit_tries) + " tries)");
    AssignmentResult r = std::move(p.result);
    st.submits.erase(it);
    finish_assignment(self, r);
    maybe_done(self);
    return;
  }
  log_warn("submitting an episode failed; retrying",
           {{"episode", p.result.assignment.episode_id.value()},
            {"try", std::to_string(p.result.submit_tries)},
            {"error", problem.to_string()}});
  self->delayed_send(self, Ms(p.pause_ms), resubmit_atom::value, key);
  p.pause_ms = std::min(p.pause_ms * 2, kMaxBackoffMs);
}

void on_submit_reply(Self self, std::uint64_t key, const SubmitReply& reply) {
  auto& st = self->state;
  auto it = st.submits.find(key);
  if (it == st.submits.end()) return;
  AssignmentResult& r = it->second.result;
  switch (reply.status) {
    case SubmitStatus::kAcknowledged: r.outcome = AssignmentOutcome::kAcknowledged; break;
    case SubmitStatus::kSuperseded:
    case SubmitStatus::kUnknown:
      r.outcome = reply.status == SubmitStatus::kSuperseded ? AssignmentOutcome::kSuperseded
                                                            : AssignmentOutcome::kUnknown;
      log_warn("the coordinator refused this episode; dropped",
               {{"episode", r.assignment.episode_id.value()},
                {"attempt", std::to_string(r.assignment.attempt)},
                {"answer", std::string(to_string(r.outcome))},
                {"message", reply.message}});
      break;
    case SubmitStatus::kStoreFailed:
      submit_failed(self, key,
                    make_error(ErrorCategory::kUnavailable, "rollout.store_failed",
                               "the coordinator could not store it: " + reply.message));
      return;
    default:
      submit_failed(self, key,
                    make_error(ErrorCategory::kInternal, "rollout.submit_status",
                               "the coordinator answered an unknown status " +
                                   std::to_string(static_cast<int>(reply.status))));
      return;
  }
  AssignmentResult done = std::move(r);
  st.submits.erase(it);
  finish_assignment(self, done);
  maybe_done(self);
}

void send_submit(Self self, std::uint64_t key) {
  auto& st = self->state;
  auto it = st.submits.find(key);
  if (it == st.submits.end()) return;
  ++it->second.result.submit_tries;
  self->request(st.source, st.config.request_timeout, submit_atom::value, it->second.submission)
      .then([self, key](const SubmitReply& reply) { on_submit_reply(self, key, reply); },
            [self, key](caf::error& e) {
              submit_failed(self, key, from_caf_error(self->system(), e));
            });
}

void begin_submit(Self self, AssignmentResult result, TrajectorySubmission submission) {
  auto& st = self->state;
  result.summary = summary_of(submission.episode);
  const std::uint64_t key = st.next_submit++;
  st.submits.emplace(
      key, PendingSubmit{.result = std::move(result),
                         .submission = std::move(submission),
                         .deadline = self->clock().now() + Ms(st.options().submit_deadline_ms),
                         .pause_ms = st.options().retry_initial_ms});
  send_submit(self, key);
}

void on_ran(Self self, EpisodeRun& run) {
  AssignmentResult r{.assignment = run.assignment,
                     .final_reward_tier = run.final_reward_tier,
                     .policy_reruns = run.policy_reruns,
                     .not_prepared = run.not_prepared,
                     .abort_reason = std::move(run.abort_reason),
                     .error = std::move(run.error)};
  if (run.stopped) {
    r.outcome = AssignmentOutcome::kStopped;
    finish_assignment(self, r);
    maybe_done(self);
    return;
  }
  begin_submit(self, std::move(r), std::move(run.submission));
}

// Supervision: the runner of `slot` failed its request (it threw, or died). It is replaced; its
// assignment is submitted aborted with the failure as the reason; a crash loop escalates.
void on_runner_failed(Self self, std::size_t slot, const Assignment& a, const caf::error& e) {
  auto& st = self->state;
  Error why = from_caf_error(self->system(), e)
                  .with_context("the episode runner of slot " + std::to_string(slot) +
                                " failed on " + episode_name(a));
  log_error(why, {{"episode", a.episode_id.value()}});
  const auto now = self->clock().now();
  st.restarts.push_back(now);
  while (!st.restarts.empty() && now - st.restarts.front() > std::chrono::minutes(10))
    st.restarts.pop_front();
  if (static_cast<std::int64_t>(st.restarts.size()) > st.config.max_runner_restarts) {
    if (!st.gave_up) {
      st.gave_up = true;
      st.report.error =
          make_error(ErrorCategory::kInternal, "rollout.runner_crash_loop",
                     std::to_string(st.restarts.size()) +
                         " episode runners failed within 10 minutes; the worker stops asking "
                         "for work (last: " +
                         why.to_string() + ")");
    }
  }
  st.slots[slot].runner = st.config.make_runner(static_cast<std::int64_t>(slot));
  ++st.report.runner_restarts;
  AssignmentResult r{.assignment = a, .abort_reason = why.message, .error = why};
  TrajectorySubmission s{.worker = st.options().worker_id,
                         .attempt = a.attempt,
                         .episode = aborted_record(st.config.run, a)};
  begin_submit(self, std::move(r), std::move(s));
}

void start_assignment(Self self, const Assignment& a) {
  auto& st = self->state;
  std::size_t slot = 0;
  while (slot < st.slots.size() && st.slots[slot].busy) ++slot;
  if (slot == st.slots.size()) {  // cannot happen: no more requests are out than free slots
    log_error(make_error(ErrorCategory::kInternal, "rollout.no_free_slot",
                         "an assignment came with every slot busy; it is left to the "
                         "coordinator to rerun"),
              {{"episode", a.episode_id.value()}});
    return;
  }
  st.slots[slot].busy = true;
  if (st.config.hooks.on_assigned) st.config.hooks.on_assigned(a);
  self->request(st.slots[slot].runner, caf::infinite, run_episode_atom::value, a)
      .then(
          [self, slot](EpisodeRun& run) {
            self->state.slots[slot].busy = false;
            on_ran(self, run);
            fill(self);
          },
          [self, slot, a](caf::error& e) {
            self->state.slots[slot].busy = false;
            on_runner_failed(self, slot, a, e);
            fill(self);
          });
}

void ask_again_after(Self self, std::int64_t ms) {
  self->state.timer_set = true;
  self->delayed_send(self, Ms(std::max<std::int64_t>(ms, 0)), ask_again_atom::value);
}

void on_work(Self self, WorkReply& reply) {
  auto& st = self->state;
  --st.asking;
  st.failing_since.reset();
  st.request_pause_ms = st.options().retry_initial_ms;
  if (!st.asking_allowed()) {
    if (reply.assigned) {
      log_info("an assignment came after the worker stopped asking; the coordinator reruns it",
               {{"episode", reply.assignment.episode_id.value()}});
    }
    maybe_done(self);
    return;
  }
  if (!reply.assigned) {
    if (reply.reason == kRunFinishedReason) {
      st.finished = true;
      st.report.run_finished = true;
      maybe_done(self);
      return;
    }
    log_debug("no work now",
              {{"reason", reply.reason}, {"retry_after_ms", std::to_string(reply.retry_after_ms)}});
    st.admission_closed = true;
    if (!st.timer_set) {
      ask_again_after(self,
                      std::clamp<std::int64_t>(reply.retry_after_ms, st.options().retry_initial_ms,
                                               st.options().max_idle_wait_ms));
    }
    return;
  }
  st.admission_closed = false;
  start_assignment(self, reply.assignment);
  fill(self);
}

void on_work_failed(Self self, const caf::error& e) {
  auto& st = self->state;
  --st.asking;
  if (!st.asking_allowed()) {
    maybe_done(self);
    return;
  }
  const Error error = from_caf_error(self->system(), e);
  const auto now = self->clock().now();
  if (!st.failing_since) st.failing_since = now;
  if (now - *st.failing_since >= Ms(st.options().request_deadline_ms)) {
    st.gave_up = true;
    st.report.error = error.with_context("asking the coordinator for work failed for " +
                                         std::to_string(st.options().request_deadline_ms) +
                                         " ms without a break");
    maybe_done(self);
    return;
  }
  log_warn("asking the coordinator for work failed; retrying",
           {{"worker", st.options().worker_id.value()}, {"error", error.to_string()}});
  // One request for the worker until it is answered again.
  st.admission_closed = true;
  if (!st.timer_set) {
    ask_again_after(self, st.request_pause_ms);
    st.request_pause_ms = std::min(st.request_pause_ms * 2, kMaxBackoffMs);
  }
}

void ask(Self self) {
  auto& st = self->state;
  ++st.asking;
  self->request(st.source, st.config.request_timeout, work_atom::value,
                WorkRequest{st.options().worker_id})
      .then([self](WorkReply& reply) { on_work(self, reply); },
            [self](caf::error& e) { on_work_failed(self, e); });
}

// Asks for as much work as the free slots take: one request per free slot while admission is
// open, one for the whole worker while it is closed.
void fill(Self self) {
  auto& st = self->state;
  if (!st.asking_allowed()) {
    maybe_done(self);
    return;
  }
  if (st.timer_set) return;
  std::int64_t free = 0;
  for (const Slot& s : st.slots) free += s.busy ? 0 : 1;
  const std::int64_t want =
      st.admission_closed ? (st.asking == 0 && free > 0 ? 1 : 0) : free - st.asking;
  for (std::int64_t k = 0; k < want; ++k) ask(self);
}

void stop(Self self) {
  auto& st = self->state;
  st.stopping = true;
  maybe_done(self);
}

rollout_worker_actor::behavior_type rollout_worker_fn(Self self, work_source_actor source,
                                                      RolloutWorkerConfig config) {
  auto& st = self->state;
  st.source = std::move(source);
  st.config = std::move(config);
  st.config.options.concurrent_episodes =
      std::max<std::int64_t>(st.config.options.concurrent_episodes, 1);
  st.config.options.retry_initial_ms =
      std::max<std::int64_t>(st.config.options.retry_initial_ms, 1);
  st.config.options.max_idle_wait_ms =
      std::max<std::int64_t>(st.config.options.max_idle_wait_ms, 1);
  st.request_pause_ms = st.options().retry_initial_ms;
  return {
      [self](run_rollout_atom) {
        auto& st = self->state;
        auto promise = self->make_response_promise<CoordinatedReport>();
        st.waiting.push_back(promise);
        if (st.started) return promise;
        st.started = true;
        for (std::int64_t k = 0; k < st.options().concurrent_episodes; ++k)
          st.slots.push_back({.runner = st.config.make_runner(k)});
        if (st.config.stop && st.config.stop->load()) st.stopping = true;
        fill(self);
        return promise;
      },
      [self](stop_rollout_atom) { stop(self); },
      [self](ask_again_atom) {
        self->state.timer_set = false;
        fill(self);
      },
      [self](resubmit_atom, std::uint64_t key) { send_submit(self, key); },
  };
}

}  // namespace

void add_rollout_message_types(caf::actor_system_config& config) {
  add_work_message_types(config);
  config.add_message_type<EpisodeRun>("cuda_agent.EpisodeRun");
  config.add_message_type<CoordinatedReport>("cuda_agent.CoordinatedReport");
}

rollout_worker_actor spawn_rollout_worker(caf::actor_system& system, work_source_actor source,
                                          RolloutWorkerConfig config) {
  return system.spawn(rollout_worker_fn, std::move(source), std::move(config));
}

}  // namespace cuda_agent
