#include "rollout/rollout_worker.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "rollout/generation_gate.h"

namespace cuda_agent {
namespace {

using Ms = std::chrono::milliseconds;

bool worth_retrying(const Error& e) {
  return e.category == ErrorCategory::kTimeout || e.category == ErrorCategory::kUnavailable ||
         e.category == ErrorCategory::kIo;
}

}  // namespace

EpisodeSummary summary_of(const EpisodeRecord& r) {
  EpisodeSummary s = r;
  s.trajectory_size = r.trajectory_bytes.size();
  return s;
}

EpisodeRecord aborted_episode_record(const RunId& run, const EpisodeId& episode, const TaskId& task,
                                     EpisodeStage stage) {
  return episode_record(Episode{.episode_id = episode,
                                .run_id = run,
                                .task_id = task,
                                .stage = stage,
                                .status = EpisodeStatus::kAborted,
                                .ended_unix_ms = now_unix_ms()});
}

std::string_view to_string(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kAcknowledged: return "acknowledged";
    case JobOutcome::kAlreadyStored: return "already_stored";
    case JobOutcome::kGivenUp: return "given_up";
    case JobOutcome::kSuperseded: return "superseded";
    case JobOutcome::kFailed: return "failed";
    case JobOutcome::kNotStarted: return "not_started";
    case JobOutcome::kStopped: return "stopped";
  }
  return "unknown";
}

std::uint64_t RolloutReport::count(JobOutcome outcome) const {
  return static_cast<std::uint64_t>(std::count_if(
      jobs.begin(), jobs.end(), [&](const JobResult& j) { return j.outcome == outcome; }));
}

EpisodeRecord episode_record(const Episode& e) {
  EpisodeRecord r;
  r.episode_id = e.episode_id;
  r.run_id = e.run_id;
  r.task_id = e.task_id;
  r.stage = e.stage;
  r.policy_version = e.turns.empty() ? PolicyVersion{0} : e.turns.front().policy_version;
  r.status = e.status;
  r.final_reward = e.final_reward;
  r.turns = e.counters.turns;
  r.invalid_tool_calls = e.counters.invalid_tool_calls;
  r.wasted_loops = e.counters.wasted_loops;
  r.total_tokens = e.counters.tokens;
  r.created_unix_ms = e.ended_unix_ms;
  r.trajectory_bytes = encode_episode(e);
  return r;
}

RolloutWorker::RolloutWorker(RolloutStore& store, RolloutWorkerOptions options)
    : store_(store), options_(std::move(options)) {
  options_.concurrent_episodes = std::max<std::int64_t>(options_.concurrent_episodes, 1);
  if (options_.generation_slots <= 0) options_.generation_slots = options_.concurrent_episodes;
  options_.max_attempts = std::max<std::uint32_t>(options_.max_attempts, 1);
}

RolloutWorker::LostWorker RolloutWorker::all_others_lost() const {
  return [self = options_.worker_id](const WorkerId& w) { return w != self; };
}

Status RolloutWorker::write_durably(const StoreWrite& w, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + Ms(options_.store_deadline_ms);
  Ms pause(std::max<std::int64_t>(options_.store_retry_initial_ms, 1));
  for (int tries = 1;; ++tries) {
    const auto left = std::chrono::duration_cast<Ms>(deadline - std::chrono::steady_clock::now());
    const Ms timeout = std::clamp(Ms(options_.store_ack_timeout_ms), Ms(1), std::max(left, Ms(1)));
    Status s = store_.write(w, timeout);  // a copy: a retry sends the same records again
    if (s) return s;
    if (!worth_retrying(s.error()) || std::chrono::steady_clock::now() + pause >= deadline) {
      return s.error().with_context(what + " (after " + std::to_string(tries) + " tries)");
    }
    log_warn("store write failed; retrying",
             {{"what", what}, {"error", s.error().to_string()}, {"try", std::to_string(tries)}});
    std::this_thread::sleep_for(pause);  // backoff, not a wait for an event
    pause = std::min(pause * 2, Ms(5'000));
  }
}

Expected<RecoveryReport> RolloutWorker::recover(const RunId& run, const LostWorker& lost) {
  ASSIGN_OR_RETURN(std::vector<EpisodeAttemptRecord> attempts, store_.attempts(run));
  RecoveryReport report;
  StoreWrite w;
  for (EpisodeAttemptRecord& a : attempts) {
    if (a.state != AttemptState::kRunning || !lost(a.worker_id)) continue;
    ASSIGN_OR_RETURN(std::optional<EpisodeSummary> stored, store_.episode(run, a.episode_id));
    // Attempts commit with their episode atomically, so a stored episode with a running attempt
    // means another attempt stored it; this one still left nothing.
    a.state = AttemptState::kAborted;
    a.updated_unix_ms = now_unix_ms();
    a.note = "worker " + a.worker_id.value() + " lost before the episode was acknowledged" +
             (stored ? " (another attempt's episode is stored)" : "");
    w.attempts.push_back(a);
    report.aborted.push_back(a);
  }
  if (!w.attempts.empty()) {
    RETURN_IF_ERROR(write_durably(w, "mark lost attempts of run " + run.value() + " aborted"));
  }
  return report;
}

JobResult RolloutWorker::run_job(const RunId& run, const RolloutJob& job,
                                 const std::vector<EpisodeAttemptRecord>& attempts,
                                 const RolloutHooks& hooks, GenerationGate& gate,
                                 const std::atomic<bool>* stop) {
  JobResult result{.episode_id = job.episode_id, .task_id = job.task_id};
  const std::string what = "episode " + run.value() + "/" + job.episode_id.value();
  auto fail = [&](Error e) {
    result.outcome = JobOutcome::kFailed;
    result.error = std::move(e);
    return result;
  };
  Expected<std::optional<EpisodeSummary>> stored = store_.episode(run, job.episode_id);
  if (!stored) return fail(stored.error());
  if (*stored) {
    result.outcome = JobOutcome::kAlreadyStored;
    result.summary = **stored;
    return result;
  }
  std::uint32_t last = 0;
  std::uint32_t spent = 0;  // attempts that count: all but those cut by a stop
  for (const EpisodeAttemptRecord& a : attempts) {
    last = std::max(last, a.attempt);
    spent += !(a.state == AttemptState::kAborted && a.note.starts_with(kStoppedAttemptNote));
  }
  if (spent >= options_.max_attempts) {  // spent: stored as aborted, never retried again
    EpisodeRecord record = aborted_episode_record(run, job.episode_id, job.task_id, job.stage);
    result.summary = summary_of(record);
    StoreWrite w;
    w.episodes.push_back(std::move(record));
    Status s = write_durably(w, "give up " + what);
    if (!s) return fail(s.error());
    result.outcome = JobOutcome::kGivenUp;
    return result;
  }

  EpisodeAttemptRecord attempt{.run_id = run,
                               .episode_id = job.episode_id,
                               .attempt = last + 1,
                               .task_id = job.task_id,
                               .worker_id = options_.worker_id,
                               .state = AttemptState::kRunning,
                               .started_unix_ms = now_unix_ms()};
  attempt.updated_unix_ms = attempt.started_unix_ms;
  result.attempt = attempt.attempt;
  {
    StoreWrite w;
    w.attempts.push_back(attempt);
    Status s = write_durably(w, "mark " + what + " in flight");
    if (!s) return fail(s.error());
  }
  if (hooks.on_started) hooks.on_started(attempt);

  Expected<PreparedEpisode> prepared =
      job.prepare ? job.prepare()
                  : Expected<PreparedEpisode>(make_error(ErrorCategory::kInvalidInput,
                                                         "rollout.job", what + " has no prepare"));
  // An attempt that could not start left nothing: it is aborted at once (best effort; if that
  // write fails too, the next recovery aborts it).
  auto abandon = [&](Error e) {
    attempt.state = AttemptState::kAborted;
    attempt.updated_unix_ms = now_unix_ms();
    attempt.note = e.to_string();
    StoreWrite w;
    w.attempts.push_back(attempt);
    (void)write_durably(w, "abort " + what);
    return fail(std::move(e));
  };
  if (!prepared) return abandon(prepared.error().with_context("prepare " + what));
  EpisodeSpec spec = prepared->spec;
  if (!spec.policy || !spec.tools) {
    return abandon(make_error(ErrorCategory::kInvalidInput, "rollout.job",
                              "prepare " + what + " gave no policy or no tools"));
  }
  spec.episode_id = job.episode_id;
  spec.run_id = run;
  spec.task_id = job.task_id;
  spec.stage = job.stage;
  GatedPolicy gated(*spec.policy, gate, stop);
  spec.policy = &gated;
  Episode episode = run_episode(spec, &result.final_outcome);
  if (gated.cut()) {  // stopped in flight: nothing stored, the attempt is aborted
    attempt.state = AttemptState::kAborted;
    attempt.updated_unix_ms = now_unix_ms();
    attempt.note = std::string(kStoppedAttemptNote) + " worker " + options_.worker_id.value() +
                   " stopped after " + std::to_string(episode.counters.turns) + " turns";
    StoreWrite w;
    w.attempts.push_back(attempt);
    Status s = write_durably(w, "mark " + what + " stopped");
    result.outcome = JobOutcome::kStopped;
    if (!s) result.error = s.error();  // left `running`: the next recovery aborts it
    return result;
  }

  EpisodeRecord record = episode_record(episode);
  result.summary = summary_of(record);
  StoreWrite w;
  w.episodes.push_back(std::move(record));
  if (job.evaluation_id) {
    StoreWrite ew = final_evaluation_write(result.final_outcome,
                                           {.evaluation_id = *job.evaluation_id,
                                            .run_id = run,
                                            .task_id = job.task_id,
                                            .episode_id = job.episode_id},
                                           episode.final_reward);
    std::move(ew.evaluations.begin(), ew.evaluations.end(), std::back_inserter(w.evaluations));
    std::move(ew.baselines.begin(), ew.baselines.end(), std::back_inserter(w.baselines));
  }
  attempt.state = AttemptState::kCommitted;
  attempt.updated_unix_ms = now_unix_ms();
  w.attempts.push_back(attempt);
  Status s = write_durably(w, "store " + what);
  if (!s) {
    // Not acknowledged: the attempt stays `running` in the store; recovery aborts and reruns it.
    result.error = s.error();
    result.outcome =
        s.error().code == "store.conflict" ? JobOutcome::kSuperseded : JobOutcome::kFailed;
    return result;
  }
  result.outcome = JobOutcome::kAcknowledged;
  return result;
}

RolloutReport RolloutWorker::run(const RunId& run, const std::vector<RolloutJob>& jobs,
                                 const RolloutHooks& hooks, const std::atomic<bool>* stop) {
  RolloutReport report;
  report.jobs.resize(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    report.jobs[i].episode_id = jobs[i].episode_id;
    report.jobs[i].task_id = jobs[i].task_id;
  }
  std::map<std::string, std::vector<EpisodeAttemptRecord>> by_episode;
  Expected<std::vector<EpisodeAttemptRecord>> attempts = store_.attempts(run);
  if (!attempts) {
    for (JobResult& j : report.jobs) {
      j.outcome = JobOutcome::kFailed;
      j.error = attempts.error();
    }
    return report;
  }
  for (EpisodeAttemptRecord& a : *attempts) by_episode[a.episode_id.value()].push_back(a);

  GenerationGate gate(options_.generation_slots);
  std::atomic<std::size_t> next{0};
  auto lane = [&] {
    for (;;) {
      if (stop && stop->load()) return;
      const std::size_t i = next++;
      if (i >= jobs.size()) return;
      const auto it = by_episode.find(jobs[i].episode_id.value());
      static const std::vector<EpisodeAttemptRecord> kNone;
      JobResult r =
          run_job(run, jobs[i], it == by_episode.end() ? kNone : it->second, hooks, gate, stop);
      if (hooks.on_finished) hooks.on_finished(r);
      report.jobs[i] = std::move(r);  // each index is written by one lane only
    }
  };
  const std::size_t lanes =
      std::min<std::size_t>(static_cast<std::size_t>(options_.concurrent_episodes), jobs.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < lanes; ++k) threads.emplace_back(lane);
  for (std::thread& t : threads) t.join();
  report.max_concurrent_generations = gate.max_running();
  return report;
}

}  // namespace cuda_agent
