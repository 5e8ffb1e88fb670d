// The rollout worker over a real run store (RocksDB in a temp dir), the replay backend and fake
// tools: episodes acknowledged with exact trajectories; tool waits hold no generation slot;
// resumption skips acknowledged episodes; recovery aborts a lost worker's attempts and reruns or
// gives them up; store errors are retried within a deadline. The multi-process SIGKILL case is
// tests/rollout_crash_test.cpp.
#include "rollout/rollout_worker.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "core/log.h"
#include "rollout/rollout_test_fakes.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using testing::FakeEvaluationTools;
using testing::FaultyRolloutStore;

// Jobs fake_job(0..count-1); `tools_hook` runs inside each compile.
std::vector<RolloutJob> make_jobs(int count, const std::function<void()>& tools_hook = {}) {
  std::vector<RolloutJob> jobs;
  for (int n = 0; n < count; ++n) jobs.push_back(testing::fake_job(n, tools_hook));
  return jobs;
}

// A run store in a temp dir named after the running test.
testing::TempStore temp_store() {
  return testing::TempStore(std::string("rollout_") +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// The stored trajectory of episode n is exactly what the transcript sampled.
void expect_trajectory(RunStore& store, const std::string& run, int n) {
  auto rec = store.get_episode(RunId{run}, EpisodeId{"e" + std::to_string(n)});
  ASSERT_TRUE(rec) << rec.error().to_string();
  auto e = decode_episode(rec->trajectory_bytes);
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->status, EpisodeStatus::kCompleted);
  EXPECT_EQ(e->final_reward, 2);
  std::vector<const Turn*> sampled;
  for (const Turn& t : e->turns) {
    EXPECT_EQ(t.policy_version, PolicyVersion{7});
    if (t.role == TurnRole::kAssistant) sampled.push_back(&t);
  }
  ASSERT_EQ(sampled.size(), 2u);
  for (int turn = 0; turn < 2; ++turn) {
    const auto want = testing::fake_tokens(n, turn);
    ASSERT_EQ(sampled[turn]->token_ids.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(sampled[turn]->token_ids[i], static_cast<std::uint32_t>(want[i]));
    EXPECT_EQ(sampled[turn]->logprobs, testing::fake_logprobs(turn));
    EXPECT_EQ(sampled[turn]->loss_mask, std::vector<std::uint8_t>(3, 1));
  }
  EXPECT_EQ(rec->policy_version, PolicyVersion{7});
}

TEST(RolloutWorker, AcknowledgesEveryEpisodeWithItsExactTrajectoryAndResumeSkipsThem) {
  (void)setup_logging({.level = "error"});
  testing::TempStore tmp = temp_store();
  ASSERT_TRUE(tmp.store);
  RunStoreRollout store(*tmp.store);
  RolloutWorker worker(store, {.worker_id = WorkerId{"w1"}, .concurrent_episodes = 3});
  std::atomic<int> started{0}, acked{0};
  RolloutHooks hooks{
      .on_started = [&](const EpisodeAttemptRecord&) { ++started; },
      .on_finished = [&](const JobResult& r) { acked += r.outcome == JobOutcome::kAcknowledged; }};
  RolloutReport r = worker.run(RunId{"run"}, make_jobs(7), hooks);
  EXPECT_EQ(r.count(JobOutcome::kAcknowledged), 7u);
  EXPECT_EQ(started.load(), 7);
  EXPECT_EQ(acked.load(), 7);
  for (int n = 0; n < 7; ++n) expect_trajectory(*tmp.store, "run", n);
  for (const auto& a : testing::attempts_of(*tmp.store, "run")) {
    EXPECT_EQ(a.attempt, 1u);
    EXPECT_EQ(a.state, AttemptState::kCommitted) << a.episode_id.value();
    EXPECT_EQ(a.worker_id.value(), "w1");
  }
  auto eval = tmp.store->get_evaluation(EvaluationId{"run/e3"});
  ASSERT_TRUE(eval);
  EXPECT_TRUE(eval->verified);
  EXPECT_EQ(eval->episode_id.value(), "e3");
  // The bench's record of the final evaluation, as the bench path stores one: artifact hash,
  // audit and the baselines it measured.
  EXPECT_EQ(eval->artifact_hash, "artifact-hash-fake");
  EXPECT_EQ(eval->reward, 2);
  auto audit = decode_audit_record(eval->audit);
  ASSERT_TRUE(audit) << "no audit stored with the evaluation: " << audit.error().to_string();
  EXPECT_EQ(audit->gpu_name, "Fake GPU");
  EXPECT_EQ(audit->checks_run, std::vector<std::string>{"tolerance[seed=1]"});
  auto baseline = tmp.store->get_baseline(TaskId{"task-hash-fake"}, "Fake GPU", "2.11", "");
  ASSERT_TRUE(baseline) << baseline.error().to_string();
  EXPECT_DOUBLE_EQ(baseline->eager_ms, 0.120);
  EXPECT_DOUBLE_EQ(baseline->compile_ms, 0.090);

  // Resume: nothing runs or is written again.
  const WriteStats before = tmp.store->write_stats();
  RolloutWorker again(store, {.worker_id = WorkerId{"w2"}});
  RolloutReport r2 = again.run(RunId{"run"}, make_jobs(7));
  EXPECT_EQ(r2.count(JobOutcome::kAlreadyStored), 7u);
  EXPECT_EQ(r2.jobs[4].summary.final_reward, 2);
  EXPECT_EQ(tmp.store->write_stats().acknowledged_writes, before.acknowledged_writes);
  EXPECT_EQ(*tmp.store->count_episodes(RunId{"run"}), 7u);
}

// One generation slot, three episodes: all three must be inside compile at once, which is only
// possible if an episode waiting on a tool holds no slot (otherwise the second episode could not
// generate its compile call and the rendezvous times out).
TEST(RolloutWorker, AnEpisodeWaitingOnAToolHoldsNoGenerationSlot) {
  (void)setup_logging({.level = "error"});
  testing::TempStore tmp = temp_store();
  ASSERT_TRUE(tmp.store);
  RunStoreRollout store(*tmp.store);
  std::mutex mu;
  std::condition_variable cv;
  int in_compile = 0;
  bool all_met = false;
  auto rendezvous = [&] {  // counts the episodes inside compile *at the same time*
    std::unique_lock lock(mu);
    if (++in_compile == 3) {
      all_met = true;
      cv.notify_all();
    }
    cv.wait_for(lock, 10s, [&] { return all_met; });
    --in_compile;
  };
  RolloutWorker worker(
      store, {.worker_id = WorkerId{"w"}, .concurrent_episodes = 3, .generation_slots = 1});
  RolloutReport r = worker.run(RunId{"run"}, make_jobs(3, rendezvous));
  EXPECT_TRUE(all_met) << "the episodes never were in compile together";
  EXPECT_EQ(r.count(JobOutcome::kAcknowledged), 3u);
  EXPECT_EQ(r.max_concurrent_generations, 1);
}

TEST(RolloutWorker, RecoveryAbortsALostWorkersAttemptsThenRerunsOrGivesUp) {
  (void)setup_logging({.level = "error"});
  testing::TempStore tmp = temp_store();
  ASSERT_TRUE(tmp.store);
  RunStoreRollout store(*tmp.store);
  auto mark = [](const std::string& episode, std::uint32_t n, AttemptState state) {
    return EpisodeAttemptRecord{.run_id = RunId{"run"},
                                .episode_id = EpisodeId{episode},
                                .attempt = n,
                                .task_id = TaskId{"t/0"},
                                .worker_id = WorkerId{"dead"},
                                .state = state};
  };
  StoreWrite w;
  w.attempts = {mark("e0", 1, AttemptState::kRunning), mark("e1", 1, AttemptState::kAborted),
                mark("e1", 2, AttemptState::kRunning)};
  ASSERT_TRUE(tmp.store->write(std::move(w), 10s));

  RolloutWorker worker(store, {.worker_id = WorkerId{"w"}, .max_attempts = 2});
  // A worker that is not lost keeps its attempts.
  auto none = worker.recover(RunId{"run"}, [](const WorkerId&) { return false; });
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->aborted.empty());
  auto rec = worker.recover(RunId{"run"}, worker.all_others_lost());
  ASSERT_TRUE(rec) << rec.error().to_string();
  ASSERT_EQ(rec->aborted.size(), 2u);

  RolloutReport r = worker.run(RunId{"run"}, make_jobs(3));
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kAcknowledged);  // rerun as attempt 2
  EXPECT_EQ(r.jobs[0].attempt, 2u);
  EXPECT_EQ(r.jobs[1].outcome, JobOutcome::kGivenUp);  // both attempts spent
  EXPECT_EQ(r.jobs[2].outcome, JobOutcome::kAcknowledged);
  EXPECT_EQ(r.jobs[2].attempt, 1u);
  auto given_up = tmp.store->get_episode_summary(RunId{"run"}, EpisodeId{"e1"});
  ASSERT_TRUE(given_up);
  EXPECT_EQ(given_up->status, EpisodeStatus::kAborted);
  EXPECT_EQ(*tmp.store->count_episodes(RunId{"run"}), 3u);

  auto all = testing::attempts_of(*tmp.store, "run");
  ASSERT_EQ(all.size(), 5u);  // e0: 1 aborted, 2 committed; e1: 1, 2 aborted; e2: 1 committed
  EXPECT_EQ(all[0].state, AttemptState::kAborted);
  EXPECT_NE(all[0].note.find("worker dead lost"), std::string::npos);
  EXPECT_EQ(all[1].state, AttemptState::kCommitted);
  EXPECT_EQ(all[2].state, AttemptState::kAborted);
  EXPECT_EQ(all[3].state, AttemptState::kAborted);
  EXPECT_EQ(all[4].state, AttemptState::kCommitted);
}

TEST(RolloutWorker, PassingStoreErrorsAreRetriedAndAStoreThatStaysDownFailsByTheDeadline) {
  (void)setup_logging({.level = "error"});
  testing::TempStore tmp = temp_store();
  ASSERT_TRUE(tmp.store);
  RunStoreRollout real(*tmp.store);
  FaultyRolloutStore faulty(real);
  // Write 1 is the attempt marker; writes 2 and 3 (the first two tries of the commit) fail as
  // unavailable.
  faulty.fail_write = [](int n, const StoreWrite& w) -> std::optional<Error> {
    if (!w.episodes.empty() && n <= 3)
      return make_error(ErrorCategory::kUnavailable, "store.busy", "injected");
    return std::nullopt;
  };
  RolloutWorker worker(
      faulty, {.worker_id = WorkerId{"w"}, .concurrent_episodes = 1, .store_retry_initial_ms = 1});
  RolloutReport r = worker.run(RunId{"run"}, make_jobs(1));
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kAcknowledged);
  EXPECT_EQ(faulty.writes.load(), 4);  // marker, two refused commits, the commit
  expect_trajectory(*tmp.store, "run", 0);

  // Down for good: the commit fails by its deadline; the attempt stays running for recovery.
  faulty.fail_write = [](int, const StoreWrite& w) -> std::optional<Error> {
    if (!w.episodes.empty())
      return make_error(ErrorCategory::kUnavailable, "store.busy", "injected");
    return std::nullopt;
  };
  RolloutWorker down(
      faulty,
      {.worker_id = WorkerId{"w2"}, .store_deadline_ms = 200, .store_retry_initial_ms = 10});
  auto jobs = make_jobs(2);
  RolloutReport r2 = down.run(RunId{"run"}, {jobs[1]});
  ASSERT_EQ(r2.jobs[0].outcome, JobOutcome::kFailed);
  EXPECT_NE(r2.jobs[0].error->message.find("store episode run/e1"), std::string::npos)
      << r2.jobs[0].error->message;
  EXPECT_FALSE(tmp.store->get_episode_summary(RunId{"run"}, EpisodeId{"e1"}));
  auto e1 = std::vector<EpisodeAttemptRecord>{};
  for (auto& a : testing::attempts_of(*tmp.store, "run"))
    if (a.episode_id.value() == "e1") e1.push_back(a);
  ASSERT_EQ(e1.size(), 1u);
  EXPECT_EQ(e1[0].state, AttemptState::kRunning);

  // A refused write (bad input) is not retried.
  faulty.fail_write = [](int, const StoreWrite& w) -> std::optional<Error> {
    if (!w.episodes.empty())
      return make_error(ErrorCategory::kInvalidInput, "store.conflict", "injected conflict");
    return std::nullopt;
  };
  const int before = faulty.writes.load();
  RolloutWorker refused(faulty, {.worker_id = WorkerId{"w3"}});
  RolloutReport r3 = refused.run(RunId{"run"}, {jobs[1]});
  EXPECT_EQ(r3.jobs[0].outcome, JobOutcome::kSuperseded);
  EXPECT_EQ(faulty.writes.load() - before, 2);  // marker and one commit
}

TEST(RolloutWorker, AnEpisodeThatCannotBePreparedIsAbortedAtOnceAndRerunLater) {
  (void)setup_logging({.level = "error"});
  testing::TempStore tmp = temp_store();
  ASSERT_TRUE(tmp.store);
  RunStoreRollout store(*tmp.store);
  auto jobs = make_jobs(1);
  auto good = jobs[0].prepare;
  jobs[0].prepare = []() -> Expected<PreparedEpisode> {
    return make_error(ErrorCategory::kNotFound, "policy.transcript", "no transcript for e0");
  };
  RolloutWorker worker(store, {.worker_id = WorkerId{"w"}});
  RolloutReport r = worker.run(RunId{"run"}, jobs);
  ASSERT_EQ(r.jobs[0].outcome, JobOutcome::kFailed);
  EXPECT_NE(r.jobs[0].error->message.find("prepare episode run/e0"), std::string::npos);
  auto a = testing::attempts_of(*tmp.store, "run");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, AttemptState::kAborted);
  EXPECT_NE(a[0].note.find("no transcript for e0"), std::string::npos);

  jobs[0].prepare = good;
  RolloutReport again = worker.run(RunId{"run"}, jobs);
  EXPECT_EQ(again.jobs[0].outcome, JobOutcome::kAcknowledged);
  EXPECT_EQ(again.jobs[0].attempt, 2u);
  expect_trajectory(*tmp.store, "run", 0);
}

// Interleaving: three episodes meet inside their first compile; the stop is set there, before
// any of them makes its second policy call. Each is cut at that call: its attempt is aborted with
// a "stopped:" note and nothing is stored. A later run with max_attempts = 1 still runs them
// (stopped attempts do not count) as attempt 2.
TEST(RolloutWorker, AStopCutsEpisodesInFlightAbortsTheirAttemptsAndALaterRunRerunsThem) {
  (void)setup_logging({.level = "error"});
  testing::TempStore tmp = temp_store();
  ASSERT_TRUE(tmp.store);
  RunStoreRollout store(*tmp.store);
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  int in_compile = 0;
  auto stop_when_all_in_compile = [&] {
    std::unique_lock lock(mu);
    if (++in_compile == 3) {
      stop = true;
      cv.notify_all();
    }
    cv.wait_for(lock, 10s, [&] { return stop.load(); });
  };
  RolloutWorker worker(store, {.worker_id = WorkerId{"w1"}, .concurrent_episodes = 3});
  std::atomic<int> finished{0};
  RolloutReport r = worker.run(RunId{"run"}, make_jobs(5, stop_when_all_in_compile),
                               {.on_finished = [&](const JobResult&) { ++finished; }}, &stop);
  ASSERT_TRUE(stop.load()) << "the episodes never were in compile together";
  EXPECT_EQ(r.count(JobOutcome::kStopped), 3u);
  EXPECT_EQ(r.count(JobOutcome::kNotStarted), 2u);
  EXPECT_EQ(finished.load(), 3);
  EXPECT_EQ(*tmp.store->count_episodes(RunId{"run"}), 0u);
  auto cut = testing::attempts_of(*tmp.store, "run");
  ASSERT_EQ(cut.size(), 3u);
  for (const auto& a : cut) {
    EXPECT_EQ(a.state, AttemptState::kAborted) << a.episode_id.value();
    EXPECT_TRUE(a.note.starts_with(kStoppedAttemptNote)) << a.note;
  }

  RolloutWorker later(store, {.worker_id = WorkerId{"w2"}, .max_attempts = 1});
  RolloutReport again = later.run(RunId{"run"}, make_jobs(5));
  EXPECT_EQ(again.count(JobOutcome::kAcknowledged), 5u);
  for (const JobResult& j : again.jobs) {
    const bool was_cut = std::any_of(cut.begin(), cut.end(), [&](const EpisodeAttemptRecord& a) {
      return a.episode_id == j.episode_id;
    });
    EXPECT_EQ(j.attempt, was_cut ? 2u : 1u) << j.episode_id.value();
  }
  for (int n = 0; n < 5; ++n) expect_trajectory(*tmp.store, "run", n);
}

}  // namespace
}  // namespace cuda_agent
