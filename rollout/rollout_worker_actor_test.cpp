// The rollout worker actor's protocol (rollout/rollout_worker_actor.h) on CAF's deterministic test
// coordinator: messages run when the test runs the scheduler, time moves when it advances it. A
// fake source actor holds every work request and submission until the test answers it, so the
// test sees exactly what is out; fake runners answer at once or hold, and one throws.
//  - one work request per free slot while admission is open; one for the worker while it is
//    closed, asked again after the retry hint; an assignment opens admission again;
//  - "run finished" ends the run once the episodes in flight are submitted;
//  - a store failure is submitted again after the backoff; the deadline fails it;
//  - a runner that throws is replaced, its assignment submitted aborted; a crash loop escalates;
//  - a stop cuts the episodes in flight (not submitted) and ends the run without waiting for a
//    work request that is out;
//  - work requests failing past request_deadline_ms end the run with the error.
#include "rollout/rollout_worker_actor.h"

#include "actors/actor_runtime.h"

#include <gtest/gtest.h>
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <set>

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;

Assignment assignment(int n) {
  return {.episode_id = EpisodeId{"e" + std::to_string(n)},
          .task_id = TaskId{n == 99 ? "crash" : "t/" + std::to_string(n % 2)},
          .attempt = 1,
          .policy_version = PolicyVersion{3},
          .stage = EpisodeStage::kAgenticPpo};
}
WorkReply assigned(int n) { return {.assigned = true, .assignment = assignment(n)}; }
WorkReply none_now(std::int64_t ms) { return {.retry_after_ms = ms, .reason = "staleness bound"}; }
WorkReply finished() { return {.reason = std::string(kRunFinishedReason)}; }

// What the fake source was asked and has not answered yet.
struct SourceLog {
  std::deque<caf::typed_response_promise<WorkReply>> work;
  std::deque<std::pair<TrajectorySubmission, caf::typed_response_promise<SubmitReply>>> submits;
  std::vector<TrajectorySubmission> answered;
  int work_requests = 0;
};

// Promises are delivered from inside the actor that made them: the test asks the fake to.
using answer_work_atom = caf::atom_constant<caf::atom("tanswerw")>;
using fail_work_atom = caf::atom_constant<caf::atom("tfailw")>;
using answer_submit_atom = caf::atom_constant<caf::atom("tanswers")>;
using release_atom = caf::atom_constant<caf::atom("trelease")>;

using fake_source_actor =
    work_source_actor::extend<caf::reacts_to<answer_work_atom, WorkReply>,
                              caf::reacts_to<fail_work_atom>,
                              caf::reacts_to<answer_submit_atom, SubmitStatus>>;

fake_source_actor::behavior_type fake_source(fake_source_actor::pointer self, SourceLog* log) {
  return {
      [log](answer_work_atom, WorkReply& r) {
        auto p = log->work.front();
        log->work.pop_front();
        p.deliver(std::move(r));
      },
      [log](fail_work_atom) {
        auto p = log->work.front();
        log->work.pop_front();
        p.deliver(caf::make_error(caf::sec::request_timeout));
      },
      [log](answer_submit_atom, SubmitStatus status) {
        auto [s, p] = log->submits.front();
        log->submits.pop_front();
        log->answered.push_back(s);
        p.deliver(SubmitReply{.episode_id = s.episode.episode_id, .status = status});
      },
      [self, log](work_atom, const WorkRequest&) {
        ++log->work_requests;
        auto p = self->make_response_promise<WorkReply>();
        log->work.push_back(p);
        return p;
      },
      [self, log](submit_atom, const TrajectorySubmission& s) {
        auto p = self->make_response_promise<SubmitReply>();
        log->submits.emplace_back(s, p);
        return p;
      },
  };
}

// The runners' side: episodes run (at once, unless held), cut by the stop while held; task
// "crash" throws.
using fake_runner_actor = episode_runner_actor::extend<caf::reacts_to<release_atom, EpisodeRun>>;

struct Held {
  Assignment assignment;
  caf::typed_response_promise<EpisodeRun> promise;
  fake_runner_actor runner;
};

struct RunnerLog {
  bool hold = false;
  std::vector<Held> held;
  std::vector<EpisodeId> ran;
  int spawned = 0;
};

EpisodeRun ran_episode(const Assignment& a) {
  EpisodeRun r{.assignment = a};
  r.submission.worker = WorkerId{"w1"};
  r.submission.attempt = a.attempt;
  r.submission.episode.episode_id = a.episode_id;
  r.submission.episode.task_id = a.task_id;
  r.submission.episode.final_reward = 1;
  r.submission.episode.trajectory_bytes = "tokens of " + a.episode_id.value();
  r.final_reward_tier = 1;
  return r;
}

fake_runner_actor::behavior_type fake_runner(fake_runner_actor::pointer self, RunnerLog* log) {
  self->set_exception_handler(keep_exception_text);  // as spawn_episode_runner's
  return {
      [self, log](run_episode_atom, const Assignment& a) {
        if (a.task_id.value() == "crash") throw std::runtime_error("the tool crashed the runner");
        auto p = self->make_response_promise<EpisodeRun>();
        log->ran.push_back(a.episode_id);
        if (log->hold) {
          log->held.push_back({a, p, self});
        } else {
          p.deliver(ran_episode(a));
        }
        return p;
      },
      [self, log](release_atom, EpisodeRun& run) {
        for (auto it = log->held.begin(); it != log->held.end(); ++it) {
          if (it->assignment.episode_id != run.assignment.episode_id) continue;
          it->promise.deliver(std::move(run));
          log->held.erase(it);
          return;
        }
      },
  };
}

class RolloutWorkerActorTest : public ::testing::Test {
 protected:
  RolloutWorkerActorTest() {
    cfg_.set("scheduler.policy", caf::atom("testing"));
    cfg_.set("logger.file-verbosity", caf::atom("quiet"));
    cfg_.set("logger.console", caf::atom("none"));
    add_rollout_message_types(cfg_);
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
    self_.emplace(*sys_, true);
    source_ = sys_->spawn(fake_source, &source_log_);
  }
  ~RolloutWorkerActorTest() override {
    caf::anon_send_exit(source_, caf::exit_reason::kill);
    if (worker_) caf::anon_send_exit(worker_, caf::exit_reason::kill);
    for (auto& r : runners_) caf::anon_send_exit(r, caf::exit_reason::kill);
    sched_->run();
    source_log_.work.clear();
    source_log_.submits.clear();
    runner_log_.held.clear();
    runners_.clear();
    worker_ = nullptr;
    source_ = nullptr;
    self_.reset();
    sched_->run();
    sys_.reset();
  }

  void start(std::int64_t slots, CoordinatedRolloutOptions o = {}) {
    o.worker_id = WorkerId{"w1"};
    o.concurrent_episodes = slots;
    RolloutWorkerConfig config{
        .run = RunId{"run1"},
        .options = o,
        .hooks = {.on_finished = [this](const AssignmentResult& r) { results_.push_back(r); }},
        .make_runner =
            [this](std::int64_t) {
              ++runner_log_.spawned;
              auto r = sys_->spawn(fake_runner, &runner_log_);
              runners_.push_back(caf::actor_cast<caf::actor>(r));
              return r;
            },
        .stop = &stop_,
        .max_runner_restarts = 2};
    worker_ = spawn_rollout_worker(*sys_, source_, std::move(config));
    report_.emplace((*self_)->request(worker_, caf::infinite, run_rollout_atom::value));
    sched_->run();
  }

  // Answers the oldest work request that is out.
  void answer_work(WorkReply r) {
    ASSERT_FALSE(source_log_.work.empty()) << "no work request is out";
    caf::anon_send(source_, answer_work_atom::value, std::move(r));
    sched_->run();
  }
  void fail_work() {
    ASSERT_FALSE(source_log_.work.empty()) << "no work request is out";
    caf::anon_send(source_, fail_work_atom::value);
    sched_->run();
  }
  // Answers the oldest submission that is out; returns it.
  TrajectorySubmission answer_submit(SubmitStatus status = SubmitStatus::kAcknowledged) {
    EXPECT_FALSE(source_log_.submits.empty()) << "no submission is out";
    if (source_log_.submits.empty()) return {};
    caf::anon_send(source_, answer_submit_atom::value, status);
    sched_->run();
    return source_log_.answered.back();
  }
  // The held episode `n` ends with `run`.
  void release(const EpisodeRun& run) {
    for (const Held& h : runner_log_.held) {
      if (h.assignment.episode_id == run.assignment.episode_id) {
        caf::anon_send(h.runner, release_atom::value, run);
        sched_->run();
        return;
      }
    }
    ADD_FAILURE() << "episode " << run.assignment.episode_id.value() << " is not held";
  }
  void advance(std::chrono::milliseconds d) {
    sched_->advance_time(d);
    sched_->run();
  }
  bool done() { return !(*self_)->mailbox().empty(); }
  CoordinatedReport report() {
    CoordinatedReport out;
    report_->receive([&](CoordinatedReport& r) { out = std::move(r); },
                     [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }
  std::size_t work_out() const { return source_log_.work.size(); }

  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  std::optional<caf::scoped_actor> self_;
  SourceLog source_log_;
  RunnerLog runner_log_;
  fake_source_actor source_;
  rollout_worker_actor worker_;
  std::vector<caf::actor> runners_;
  std::vector<AssignmentResult> results_;
  std::atomic<bool> stop_{false};
  using Handle = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<rollout_worker_actor&>(), caf::infinite, run_rollout_atom::value));
  std::optional<Handle> report_;
};

TEST_F(RolloutWorkerActorTest, OneRequestPerFreeSlotThenOneForTheWorkerWhileAdmissionIsClosed) {
  runner_log_.hold = true;
  start(4);
  EXPECT_EQ(work_out(), 4u) << "every free slot asks at once";
  for (int k = 0; k < 4; ++k) answer_work(none_now(1000));
  EXPECT_EQ(work_out(), 0u) << "nothing is asked before the retry hint";
  advance(999ms);
  EXPECT_EQ(work_out(), 0u);
  advance(1ms);
  EXPECT_EQ(work_out(), 1u) << "one poll for the worker while admission is closed";
  answer_work(none_now(1000));
  advance(1000ms);
  EXPECT_EQ(work_out(), 1u);
  EXPECT_EQ(source_log_.work_requests, 6);
  // An assignment opens admission: the three slots still free ask at once.
  answer_work(assigned(0));
  EXPECT_EQ(runner_log_.ran.size(), 1u);
  EXPECT_EQ(work_out(), 3u);
  answer_work(assigned(1));
  answer_work(assigned(2));
  answer_work(assigned(3));
  EXPECT_EQ(work_out(), 0u) << "every slot is busy";
  // The held episodes end; their slots ask again while the submissions are out.
  runner_log_.hold = false;
  for (int n = 0; n < 4; ++n) release(ran_episode(assignment(n)));
  EXPECT_EQ(source_log_.submits.size(), 4u);
  EXPECT_EQ(work_out(), 4u);
  for (int k = 0; k < 4; ++k) answer_work(finished());
  EXPECT_FALSE(done()) << "four submissions are still out";
  for (int k = 0; k < 4; ++k) answer_submit();
  ASSERT_TRUE(done());
  const CoordinatedReport r = report();
  EXPECT_EQ(r.acknowledged, 4u);
  EXPECT_TRUE(r.run_finished);
  EXPECT_FALSE(r.error);
  ASSERT_EQ(results_.size(), 4u);
  EXPECT_EQ(results_[0].submit_tries, 1u);
  EXPECT_EQ(results_[0].final_reward_tier, 1);
}

TEST_F(RolloutWorkerActorTest, AStoreFailureIsSubmittedAgainAfterTheBackoffUntilItsDeadline) {
  start(1, {.submit_deadline_ms = 1'000, .retry_initial_ms = 200});
  answer_work(assigned(0));
  ASSERT_EQ(source_log_.submits.size(), 1u);
  const TrajectorySubmission first = answer_submit(SubmitStatus::kStoreFailed);
  EXPECT_TRUE(source_log_.submits.empty()) << "again only after the backoff";
  advance(200ms);
  ASSERT_EQ(source_log_.submits.size(), 1u);
  EXPECT_EQ(source_log_.submits.front().first.episode.trajectory_bytes,
            first.episode.trajectory_bytes);
  answer_submit(SubmitStatus::kStoreFailed);
  advance(400ms);  // the pause doubles
  answer_submit(SubmitStatus::kStoreFailed);
  // 600 ms gone; the next pause (800 ms) would pass the 1 s deadline: failed.
  EXPECT_TRUE(source_log_.submits.empty());
  ASSERT_EQ(results_.size(), 1u);
  EXPECT_EQ(results_[0].outcome, AssignmentOutcome::kFailed);
  EXPECT_EQ(results_[0].submit_tries, 3u);
  ASSERT_TRUE(results_[0].error);
  EXPECT_EQ(results_[0].error->code, "rollout.store_failed");
  answer_work(finished());
  ASSERT_TRUE(done());
  EXPECT_EQ(report().failed, 1u);
}

TEST_F(RolloutWorkerActorTest, ARunnerThatThrowsIsReplacedAndItsEpisodeSubmittedAborted) {
  start(1);
  EXPECT_EQ(runner_log_.spawned, 1);
  answer_work(assigned(99));  // task "crash"
  EXPECT_EQ(runner_log_.spawned, 2) << "the failed runner was replaced";
  ASSERT_EQ(source_log_.submits.size(), 1u);
  const TrajectorySubmission s = answer_submit();
  EXPECT_EQ(s.episode.episode_id, EpisodeId{"e99"});
  EXPECT_EQ(s.episode.status, EpisodeStatus::kAborted);
  EXPECT_TRUE(s.episode.trajectory_bytes.empty() || s.episode.final_reward == 0);
  // The new runner runs the next episode.
  answer_work(assigned(1));
  answer_submit();
  answer_work(finished());
  ASSERT_TRUE(done());
  const CoordinatedReport r = report();
  EXPECT_EQ(r.acknowledged, 2u);
  EXPECT_EQ(r.runner_restarts, 1u);
  EXPECT_FALSE(r.error);
  ASSERT_EQ(results_.size(), 2u);
  ASSERT_TRUE(results_[0].error);
  EXPECT_NE(results_[0].error->to_string().find("the tool crashed the runner"), std::string::npos)
      << results_[0].error->to_string();
  EXPECT_NE(results_[0].abort_reason.find("the tool crashed the runner"), std::string::npos)
      << results_[0].abort_reason;
}

TEST_F(RolloutWorkerActorTest, ACrashLoopOfRunnersEscalates) {
  start(1);  // max_runner_restarts = 2
  for (int k = 0; k < 3; ++k) {
    answer_work(assigned(99));
    answer_submit();
  }
  // The third failure within 10 minutes: no more asking; the run ends with the error.
  EXPECT_EQ(work_out(), 0u);
  ASSERT_TRUE(done());
  const CoordinatedReport r = report();
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, "rollout.runner_crash_loop");
  EXPECT_EQ(r.runner_restarts, 3u);
  EXPECT_EQ(r.acknowledged, 3u);
}

TEST_F(RolloutWorkerActorTest, AStopCutsEpisodesInFlightAndDoesNotWaitForAWorkRequest) {
  runner_log_.hold = true;
  start(2);
  answer_work(assigned(0));
  EXPECT_EQ(work_out(), 1u);  // the other slot's request is out
  stop_ = true;               // what CoordinatedRollout::request_stop sets for the runners
  caf::anon_send(worker_, stop_rollout_atom::value);
  sched_->run();
  EXPECT_EQ(source_log_.work_requests, 2) << "nothing more is asked";
  EXPECT_FALSE(done()) << "an episode is still in flight";
  // The runner sees the stop at its next policy call: cut, not submitted.
  release(EpisodeRun{.assignment = assignment(0), .stopped = true});
  EXPECT_TRUE(source_log_.submits.empty());
  ASSERT_TRUE(done()) << "the work request still out is not waited for";
  const CoordinatedReport r = report();
  EXPECT_EQ(r.stopped, 1u);
  EXPECT_EQ(r.acknowledged, 0u);
  EXPECT_FALSE(r.error);
}

TEST_F(RolloutWorkerActorTest, WorkRequestsFailingPastTheirDeadlineEndTheRun) {
  start(3, {.request_deadline_ms = 1'000, .retry_initial_ms = 100});
  EXPECT_EQ(work_out(), 3u);
  for (int k = 0; k < 3; ++k) fail_work();
  // One probe for the worker after the backoff, not three.
  advance(100ms);
  EXPECT_EQ(work_out(), 1u);
  fail_work();
  advance(200ms);
  fail_work();
  advance(400ms);
  fail_work();
  EXPECT_FALSE(done());
  advance(800ms);  // 1.5 s failing without a break: past the deadline at the next failure
  fail_work();
  ASSERT_TRUE(done());
  const CoordinatedReport r = report();
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->message.find("without a break"), std::string::npos) << r.error->to_string();
  EXPECT_EQ(r.error->code, "actor.request_timeout");
  EXPECT_EQ(source_log_.work_requests, 7);
}

}  // namespace
}  // namespace cuda_agent
