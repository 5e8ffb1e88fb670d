#include "rollout/coordinated_rollout.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "rollout/generation_gate.h"
#include "rollout/rollout_store.h"

namespace cuda_agent {
namespace {

using Ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kMaxBackoffMs = 5'000;

EpisodeSummary summary_of(const EpisodeRecord& r) {
  EpisodeSummary s = r;
  s.trajectory_size = r.trajectory_bytes.size();
  return s;
}

std::string episode_name(const Assignment& a) {
  return "episode " + a.episode_id.value() + " (task " + a.task_id.value() + ", attempt " +
         std::to_string(a.attempt) + ")";
}

// The episode's policy as the gate sees it: the backend's answers passed through, the error of
// the last call kept (none after a call that answered), so the loop can tell an episode cut short
// by a policy server that went away from one the backend refused.
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

}  // namespace

bool policy_server_gone(const Error& error) {
  return error.code == "http.connect" || error.code == "http.transport" ||
         error.code == "policy.http_502" || error.code == "policy.http_503";
}

std::uint64_t episode_sampling_seed(const RunId& run, const EpisodeId& episode) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, 64 bits
  for (const std::string_view part :
       {std::string_view(run.value()), std::string_view("/"), std::string_view(episode.value())}) {
    for (const char c : part) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
  }
  h &= 0x7fffffffffffffffULL;
  return h == 0 ? 1 : h;
}

std::string_view to_string(AssignmentOutcome outcome) {
  switch (outcome) {
    case AssignmentOutcome::kAcknowledged: return "acknowledged";
    case AssignmentOutcome::kSuperseded: return "superseded";
    case AssignmentOutcome::kUnknown: return "unknown";
    case AssignmentOutcome::kFailed: return "failed";
    case AssignmentOutcome::kStopped: return "stopped";
  }
  return "unknown";
}

struct CoordinatedRollout::Shared {
  std::mutex mutex;
  CoordinatedReport report;
};

CoordinatedRollout::CoordinatedRollout(WorkSource& source, PrepareAssignment prepare,
                                       CoordinatedRolloutOptions options, PolicyProbe policy_probe)
    : source_(source),
      prepare_(std::move(prepare)),
      options_(std::move(options)),
      policy_probe_(std::move(policy_probe)) {
  options_.concurrent_episodes = std::max<std::int64_t>(options_.concurrent_episodes, 1);
  if (options_.generation_slots <= 0) options_.generation_slots = options_.concurrent_episodes;
  options_.retry_initial_ms = std::max<std::int64_t>(options_.retry_initial_ms, 1);
  options_.max_idle_wait_ms = std::max<std::int64_t>(options_.max_idle_wait_ms, 1);
}

void CoordinatedRollout::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  // A slot waiting for the coordinator's answer must not hold the stop for the request timeout
  // (found on the GPU: a run's last SIGTERM waited out the 15 s stop grace on a work request the
  // finished coordinator never answered).
  source_.cancel_work_requests();
}

void CoordinatedRollout::update_turn(const std::function<bool(AdmissionTurn&)>& change) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    wake = change(turn_);
  }
  if (wake) wake_.notify_all();
}

void CoordinatedRollout::idle(std::int64_t ms) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, Ms(std::max<std::int64_t>(ms, 0)),
                 [&] { return stop_.load() || finished_.load(); });
}

CoordinatedRollout::PolicyWait CoordinatedRollout::wait_for_policy(Clock::time_point deadline) {
  std::int64_t pause = options_.retry_initial_ms;
  for (;;) {
    if (stop_) return PolicyWait::kStopped;
    if (policy_probe_()) return PolicyWait::kAnswered;
    const auto left = std::chrono::duration_cast<Ms>(deadline - Clock::now());
    if (left.count() <= 0) return PolicyWait::kDeadline;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::min(Ms(pause), left), [&] { return stop_.load(); });
    }
    pause = std::min(pause * 2, kMaxBackoffMs);
  }
}

void CoordinatedRollout::submit(AssignmentResult& result, EpisodeRecord record) {
  const Assignment& a = result.assignment;
  result.summary = summary_of(record);
  TrajectorySubmission submission{
      .worker = options_.worker_id, .attempt = a.attempt, .episode = std::move(record)};
  if (result.final_outcome.bench) {
    // A bench ran the final evaluation: its record (artifact hash, audit, baselines) goes with the
    // episode, and the coordinator stores both in one write.
    StoreWrite ew = final_evaluation_write(result.final_outcome,
                                           {.evaluation_id = EvaluationId{a.episode_id.value()},
                                            .run_id = submission.episode.run_id,
                                            .task_id = a.task_id,
                                            .episode_id = a.episode_id},
                                           submission.episode.final_reward);
    submission.evaluations = std::move(ew.evaluations);
    submission.baselines = std::move(ew.baselines);
  }
  const auto deadline = Clock::now() + Ms(options_.submit_deadline_ms);
  std::int64_t pause = options_.retry_initial_ms;
  for (;;) {
    ++result.submit_tries;
    Expected<SubmitReply> reply = source_.submit(submission);
    Error problem;
    if (reply) {
      switch (reply->status) {
        case SubmitStatus::kAcknowledged: result.outcome = AssignmentOutcome::kAcknowledged; return;
        case SubmitStatus::kSuperseded:
        case SubmitStatus::kUnknown:
          result.outcome = reply->status == SubmitStatus::kSuperseded
                               ? AssignmentOutcome::kSuperseded
                               : AssignmentOutcome::kUnknown;
          log_warn("the coordinator refused this episode; dropped",
                   {{"episode", a.episode_id.value()},
                    {"attempt", std::to_string(a.attempt)},
                    {"answer", std::string(to_string(result.outcome))},
                    {"message", reply->message}});
          return;
        case SubmitStatus::kStoreFailed:
          problem = make_error(ErrorCategory::kUnavailable, "rollout.store_failed",
                               "the coordinator could not store it: " + reply->message);
          break;
        default:
          problem = make_error(ErrorCategory::kInternal, "rollout.submit_status",
                               "the coordinator answered an unknown status " +
                                   std::to_string(static_cast<int>(reply->status)));
          break;
      }
    } else {
      problem = reply.error();
    }
    if (Clock::now() + Ms(pause) >= deadline) {
      result.outcome = AssignmentOutcome::kFailed;
      result.error = problem.with_context("submit " + episode_name(a) + " (after " +
                                          std::to_string(result.submit_tries) + " tries)");
      return;
    }
    log_warn("submitting an episode failed; retrying",
             {{"episode", a.episode_id.value()},
              {"try", std::to_string(result.submit_tries)},
              {"error", problem.to_string()}});
    std::this_thread::sleep_for(Ms(pause));  // backoff, not a wait for an event
    pause = std::min(pause * 2, kMaxBackoffMs);
  }
}

// Why an aborted episode ended: its last failed tool result (the policy backend's error, a tool
// that could not run), as the episode recorded it.
static std::string abort_reason(const Episode& episode) {
  for (auto turn = episode.turns.rbegin(); turn != episode.turns.rend(); ++turn) {
    for (const ToolResult& r : turn->tool_results) {
      if (r.is_error) return r.content;
    }
  }
  return "aborted before any turn";
}

AssignmentResult CoordinatedRollout::run_assignment(const RunId& run, const Assignment& a,
                                                    GenerationGate& gate) {
  AssignmentResult result{.assignment = a};
  // Set at the episode's first abort for a policy server that went away: when to stop waiting
  // for it and submit the aborted episode (see "A policy server that went away" in the header).
  std::optional<Clock::time_point> policy_deadline;
  for (;;) {  // once, and again for each rerun after the policy server came back
    Expected<PreparedEpisode> prepared =
        prepare_ ? prepare_(a)
                 : Expected<PreparedEpisode>(make_error(ErrorCategory::kInvalidInput, "rollout.job",
                                                        "the rollout loop has no prepare"));
    if (prepared && (!prepared->spec.policy || !prepared->spec.tools)) {
      prepared = make_error(ErrorCategory::kInvalidInput, "rollout.job",
                            "prepare gave no policy or no tools");
    }
    if (!prepared) {
      // Nothing ran: an aborted, empty episode tells the coordinator it is done with (see header).
      Error e = prepared.error().with_context("prepare " + episode_name(a));
      log_error(e, {{"episode", a.episode_id.value()}});
      Episode aborted{.episode_id = a.episode_id,
                      .run_id = run,
                      .task_id = a.task_id,
                      .stage = a.stage,
                      .status = EpisodeStatus::kAborted,
                      .ended_unix_ms = now_unix_ms()};
      EpisodeRecord record = episode_record(aborted);
      record.policy_version = a.policy_version;
      result.not_prepared = true;
      submit(result, std::move(record));
      if (!result.error) result.error = std::move(e);
      return result;
    }
    EpisodeSpec spec = prepared->spec;
    spec.episode_id = a.episode_id;
    spec.run_id = run;
    spec.task_id = a.task_id;
    spec.stage = a.stage;
    spec.policy_version = a.policy_version;
    spec.seed = episode_sampling_seed(run, a.episode_id);
    LastErrorPolicy backend(*spec.policy);
    GatedPolicy gated(backend, gate, &stop_);
    spec.policy = &gated;
    Episode episode = run_episode(spec, &result.final_outcome);
    if (gated.cut()) {
      result.outcome = AssignmentOutcome::kStopped;
      return result;
    }
    if (episode.status == EpisodeStatus::kAborted) result.abort_reason = abort_reason(episode);

    // Aborted because the policy server was not there (killed, restarting): the episode says
    // nothing about the task or the policy, so it runs again once the server is back.
    const bool server_gone = episode.status == EpisodeStatus::kAborted && backend.last_error() &&
                             policy_server_gone(*backend.last_error());
    if (server_gone && policy_probe_) {
      if (!policy_deadline) policy_deadline = Clock::now() + Ms(options_.policy_wait_ms);
      log_warn("the policy server went away mid-episode; the episode runs again once it answers",
               {{"episode", a.episode_id.value()},
                {"attempt", std::to_string(a.attempt)},
                {"error", backend.last_error()->to_string()}});
      const PolicyWait waited = wait_for_policy(*policy_deadline);
      if (waited == PolicyWait::kStopped) {
        result.outcome = AssignmentOutcome::kStopped;
        return result;
      }
      if (waited == PolicyWait::kAnswered) {
        ++result.policy_reruns;
        result.abort_reason.clear();
        continue;
      }
      log_warn("the policy server did not answer in time; the aborted episode is submitted",
               {{"episode", a.episode_id.value()},
                {"waited_ms", std::to_string(options_.policy_wait_ms)}});
    }
    submit(result, episode_record(episode));
    return result;
  }
}

void CoordinatedRollout::slot(std::int64_t index, const RunId& run, const CoordinatedHooks& hooks,
                              GenerationGate& gate, Shared& shared) {
  std::int64_t pause = options_.retry_initial_ms;
  std::optional<Clock::time_point> failing_since;
  // Leaving, this slot hands the worker's poll to another (rollout/admission_turn.h).
  struct Leave {
    CoordinatedRollout& loop;
    std::int64_t index;
    ~Leave() {
      loop.update_turn([this](AdmissionTurn& t) { return t.leave(index); });
    }
  } leave{*this, index};
  while (!stop_ && !finished_) {
    {
      // While admission is closed one slot asks for the worker; the others wait for its answer.
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_.load() || finished_.load() || turn_.may_ask(index); });
      if (stop_ || finished_) return;
    }
    Expected<WorkReply> reply = source_.request_work();
    if (!reply && stop_) return;  // cancelled by request_stop()
    if (!reply) {
      // No poll for the others: each retries on its own deadline.
      update_turn([](AdmissionTurn& t) { return t.reopen(); });
      const auto now = Clock::now();
      if (!failing_since) failing_since = now;
      if (now - *failing_since >= Ms(options_.request_deadline_ms)) {
        Error e = reply.error().with_context("asking the coordinator for work failed for " +
                                             std::to_string(options_.request_deadline_ms) +
                                             " ms without a break");
        std::lock_guard lock(shared.mutex);
        if (!shared.report.error) shared.report.error = std::move(e);
        return;
      }
      log_warn("asking the coordinator for work failed; retrying",
               {{"worker", options_.worker_id.value()}, {"error", reply.error().to_string()}});
      idle(pause);
      pause = std::min(pause * 2, kMaxBackoffMs);
      continue;
    }
    failing_since.reset();
    pause = options_.retry_initial_ms;
    if (!reply->assigned) {
      if (reply->reason == kRunFinishedReason) {
        {
          std::lock_guard lock(mutex_);
          finished_ = true;
        }
        wake_.notify_all();
        std::lock_guard lock(shared.mutex);
        shared.report.run_finished = true;
        return;
      }
      log_debug("no work now", {{"reason", reply->reason},
                                {"retry_after_ms", std::to_string(reply->retry_after_ms)}});
      update_turn([index](AdmissionTurn& t) { return t.answered(index, false); });
      idle(std::clamp<std::int64_t>(reply->retry_after_ms, options_.retry_initial_ms,
                                    options_.max_idle_wait_ms));
      continue;
    }
    // The slots waiting on this one's poll ask now.
    update_turn([index](AdmissionTurn& t) { return t.answered(index, true); });
    if (hooks.on_assigned) hooks.on_assigned(reply->assignment);
    AssignmentResult r = run_assignment(run, reply->assignment, gate);
    {
      std::lock_guard lock(shared.mutex);
      CoordinatedReport& c = shared.report;
      switch (r.outcome) {
        case AssignmentOutcome::kAcknowledged: ++c.acknowledged; break;
        case AssignmentOutcome::kSuperseded: ++c.superseded; break;
        case AssignmentOutcome::kUnknown: ++c.unknown; break;
        case AssignmentOutcome::kFailed: ++c.failed; break;
        case AssignmentOutcome::kStopped: ++c.stopped; break;
      }
      c.not_prepared += r.not_prepared;
    }
    if (hooks.on_finished) hooks.on_finished(r);
  }
}

CoordinatedReport CoordinatedRollout::run(const RunId& run, const CoordinatedHooks& hooks) {
  GenerationGate gate(options_.generation_slots);
  Shared shared;
  std::vector<std::thread> threads;
  for (std::int64_t k = 0; k < options_.concurrent_episodes; ++k)
    threads.emplace_back([&, k] { slot(k, run, hooks, gate, shared); });
  for (std::thread& t : threads) t.join();
  shared.report.max_concurrent_generations = gate.max_running();
  return shared.report;
}

}  // namespace cuda_agent
