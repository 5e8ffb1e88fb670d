// Deterministic tests of the coordinator's protocol on CAF's test coordinator: every message is
// delivered when the test runs the scheduler, time moves only when the test advances it, and the
// fake store completes a write only when the test says so. Each test names the interleaving.
#include "coordinator/coordinator_actor.h"

#include "coordinator/actor_test_fixture.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using coord_test::CoordinatorActorTest;
using coord_test::fake_subscriber;
using coord_test::kRun;
using coord_test::LearnerLog;

// Interleaving: two asks fill version 0's batch (B = 2, S = 0); a third gets "none now"; the step
// runs and its write is pending: still none; the write completes: version 1 is published and
// admits the next batch.
TEST_F(CoordinatorActorTest, WorkIsHandedOutUnderTheBound) {
  start(options(2, 0));
  std::vector<PolicyVersion> seen;
  auto sub = sys_->spawn(fake_subscriber, &seen);
  spawned_.push_back(caf::actor_cast<caf::actor>(sub));
  caf::anon_send(coord_, subscribe_atom::value, sub);
  WorkReply a = ask("w1"), b = ask("w2"), c = ask("w3");
  ASSERT_TRUE(a.assigned && b.assigned);
  EXPECT_EQ(a.assignment.policy_version, PolicyVersion{0});
  EXPECT_NE(a.assignment.episode_id, b.assignment.episode_id);
  EXPECT_FALSE(c.assigned);
  EXPECT_EQ(c.retry_after_ms, 1000);
  EXPECT_NE(c.reason.find("staleness bound"), std::string::npos);
  EXPECT_EQ(submit("w1", a.assignment).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(submit("w2", b.assignment).status, SubmitStatus::kAcknowledged);
  LearnerLog log;
  attach_learner(&log);
  ASSERT_EQ(log.steps.size(), 1u);
  ASSERT_EQ(store_.pending.size(), 1u) << "the step's write";
  EXPECT_FALSE(ask("w3").assigned) << "version 1 is not durable yet";
  store_.complete_next();
  sched_->run();
  EXPECT_EQ(seen, (std::vector<PolicyVersion>{PolicyVersion{0}, PolicyVersion{1}}));
  WorkReply d = ask("w3");
  ASSERT_TRUE(d.assigned);
  EXPECT_EQ(d.assignment.policy_version, PolicyVersion{1});
  ASSERT_TRUE(store_.runs.count(kRun));
  EXPECT_EQ(store_.runs[kRun].policy_version, PolicyVersion{1});
  EXPECT_EQ(store_.runs[kRun].coordinator_state->last_step_episodes,
            (std::vector<EpisodeId>{a.assignment.episode_id, b.assignment.episode_id}));
}

// Idle shares per step, sampled on the 1 s ticks: 3 s with episodes in flight and no step,
// then 2 s of a step with nothing in flight: the step records learner idle 3/5, rollout 2/5.
// (The first learner holds the step and dies; the second answers at once.)
TEST_F(CoordinatorActorTest, EachStepRecordsTheIdleShareOfLearnerAndRollout) {
  start(options(2, 0));
  auto tick = [&] {
    sched_->advance_time(1s);
    sched_->run();
  };
  tick();  // the first tick only starts the clock
  Assignment a = ask("w1").assignment, b = ask("w2").assignment;
  for (int i = 0; i < 3; ++i) tick();
  EXPECT_EQ(submit("w1", a).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(submit("w2", b).status, SubmitStatus::kAcknowledged);
  LearnerLog holding;  // takes the step and never answers; then dies, and another learner does it
  holding.hold = true;
  learner_peer first = attach_learner(&holding);
  for (int i = 0; i < 2; ++i) tick();
  ASSERT_EQ(holding.held.size(), 1u);
  caf::anon_send_exit(first, caf::exit_reason::kill);
  sched_->run();
  LearnerLog log;
  attach_learner(&log);
  ASSERT_EQ(log.steps.size(), 1u);
  store_.complete_all();
  sched_->run();
  std::map<std::string, double> m;
  for (const MetricRecord& r : store_.metrics) m[r.name] = r.value;
  EXPECT_DOUBLE_EQ(m.at("coordinator/window_seconds"), 5.0);
  EXPECT_DOUBLE_EQ(m.at("idle/learner"), 0.6);
  EXPECT_DOUBLE_EQ(m.at("idle/rollout"), 0.4);
}

// Interleaving: submit -> the store has not called back -> no reply; the callback -> the reply.
TEST_F(CoordinatorActorTest, TrajectoryIsAcknowledgedOnlyAfterTheStoresCallback) {
  start(options(2, 1));
  Assignment a = ask("w1").assignment;
  auto rh = send_submit("w1", a);
  EXPECT_TRUE(no_reply_yet());
  ASSERT_EQ(store_.pending.size(), 1u);
  EXPECT_EQ(status().accepted, 0u);
  store_.complete_next();
  sched_->run();
  EXPECT_FALSE(no_reply_yet());
  EXPECT_EQ(reply(rh).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(status().accepted, 1u);
  ASSERT_EQ(store_.episodes.size(), 1u);

  // A failed write is reported so the worker keeps the trajectory and retries.
  Assignment b = ask("w1").assignment;
  auto rb = send_submit("w1", b);
  store_.complete_next(make_error(ErrorCategory::kIo, "store.io", "disk full"));
  sched_->run();
  EXPECT_EQ(reply(rb).status, SubmitStatus::kStoreFailed);
  EXPECT_EQ(submit("w1", b).status, SubmitStatus::kAcknowledged);
}

// A node agent's heartbeat that reports its node degraded shows in the status, and leaves it once
// a later heartbeat says the node is whole again.
TEST_F(CoordinatorActorTest, ADegradedNodeShowsInTheStatusUntilItReportsHealthy) {
  start(options(1, 0));
  beat("node-agent/b", MemberRole::kNodeAgent, "gave up learner");
  sched_->run();
  CoordinatorStatus s = status();
  EXPECT_EQ(s.degraded, std::vector<std::string>{"node-agent/b (node_agent): gave up learner"});
  beat("node-agent/b", MemberRole::kNodeAgent);
  sched_->run();
  EXPECT_TRUE(status().degraded.empty());
}

// Interleaving: w1 takes an episode and heartbeats once, then goes silent; w2 keeps beating.
// Suspect after 10 s, lost after 20 s: the episode is queued; w2 reruns it as attempt 2; w1's
// late attempt 1 is refused; the episode is stored and trained once.
TEST_F(CoordinatorActorTest, WorkerLostMidEpisodeIsRerunAsAttemptTwoAndCountedOnce) {
  start(options(1, 0));
  Assignment a = ask("w1").assignment;
  beat("w1", MemberRole::kRolloutWorker);
  sched_->run();
  EXPECT_FALSE(ask("w2").assigned) << "B = 1, S = 0: the only slot is w1's";
  seconds(22, [&] { beat("w2", MemberRole::kRolloutWorker); });
  EXPECT_EQ(status().queued, 1u);
  WorkReply rerun = ask("w2");
  ASSERT_TRUE(rerun.assigned);
  EXPECT_EQ(rerun.assignment.episode_id, a.episode_id);
  EXPECT_EQ(rerun.assignment.attempt, 2u);
  EXPECT_EQ(submit("w1", a).status, SubmitStatus::kSuperseded);
  EXPECT_EQ(submit("w2", rerun.assignment).status, SubmitStatus::kAcknowledged);
  LearnerLog log;
  attach_learner(&log);
  pump();
  ASSERT_EQ(log.steps.size(), 1u);
  EXPECT_EQ(log.steps[0].episodes, std::vector<EpisodeId>{a.episode_id});
  CoordinatorStatus st = status();
  EXPECT_EQ(st.trained, 1u);
  EXPECT_EQ(st.queued + st.in_flight + st.waiting, 0u);
  EXPECT_EQ(store_.episodes.size(), 1u);
}

// Interleaving: S = 0 over a two-stage plan (single-turn 2 steps, then agentic 2 steps), workers
// finishing in reverse order. Rule: every episode trained in step k was dispatched at version k
// (the version step k trains from), so no episode of version v is trained in any step but v.
TEST_F(CoordinatorActorTest, ZeroStalenessIsSynchronousPpoAcrossStages) {
  CoordinatorOptions o =
      options(3, 0, {{EpisodeStage::kSingleTurnWarmup, 2}, {EpisodeStage::kAgenticPpo, 2}});
  o.checkpoint_every_steps = 2;
  start(o);
  LearnerLog log;
  attach_learner(&log);
  std::map<EpisodeId, Assignment> dispatched;
  for (int round = 0; round < 8 && !status().finished; ++round) {
    std::vector<Assignment> got;
    for (int w = 0; w < 5; ++w) {
      WorkReply r = ask("w" + std::to_string(w));
      if (r.assigned) got.push_back(r.assignment);
    }
    EXPECT_LE(got.size(), 3u) << "one batch per version";
    for (auto it = got.rbegin(); it != got.rend(); ++it) {
      dispatched[it->episode_id] = *it;
      EXPECT_EQ(submit("w", *it).status, SubmitStatus::kAcknowledged);
    }
    pump();
  }
  ASSERT_TRUE(status().finished);
  ASSERT_EQ(log.steps.size(), 4u);
  for (const TrainStep& s : log.steps) {
    EXPECT_EQ(s.version, PolicyVersion{s.step});
    EXPECT_EQ(s.stage, s.step < 2 ? EpisodeStage::kSingleTurnWarmup : EpisodeStage::kAgenticPpo);
    ASSERT_EQ(s.episodes.size(), 3u);
    for (const EpisodeId& id : s.episodes) {
      EXPECT_EQ(dispatched.at(id).policy_version, s.version) << id.value();
      EXPECT_EQ(dispatched.at(id).stage, s.stage);
    }
    // The replay holds the steps since the last checkpoint (every 2 steps): none for steps 0
    // and 2, the step before for 1 and 3.
    ASSERT_EQ(s.replay.size(), s.step % 2) << "step " << s.step;
    if (!s.replay.empty()) {
      EXPECT_EQ(s.replay[0].step, s.step - 1);
      EXPECT_EQ(s.replay[0].episodes, log.steps[s.step - 1].episodes);
    }
  }
  EXPECT_TRUE(store_.checkpoints.at(4).coordinator_state->steps_since_checkpoint.empty());
  EXPECT_EQ(log.checkpoints.size(), 2u);
  ASSERT_EQ(store_.checkpoints.size(), 2u);
  EXPECT_TRUE(store_.checkpoints.at(4).coordinator_state);
  EXPECT_EQ(store_.checkpoints.at(4).coordinator_state->step, 4u);
  EXPECT_EQ(store_.runs[kRun].state, "finished");
  EXPECT_FALSE(ask("w0").assigned);
  EXPECT_EQ(status().trained, 12u);
  EXPECT_EQ(status().stale, 0u);
}

// Interleaving: step 0 recorded (e2 in flight in the saved state); then e3 dispatched and stored;
// the coordinator is killed; a new one starts from the store: step and version come back, e3 is
// waiting (nothing acknowledged lost), e2 is queued and rerun as attempt 2.
TEST_F(CoordinatorActorTest, RestartFromTheStoreRebuildsState) {
  start(options(2, 1));
  std::vector<Assignment> e;
  for (int i = 0; i < 3; ++i) e.push_back(ask("w1").assignment);
  submit("w1", e[0]);
  submit("w1", e[1]);
  LearnerLog log;
  attach_learner(&log);
  pump();
  ASSERT_EQ(log.steps.size(), 1u);
  e.push_back(ask("w1").assignment);
  EXPECT_EQ(e[3].policy_version, PolicyVersion{1});
  EXPECT_EQ(submit("w1", e[3]).status, SubmitStatus::kAcknowledged);

  caf::anon_send_exit(coord_, caf::exit_reason::kill);
  sched_->run();
  start(options(2, 1));
  CoordinatorStatus st = status();
  EXPECT_EQ(st.step, 1u);
  EXPECT_EQ(st.version, PolicyVersion{1});
  EXPECT_EQ(st.trained, 2u);
  EXPECT_EQ(st.waiting, 1u);  // e3
  EXPECT_EQ(st.queued, 1u);   // e2
  EXPECT_EQ(st.in_flight, 0u);
  const std::uint64_t writes = store_.submitted;
  EXPECT_EQ(submit("w1", e[3]).status, SubmitStatus::kAcknowledged)
      << "a resubmission after restart";
  EXPECT_EQ(store_.submitted, writes);
  WorkReply rerun = ask("w2");
  ASSERT_TRUE(rerun.assigned);
  EXPECT_EQ(rerun.assignment.episode_id, e[2].episode_id);
  EXPECT_EQ(rerun.assignment.attempt, 2u);
  EXPECT_EQ(submit("w1", e[2]).status, SubmitStatus::kSuperseded);
  EXPECT_EQ(submit("w2", rerun.assignment).status, SubmitStatus::kAcknowledged);
  attach_learner(&log);
  pump();
  ASSERT_EQ(log.steps.size(), 2u);
  EXPECT_EQ(log.steps[1].step, 1u);
  // Both were dispatched at version 1 (a rerun counts from its new dispatch), listed in mint
  // order. No checkpoint yet: the step carries step 0's batch for a learner that lost it.
  EXPECT_EQ(log.steps[1].episodes, (std::vector<EpisodeId>{e[2].episode_id, e[3].episode_id}));
  ASSERT_EQ(log.steps[1].replay.size(), 1u);
  EXPECT_EQ(log.steps[1].replay[0].step, 0u);
  EXPECT_EQ(log.steps[1].replay[0].episodes, log.steps[0].episodes);
}

// Interleaving: the same trajectory arrives twice before the store calls back (one write, two
// acknowledgements after it), then a third time after (acknowledged at once, nothing written).
TEST_F(CoordinatorActorTest, DuplicateSubmissionIsAcknowledgedIdempotently) {
  start(options(2, 1));
  Assignment a = ask("w1").assignment;
  auto first = send_submit("w1", a);
  auto second = send_submit("w1", a);
  EXPECT_TRUE(no_reply_yet());
  EXPECT_EQ(store_.submitted, 1u);
  store_.complete_next();
  sched_->run();
  EXPECT_EQ(reply(first).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(reply(second).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(submit("w1", a).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(store_.submitted, 1u);
  EXPECT_EQ(status().accepted, 1u);
  Assignment forged = a;
  forged.task_id = TaskId{"suite/other"};
  EXPECT_EQ(submit("w1", forged).status, SubmitStatus::kUnknown);
}

// A final evaluation travels with its episode and is stored in the episode's write, audit record
// and baselines included; one that names another episode is refused and nothing is written.
TEST_F(CoordinatorActorTest, AFinalEvaluationIsStoredWithItsEpisodeAndMustNameIt) {
  start(options(2, 1));
  const Assignment a = ask("w1").assignment;
  TrajectorySubmission s{WorkerId{"w1"}, a.attempt, record(a)};
  s.evaluations.push_back({.evaluation_id = EvaluationId{a.episode_id.value()},
                           .run_id = kRun,
                           .task_id = a.task_id,
                           .episode_id = a.episode_id,
                           .artifact_hash = "artifact-1",
                           .reward = 2,
                           .verified = true,
                           .audit = "audit of " + a.episode_id.value()});
  s.baselines.push_back({.task_id = TaskId{"task-hash"}, .device = "GPU", .eager_ms = 1});
  const std::uint64_t writes = store_.submitted;

  TrajectorySubmission stray = s;
  stray.evaluations[0].episode_id = EpisodeId{"run/another-episode"};
  auto refused = send_submission(stray);
  pump();
  const SubmitReply no = reply(refused);
  EXPECT_EQ(no.status, SubmitStatus::kUnknown);
  EXPECT_NE(no.message.find("does not belong to episode"), std::string::npos) << no.message;
  EXPECT_EQ(store_.submitted, writes);

  auto stored = send_submission(s);
  pump();
  EXPECT_EQ(reply(stored).status, SubmitStatus::kAcknowledged);
  EXPECT_EQ(store_.submitted, writes + 1);
  ASSERT_EQ(store_.episodes.size(), 1u);
  ASSERT_EQ(store_.evaluations.size(), 1u);
  EXPECT_EQ(store_.evaluations[0].episode_id, a.episode_id);
  EXPECT_EQ(store_.evaluations[0].artifact_hash, "artifact-1");
  EXPECT_EQ(store_.evaluations[0].audit, "audit of " + a.episode_id.value());
  ASSERT_EQ(store_.baselines.size(), 1u);
  EXPECT_EQ(store_.baselines[0].device, "GPU");
}

// Interleaving: the learner dies while step 0 runs (monitor -> down) -> the batch goes back; a
// new learner is attached -> the same episodes are trained by step 0, once.
TEST_F(CoordinatorActorTest, ALearnerThatDiesMidStepGetsItsBatchOfferedAgain) {
  start(options(2, 1));
  Assignment a = ask("w").assignment, b = ask("w").assignment;
  submit("w", a);
  submit("w", b);
  LearnerLog holding;
  holding.hold = true;
  learner_peer first = attach_learner(&holding);
  ASSERT_EQ(holding.steps.size(), 1u);
  caf::anon_send_exit(first, caf::exit_reason::kill);
  sched_->run();
  EXPECT_EQ(status().waiting, 2u);
  LearnerLog log;
  attach_learner(&log);
  pump();
  ASSERT_EQ(log.steps.size(), 1u);
  EXPECT_EQ(log.steps[0].step, 0u);
  EXPECT_EQ(log.steps[0].episodes, holding.steps[0].episodes);
  EXPECT_EQ(status().trained, 2u);
}

// The last rollout worker is lost and its node agent reports it gave the process up: the run
// waits vacancy_timeout_ms (60 s here) from the loss, then fails with the reason instead of
// waiting for ever; workers asking afterwards are told why.
TEST_F(CoordinatorActorTest, ARunWithNoRolloutWorkerLeftFailsAfterTheVacancyTimeout) {
  CoordinatorOptions o = options(2, 0);
  o.vacancy_timeout_ms = 60'000ms;
  start(o);
  LearnerLog log;
  attach_learner(&log);
  ASSERT_TRUE(ask("w1").assigned);
  auto agent_and_learner = [&] {
    beat("node-agent/a", MemberRole::kNodeAgent, "gave up rollout-worker-0 after 5 restarts");
    beat("l", MemberRole::kLearner);
  };
  seconds(41, agent_and_learner);  // w1 never beat: lost 30 s + 10 s after its request
  EXPECT_EQ(status().queued, 1u) << "its episode waits for a rerun";
  seconds(55, agent_and_learner);  // 55 s vacant: not yet
  EXPECT_TRUE(status().failure.empty()) << status().failure;
  seconds(10, agent_and_learner);
  const std::string f = status().failure;
  EXPECT_NE(f.find("no rollout_worker has been alive for 6"), std::string::npos) << f;
  EXPECT_NE(f.find("node-agent/a (node_agent): gave up rollout-worker-0"), std::string::npos) << f;
  WorkReply late = ask("w2");
  EXPECT_FALSE(late.assigned);
  EXPECT_NE(late.reason.find("run failed: no rollout_worker"), std::string::npos) << late.reason;
}

// No learner ever attaches: the run fails after the vacancy timeout; with the timeout at 0 it
// waits for ever. A worker that keeps beating is no help.
TEST_F(CoordinatorActorTest, ARunWithNoLearnerFailsUnlessTheVacancyTimeoutIsOff) {
  for (const auto timeout : {60'000ms, 0ms}) {
    CoordinatorOptions o = options(2, 0);
    o.vacancy_timeout_ms = timeout;
    start(o);
    seconds(65, [&] { beat("w1", MemberRole::kRolloutWorker); });
    const std::string f = status().failure;
    if (timeout.count() == 0) {
      EXPECT_TRUE(f.empty()) << f;
    } else {
      EXPECT_NE(f.find("no learner has been alive for 6"), std::string::npos) << f;
      EXPECT_NE(f.find("no node reports itself degraded"), std::string::npos) << f;
    }
    caf::anon_send_exit(coord_, caf::exit_reason::user_shutdown);
    sched_->run();
  }
}

// An answer naming another step (a learner still answering a previous coordinator's request
// whose id collided) is not this batch's result: the batch is offered again, never left waiting.
TEST_F(CoordinatorActorTest, AnAnswerForAnotherStepGetsTheBatchOfferedAgain) {
  start(options(2, 1));
  Assignment a = ask("w").assignment, b = ask("w").assignment;
  submit("w", a);
  submit("w", b);
  LearnerLog log;
  log.wrong_step = 7;
  attach_learner(&log);
  EXPECT_EQ(status().version.value(), 0u) << "the wrong answer was recorded";
  EXPECT_EQ(status().trained, 0u);
  sched_->advance_time(1s);  // the next tick offers the batch again
  pump();
  ASSERT_EQ(log.steps.size(), 2u);
  EXPECT_EQ(log.steps[1].step, 0u);
  EXPECT_EQ(log.steps[1].episodes, log.steps[0].episodes);
  EXPECT_EQ(status().trained, 2u);
}

}  // namespace
}  // namespace cuda_agent
