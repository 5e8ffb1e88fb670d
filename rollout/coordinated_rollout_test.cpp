// The coordinated rollout loop (rollout/coordinated_rollout.h) against a scripted WorkSource, the
// replay policy and fake tools: assignments run with the assignment's stage and policy version and
// are submitted with the exact trajectory; "none now" is asked again; "run finished" ends every
// slot; a store failure or a transport error is submitted again until acknowledged or past the
// deadline; superseded and unknown answers are dropped after one try; an assignment that cannot
// be prepared is submitted as aborted; a stop cuts an episode in flight without submitting it; an
// episode whose policy server went away is rerun once the server answers (and submitted aborted
// past the wait, or for any other abort); every episode samples with a seed of its own ids.
#include "rollout/coordinated_rollout.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "actors/actor_runtime.h"
#include "rollout/rollout_test_fakes.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;

// The process's actor system (one for every test here, as in a product process).
caf::actor_system& actors() {
  static ActorRuntime runtime({.scheduler_threads = 2});
  return runtime.system();
}

Assignment assignment(int n, std::uint32_t attempt = 1) {
  return {.episode_id = EpisodeId{"e" + std::to_string(n)},
          .task_id = TaskId{"t/" + std::to_string(n % 2)},
          .attempt = attempt,
          .policy_version = PolicyVersion{11},
          .stage = EpisodeStage::kAgenticPpo};
}

WorkReply assigned(int n) { return {.assigned = true, .assignment = assignment(n)}; }
WorkReply none_now(std::int64_t retry_ms) {
  return {.retry_after_ms = retry_ms, .reason = "staleness bound: waiting for policy version 12"};
}

// A coordinator in a box: work replies from a script (then "run finished"), submission answers
// from `answer` (default: acknowledged), everything it was sent recorded.
class ScriptedWorkSource final : public WorkSource {
 public:
  std::deque<Expected<WorkReply>> script;
  /// Decides the answer to the k-th submission (1-based); empty: kAcknowledged.
  std::function<Expected<SubmitReply>(int k, const TrajectorySubmission&)> answer;

  /// Called after each request_work was answered; may be empty.
  std::function<void()> on_request;

  Expected<WorkReply> request_work() override {
    Expected<WorkReply> r = WorkReply{.retry_after_ms = 0, .reason = "run finished"};
    {
      std::lock_guard lock(mutex_);
      ++requests_;
      if (!script.empty()) {
        r = script.front();
        script.pop_front();
      }
    }
    if (on_request) on_request();
    return r;
  }
  Expected<SubmitReply> submit(const TrajectorySubmission& s) override {
    int k = 0;
    {
      std::lock_guard lock(mutex_);
      submitted_.push_back(s);
      k = static_cast<int>(submitted_.size());
    }
    if (answer) return answer(k, s);
    return SubmitReply{.episode_id = s.episode.episode_id, .status = SubmitStatus::kAcknowledged};
  }
  std::vector<TrajectorySubmission> submitted() const {
    std::lock_guard lock(mutex_);
    return submitted_;
  }
  int requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<TrajectorySubmission> submitted_;
  int requests_ = 0;
};

// Prepares episode "e<n>" as fake_prepared_episode(n); task "missing" cannot be prepared.
PrepareAssignment fake_prepare(std::function<void()> in_compile = {}) {
  return [in_compile](const Assignment& a) -> Expected<PreparedEpisode> {
    if (a.task_id.value() == "missing")
      return make_error(ErrorCategory::kNotFound, "rollout.task",
                        "task 'missing' is not in this worker's train set");
    return testing::fake_prepared_episode(std::stoi(a.episode_id.value().substr(1)), in_compile);
  };
}

// The seed of every policy request, per episode, across slots.
struct SeedLog {
  std::mutex mutex;
  std::map<std::string, std::vector<std::uint64_t>> seeds;
};

// An episode's policy as a test scripts it: the first `answers` calls go to `inner`, every later
// one fails with `failure` (when set: e.g. the policy server was killed mid-episode); the seed of
// every request goes to `log` (may be null).
class ScriptedPolicy final : public PolicyBackend {
 public:
  ScriptedPolicy(std::unique_ptr<PolicyBackend> inner, std::string episode,
                 std::optional<Error> failure, int answers, SeedLog* log)
      : inner_(std::move(inner)),
        episode_(std::move(episode)),
        failure_(std::move(failure)),
        answers_(answers),
        log_(log) {}
  Expected<PolicyTurn> next(const PolicyRequest& request) override {
    if (log_) {
      std::lock_guard lock(log_->mutex);
      log_->seeds[episode_].push_back(request.seed);
    }
    if (failure_ && calls_++ >= answers_) return *failure_;
    return inner_->next(request);
  }
  std::string describe() const override { return "scripted " + inner_->describe(); }

 private:
  std::unique_ptr<PolicyBackend> inner_;
  std::string episode_;
  std::optional<Error> failure_;
  int answers_ = 0;
  int calls_ = 0;
  SeedLog* log_;
};

// fake_prepared_episode(n) with its policy behind a ScriptedPolicy.
Expected<PreparedEpisode> scripted_episode(const Assignment& a, std::optional<Error> failure,
                                           int answers, SeedLog* log) {
  ASSIGN_OR_RETURN(PreparedEpisode p,
                   testing::fake_prepared_episode(std::stoi(a.episode_id.value().substr(1))));
  p.policy = std::make_unique<ScriptedPolicy>(std::move(p.policy), a.episode_id.value(),
                                              std::move(failure), answers, log);
  p.spec.policy = p.policy.get();
  return p;
}

// What OpenAiPolicy returns when the engine was killed mid-request (rollout/http_post.cpp).
Error connection_reset() {
  return make_error(ErrorCategory::kUnavailable, "http.transport",
                    "POST http://127.0.0.1:5570/v1/chat/completions: Recv failure: Connection "
                    "reset by peer (gave up after the attempts or deadline of openai)");
}

CoordinatedRolloutOptions options(std::int64_t slots = 2) {
  return {.worker_id = WorkerId{"w1"},
          .concurrent_episodes = slots,
          .max_idle_wait_ms = 1'000,
          .submit_deadline_ms = 5'000,
          .request_deadline_ms = 5'000,
          .retry_initial_ms = 1};
}

TEST(CoordinatedRollout, RunsAssignmentsAndSubmitsExactTrajectories) {
  ScriptedWorkSource source;
  for (int n = 0; n < 5; ++n) source.script.push_back(assigned(n));
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(3));
  std::atomic<int> finished{0};
  const CoordinatedReport r = loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) {
                                         EXPECT_EQ(a.outcome, AssignmentOutcome::kAcknowledged);
                                         EXPECT_EQ(a.final_reward_tier, 2);
                                         ++finished;
                                       }});
  EXPECT_EQ(r.acknowledged, 5u);
  EXPECT_TRUE(r.run_finished);
  EXPECT_FALSE(r.error);
  EXPECT_EQ(finished, 5);
  const auto subs = source.submitted();
  ASSERT_EQ(subs.size(), 5u);
  std::set<std::string> ids;
  for (const TrajectorySubmission& s : subs) {
    ids.insert(s.episode.episode_id.value());
    EXPECT_EQ(s.worker, WorkerId{"w1"});
    EXPECT_EQ(s.attempt, 1u);
    EXPECT_EQ(s.episode.run_id, RunId{"run-1"});
    EXPECT_EQ(s.episode.stage, EpisodeStage::kAgenticPpo);
    EXPECT_EQ(s.episode.policy_version, PolicyVersion{11});  // the assignment's, not the spec's
    EXPECT_EQ(s.episode.final_reward, 2);
    auto e = decode_episode(s.episode.trajectory_bytes);
    ASSERT_TRUE(e) << e.error().to_string();
    const int n = std::stoi(s.episode.episode_id.value().substr(1));
    EXPECT_EQ(e->task_id, TaskId{"t/" + std::to_string(n % 2)});
    int turn = 0;
    for (const Turn& t : e->turns) {
      if (t.role != TurnRole::kAssistant) continue;
      const auto want = testing::fake_tokens(n, turn);
      EXPECT_EQ(t.token_ids, std::vector<std::uint32_t>(want.begin(), want.end()));
      EXPECT_EQ(t.logprobs, testing::fake_logprobs(turn));
      ++turn;
    }
    EXPECT_EQ(turn, 2);
    // The bench's record of the final evaluation travels with the episode: artifact hash and
    // audit, under the episode's own ids, with the episode's reward.
    ASSERT_EQ(s.evaluations.size(), 1u);
    const EvaluationRecord& ev = s.evaluations[0];
    EXPECT_EQ(ev.evaluation_id, EvaluationId{s.episode.episode_id.value()});
    EXPECT_EQ(ev.episode_id, s.episode.episode_id);
    EXPECT_EQ(ev.run_id, RunId{"run-1"});
    EXPECT_EQ(ev.task_id, s.episode.task_id);
    EXPECT_EQ(ev.artifact_hash, "artifact-hash-fake");
    EXPECT_EQ(ev.reward, 2);
    auto audit = decode_audit_record(ev.audit);
    ASSERT_TRUE(audit) << "no audit with the evaluation: " << audit.error().to_string();
    EXPECT_EQ(audit->gpu_name, "Fake GPU");
    EXPECT_EQ(s.baselines.size(), 1u);
  }
  EXPECT_EQ(ids.size(), 5u);
}

// A coordinator whose admission stays closed for the first `closed` requests: it records which
// thread asked each of them, then hands out `episodes` assignments, then "run finished".
class ClosedAdmissionSource final : public WorkSource {
 public:
  ClosedAdmissionSource(int closed, int episodes) : closed_(closed), episodes_(episodes) {}
  Expected<WorkReply> request_work() override {
    std::lock_guard lock(mutex_);
    if (asked_.size() < static_cast<std::size_t>(closed_)) {
      asked_.push_back(std::this_thread::get_id());
      return none_now(20);
    }
    if (assigned_ < episodes_) return assigned(assigned_++);
    return WorkReply{.reason = "run finished"};
  }
  Expected<SubmitReply> submit(const TrajectorySubmission& s) override {
    return SubmitReply{.episode_id = s.episode.episode_id, .status = SubmitStatus::kAcknowledged};
  }
  std::vector<std::thread::id> asked() const {
    std::lock_guard lock(mutex_);
    return asked_;
  }

 private:
  const int closed_, episodes_;
  mutable std::mutex mutex_;
  std::vector<std::thread::id> asked_;
  int assigned_ = 0;
};

// While admission is closed the worker polls with one request (counted exactly in
// rollout_worker_actor_test.cpp); its assignment opens admission again, and every episode runs.
TEST(CoordinatedRollout, WhileAdmissionIsClosedOneSlotPollsForTheWorker) {
  ClosedAdmissionSource source(/*closed=*/14, /*episodes=*/6);
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(4));
  const CoordinatedReport r = loop.run(RunId{"run-1"}, {});
  EXPECT_EQ(r.acknowledged, 6u);
  EXPECT_TRUE(r.run_finished);
  EXPECT_EQ(source.asked().size(), 14u);
}

TEST(CoordinatedRollout, NoneNowIsAskedAgainAndFinishedEndsEverySlot) {
  ScriptedWorkSource source;
  source.script = {none_now(5), none_now(5), assigned(0), none_now(5), assigned(1)};
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(1));
  const CoordinatedReport r = loop.run(RunId{"run-1"});
  EXPECT_EQ(r.acknowledged, 2u);
  EXPECT_TRUE(r.run_finished);
  EXPECT_EQ(source.requests(), 6);  // the script, then "run finished" once
}

TEST(CoordinatedRollout, StoreFailureAndTransportErrorAreSubmittedAgain) {
  ScriptedWorkSource source;
  source.script = {assigned(0)};
  source.answer = [](int k, const TrajectorySubmission& s) -> Expected<SubmitReply> {
    if (k == 1)
      return SubmitReply{.episode_id = s.episode.episode_id,
                         .status = SubmitStatus::kStoreFailed,
                         .message = "rocksdb: disk full"};
    if (k == 2)
      return make_error(ErrorCategory::kTimeout, "coordinator.timeout", "no reply in 30 s");
    return SubmitReply{.episode_id = s.episode.episode_id, .status = SubmitStatus::kAcknowledged};
  };
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(1));
  std::vector<AssignmentResult> results;
  const CoordinatedReport r =
      loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) { results.push_back(a); }});
  EXPECT_EQ(r.acknowledged, 1u);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].submit_tries, 3u);
  const auto subs = source.submitted();
  ASSERT_EQ(subs.size(), 3u);  // the same submission each time
  EXPECT_EQ(subs[0].episode.trajectory_bytes, subs[2].episode.trajectory_bytes);
  EXPECT_EQ(subs[0].attempt, subs[2].attempt);
}

TEST(CoordinatedRollout, SubmissionGivesUpAtItsDeadline) {
  ScriptedWorkSource source;
  source.script = {assigned(0)};
  source.answer = [](int, const TrajectorySubmission& s) -> Expected<SubmitReply> {
    return SubmitReply{.episode_id = s.episode.episode_id, .status = SubmitStatus::kStoreFailed};
  };
  CoordinatedRolloutOptions o = options(1);
  o.submit_deadline_ms = 50;
  CoordinatedRollout loop(actors(), source, fake_prepare(), o);
  std::optional<AssignmentResult> result;
  const CoordinatedReport r =
      loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) { result = a; }});
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.acknowledged, 0u);
  ASSERT_TRUE(result && result->error);
  EXPECT_EQ(result->error->code, "rollout.store_failed");
  EXPECT_GT(result->submit_tries, 1u);
  EXPECT_NE(result->error->message.find("e0"), std::string::npos) << result->error->message;
}

TEST(CoordinatedRollout, SupersededAndUnknownAreDroppedAfterOneTry) {
  ScriptedWorkSource source;
  source.script = {assigned(0), assigned(1)};
  source.answer = [](int, const TrajectorySubmission& s) -> Expected<SubmitReply> {
    return SubmitReply{.episode_id = s.episode.episode_id,
                       .status = s.episode.episode_id.value() == "e0" ? SubmitStatus::kSuperseded
                                                                      : SubmitStatus::kUnknown,
                       .message = "not the attempt in flight"};
  };
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(1));
  const CoordinatedReport r = loop.run(RunId{"run-1"});
  EXPECT_EQ(r.superseded, 1u);
  EXPECT_EQ(r.unknown, 1u);
  EXPECT_EQ(r.acknowledged, 0u);
  EXPECT_EQ(source.submitted().size(), 2u);
  EXPECT_TRUE(r.run_finished);  // dropping one episode does not stop the worker
}

TEST(CoordinatedRollout, AnAssignmentThatCannotBePreparedIsSubmittedAborted) {
  ScriptedWorkSource source;
  WorkReply bad = assigned(3);
  bad.assignment.task_id = TaskId{"missing"};
  source.script = {bad};
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(1));
  std::optional<AssignmentResult> result;
  const CoordinatedReport r =
      loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) { result = a; }});
  EXPECT_EQ(r.acknowledged, 1u);
  EXPECT_EQ(r.not_prepared, 1u);
  ASSERT_TRUE(result && result->not_prepared && result->error);
  EXPECT_EQ(result->error->code, "rollout.task");
  const auto subs = source.submitted();
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].episode.status, EpisodeStatus::kAborted);
  EXPECT_EQ(subs[0].episode.final_reward, 0);
  EXPECT_EQ(subs[0].episode.policy_version, PolicyVersion{11});
  auto e = decode_episode(subs[0].episode.trajectory_bytes);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->turns.empty());
}

TEST(CoordinatedRollout, StopCutsAnEpisodeInFlightWithoutSubmittingIt) {
  ScriptedWorkSource source;
  for (int n = 0; n < 4; ++n) source.script.push_back(assigned(n));
  std::mutex m;
  std::condition_variable cv;
  bool in_tool = false;
  bool release = false;
  // The episode's first compile waits until the test has stopped the loop; its next policy call
  // is then refused.
  CoordinatedRollout* loop_ptr = nullptr;
  auto hold = [&] {
    std::unique_lock lock(m);
    in_tool = true;
    cv.notify_all();
    cv.wait_for(lock, 10s, [&] { return release; });
  };
  CoordinatedRollout loop(actors(), source, fake_prepare(hold), options(1));
  loop_ptr = &loop;
  CoordinatedReport r;
  std::thread runner([&] { r = loop.run(RunId{"run-1"}); });
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return in_tool; }));
    loop_ptr->request_stop();
    release = true;
    cv.notify_all();
  }
  runner.join();
  EXPECT_EQ(r.stopped, 1u);
  EXPECT_EQ(r.acknowledged, 0u);
  EXPECT_TRUE(source.submitted().empty());
  EXPECT_EQ(source.requests(), 1);  // nothing asked after the stop
  EXPECT_FALSE(r.run_finished);
}

TEST(CoordinatedRollout, AStopEndsAWaitForWork) {
  ScriptedWorkSource source;
  source.script = {none_now(60'000)};
  std::mutex m;
  std::condition_variable cv;
  bool asked = false;
  source.on_request = [&] {
    std::lock_guard lock(m);
    asked = true;
    cv.notify_all();
  };
  CoordinatedRolloutOptions o = options(1);
  o.max_idle_wait_ms = 60'000;
  CoordinatedRollout loop(actors(), source, fake_prepare(), o);
  CoordinatedReport r;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread runner([&] { r = loop.run(RunId{"run-1"}); });
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return asked; }));
  }
  loop.request_stop();  // the slot waits (or is about to wait) out the 60 s hint
  runner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  EXPECT_EQ(source.requests(), 1);  // not asked again after the stop
  EXPECT_FALSE(r.run_finished);
}

// A coordinator that never answers (it finished and exited while a slot was asking): the stop
// cancels the slot's request instead of waiting out its request timeout.
class SilentWorkSource final : public WorkSource {
 public:
  Expected<WorkReply> request_work() override {
    std::unique_lock lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait_for(lock, 60s, [&] { return cancelled_; });
    return make_error(ErrorCategory::kUnavailable, "coordinator.work_cancelled", "cancelled");
  }
  Expected<SubmitReply> submit(const TrajectorySubmission&) override {
    return make_error(ErrorCategory::kInternal, "test", "nothing is submitted here");
  }
  void cancel_work_requests() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    changed_.notify_all();
  }
  bool wait_until_asked(std::chrono::seconds within) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, within, [&] { return waiting_ > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool cancelled_ = false;
};

TEST(CoordinatedRollout, AStopCancelsAWorkRequestTheCoordinatorNeverAnswers) {
  SilentWorkSource source;
  CoordinatedRollout loop(actors(), source, fake_prepare(), options(2));
  CoordinatedReport r;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread runner([&] { r = loop.run(RunId{"run-1"}); });
  ASSERT_TRUE(source.wait_until_asked(10s));
  loop.request_stop();
  runner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "the stop waited for the request";
  EXPECT_FALSE(r.error) << r.error->to_string();
}

TEST(CoordinatedRollout, AnUnreachableCoordinatorEndsTheLoopWithItsError) {
  ScriptedWorkSource source;
  for (int k = 0; k < 10'000; ++k)
    source.script.push_back(
        make_error(ErrorCategory::kUnavailable, "coordinator.unreachable", "connection refused"));
  CoordinatedRolloutOptions o = options(2);
  o.request_deadline_ms = 30;
  CoordinatedRollout loop(actors(), source, fake_prepare(), o);
  const CoordinatedReport r = loop.run(RunId{"run-1"});
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, "coordinator.unreachable");
  EXPECT_NE(r.error->message.find("without a break"), std::string::npos);
  EXPECT_FALSE(r.run_finished);
}

// The coordinator goes away while admission is closed: the poll is not handed from slot to slot
// (each would wait out its own deadline in turn); every slot retries and gives up together.
TEST(CoordinatedRollout, ACoordinatorLostWhileAdmissionIsClosedEndsEverySlotAtOnce) {
  ScriptedWorkSource source;
  for (int k = 0; k < 8; ++k) source.script.push_back(none_now(5));
  for (int k = 0; k < 100'000; ++k)
    source.script.push_back(
        make_error(ErrorCategory::kUnavailable, "coordinator.unreachable", "connection refused"));
  CoordinatedRolloutOptions o = options(8);
  o.request_deadline_ms = 400;
  CoordinatedRollout loop(actors(), source, fake_prepare(), o);
  const auto t0 = std::chrono::steady_clock::now();
  const CoordinatedReport r = loop.run(RunId{"run-1"});
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, "coordinator.unreachable");
  // One slot after another would take 8 x 400 ms; together, about one deadline.
  EXPECT_LT(took, std::chrono::milliseconds(2'400));
}

// The engine is killed during the episode's second policy call: the aborted run is not
// submitted; once the server answers /health again (the third probe), the same assignment runs
// from a fresh prepare, with the same seeds, and only that run is submitted.
TEST(CoordinatedRollout, AnEpisodeWhosePolicyServerWentAwayRunsAgainOnceItAnswers) {
  ScriptedWorkSource source;
  source.script = {assigned(0)};
  SeedLog seeds;
  std::atomic<int> prepares{0};
  PrepareAssignment prepare = [&](const Assignment& a) -> Expected<PreparedEpisode> {
    const bool first = prepares++ == 0;
    return scripted_episode(a, first ? std::optional<Error>(connection_reset()) : std::nullopt,
                            /*answers=*/1, &seeds);
  };
  std::atomic<int> probes{0};
  CoordinatedRollout loop(actors(), source, prepare, options(1), [&] { return ++probes >= 3; });
  std::optional<AssignmentResult> result;
  const CoordinatedReport r =
      loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) { result = a; }});
  EXPECT_EQ(r.acknowledged, 1u);
  EXPECT_EQ(prepares, 2);
  EXPECT_EQ(probes, 3);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, AssignmentOutcome::kAcknowledged);
  EXPECT_EQ(result->policy_reruns, 1u);
  EXPECT_TRUE(result->abort_reason.empty()) << result->abort_reason;
  const auto subs = source.submitted();
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].episode.episode_id, EpisodeId{"e0"});
  EXPECT_EQ(subs[0].episode.status, EpisodeStatus::kCompleted);
  EXPECT_EQ(subs[0].episode.final_reward, 2);
  // Both runs asked for the same seeds: the rerun samples what the first run would have.
  const std::uint64_t seed = episode_sampling_seed(RunId{"run-1"}, EpisodeId{"e0"});
  EXPECT_EQ(seeds.seeds["e0"], (std::vector<std::uint64_t>{seed, seed + 1, seed, seed + 1}));
}

// Past policy_wait_ms without an answer, the aborted episode is submitted as before.
TEST(CoordinatedRollout, AnEpisodeWhosePolicyServerStaysAwayIsSubmittedAborted) {
  ScriptedWorkSource source;
  source.script = {assigned(0)};
  std::atomic<int> prepares{0};
  PrepareAssignment prepare = [&](const Assignment& a) {
    ++prepares;
    return scripted_episode(a, connection_reset(), /*answers=*/0, nullptr);
  };
  CoordinatedRolloutOptions o = options(1);
  o.policy_wait_ms = 30;
  std::atomic<int> probes{0};
  CoordinatedRollout loop(actors(), source, prepare, o, [&] {
    ++probes;
    return false;
  });
  std::optional<AssignmentResult> result;
  const CoordinatedReport r =
      loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) { result = a; }});
  EXPECT_EQ(r.acknowledged, 1u);
  EXPECT_EQ(prepares, 1);
  EXPECT_GE(probes, 1);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->policy_reruns, 0u);
  EXPECT_NE(result->abort_reason.find("http.transport"), std::string::npos) << result->abort_reason;
  const auto subs = source.submitted();
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].episode.status, EpisodeStatus::kAborted);
}

// An abort the server answered (a 400: the context is over the limit) is the episode's own
// result: submitted aborted at once, the server not probed.
TEST(CoordinatedRollout, AnAbortThatIsNotAGoneServerIsSubmittedAtOnce) {
  ScriptedWorkSource source;
  source.script = {assigned(0)};
  PrepareAssignment prepare = [](const Assignment& a) {
    return scripted_episode(a,
                            make_error(ErrorCategory::kInvalidInput, "policy.http_400",
                                       "POST ... answered 400: engine.context_limit"),
                            /*answers=*/1, nullptr);
  };
  std::atomic<int> probes{0};
  CoordinatedRollout loop(actors(), source, prepare, options(1), [&] { return ++probes > 0; });
  std::optional<AssignmentResult> result;
  loop.run(RunId{"run-1"}, {.on_finished = [&](const auto& a) { result = a; }});
  EXPECT_EQ(probes, 0);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->policy_reruns, 0u);
  const auto subs = source.submitted();
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].episode.status, EpisodeStatus::kAborted);
}

TEST(CoordinatedRollout, PolicyServerGoneMeansNoServerNotARefusal) {
  auto gone = [](const char* code) {
    return policy_server_gone(make_error(ErrorCategory::kUnavailable, code, "x"));
  };
  EXPECT_TRUE(gone("http.connect"));
  EXPECT_TRUE(gone("http.transport"));
  EXPECT_TRUE(gone("policy.http_502"));
  EXPECT_TRUE(gone("policy.http_503"));
  EXPECT_FALSE(gone("http.timeout"));
  EXPECT_FALSE(gone("policy.http_400"));
  EXPECT_FALSE(gone("policy.http_500"));
  EXPECT_FALSE(gone("policy.malformed_reply"));
  EXPECT_FALSE(gone("rollout.stopped"));
}

// Every episode's seed is a function of (run, episode): equal for the same pair, different across
// episodes and runs, never 0 (no seed) and below 2^63; it is what the policy is asked for.
TEST(CoordinatedRollout, EpisodeSeedsComeFromTheRunAndEpisodeIds) {
  const std::uint64_t a = episode_sampling_seed(RunId{"run-1"}, EpisodeId{"e0"});
  EXPECT_EQ(a, episode_sampling_seed(RunId{"run-1"}, EpisodeId{"e0"}));
  EXPECT_NE(a, episode_sampling_seed(RunId{"run-1"}, EpisodeId{"e1"}));
  EXPECT_NE(a, episode_sampling_seed(RunId{"run-2"}, EpisodeId{"e0"}));
  std::set<std::uint64_t> seen;
  for (int n = 0; n < 1000; ++n) {
    const std::uint64_t s =
        episode_sampling_seed(RunId{"run-1"}, EpisodeId{"e" + std::to_string(n)});
    EXPECT_NE(s, 0u);
    EXPECT_LT(s, std::uint64_t{1} << 63);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 1000u);

  ScriptedWorkSource source;
  source.script = {assigned(0), assigned(1), assigned(2)};
  SeedLog seeds;
  PrepareAssignment prepare = [&](const Assignment& as) {
    return scripted_episode(as, std::nullopt, 0, &seeds);
  };
  CoordinatedRollout loop(actors(), source, prepare, options(2));
  EXPECT_EQ(loop.run(RunId{"run-1"}).acknowledged, 3u);
  for (int n = 0; n < 3; ++n) {
    const std::string e = "e" + std::to_string(n);
    const std::uint64_t s = episode_sampling_seed(RunId{"run-1"}, EpisodeId{e});
    EXPECT_EQ(seeds.seeds[e], (std::vector<std::uint64_t>{s, s + 1})) << e;
  }
}

}  // namespace
}  // namespace cuda_agent
