// The rollout worker actor (rollout/rollout_worker_actor.h) against the real coordinator actor in
// one actor system, on CAF's deterministic test coordinator: the worker's peer is the
// coordinator's own handle (a work_source_actor), the same protocol the worker speaks to a
// coordinator in another process. Episode runners are fakes that answer at once; the store and
// the learner are the coordinator tests' fakes.
#include <caf/all.hpp>

#include "actors/actor_runtime.h"
#include "coordinator/actor_test_fixture.h"
#include "rollout/rollout_worker_actor.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using coord_test::CoordinatorActorTest;
using coord_test::kRun;
using coord_test::LearnerLog;

class CoordinatorRolloutTest : public CoordinatorActorTest {
 protected:
  static episode_runner_actor::behavior_type instant_runner(episode_runner_actor::pointer self) {
    self->set_exception_handler(keep_exception_text);
    return {[](run_episode_atom, const Assignment& a) {
      EpisodeRun r{.assignment = a};
      r.submission.worker = WorkerId{"w1"};
      r.submission.attempt = a.attempt;
      r.submission.episode = record(a);
      return r;
    }};
  }

  void start_worker(std::int64_t slots) {
    RolloutWorkerConfig config{
        .run = kRun,
        .options = {.worker_id = WorkerId{"w1"}, .concurrent_episodes = slots},
        .hooks = {},
        .make_runner = [this](std::int64_t) {
          episode_runner_actor r = sys_->spawn(instant_runner);
          spawned_.push_back(caf::actor_cast<caf::actor>(r));
          return r;
        }};
    // The coordinator's own handle, a local peer, behind a proxy that counts work requests.
    work_source_actor coordinator = coord_;
    work_source_actor source = sys_->spawn(
        [coordinator, this](work_source_actor::pointer self) -> work_source_actor::behavior_type {
          return {
              [=](work_atom a, WorkRequest& r) {
                ++work_requests_;
                return self->delegate(coordinator, a, std::move(r));
              },
              [=](submit_atom a, TrajectorySubmission& s) {
                return self->delegate(coordinator, a, std::move(s));
              },
          };
        });
    spawned_.push_back(caf::actor_cast<caf::actor>(source));
    worker_ = spawn_rollout_worker(*sys_, source, std::move(config));
    spawned_.push_back(caf::actor_cast<caf::actor>(worker_));
    report_.emplace((*self_)->request(worker_, caf::infinite, run_rollout_atom::value));
    sched_->run();
  }
  bool reported() { return !(*self_)->mailbox().empty(); }
  CoordinatedReport report() {
    CoordinatedReport out;
    report_->receive([&](CoordinatedReport& r) { out = std::move(r); },
                     [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }

  rollout_worker_actor worker_;
  int work_requests_ = 0;
  using Handle = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<rollout_worker_actor&>(), caf::infinite, run_rollout_atom::value));
  std::optional<Handle> report_;
};

// A whole run (3 steps of 2 episodes, S = 0) with a 4-slot worker: it ends by itself with every
// trained episode acknowledged once, and while the bound holds the worker polls once per retry
// hint, not once per idle slot.
TEST_F(CoordinatorRolloutTest, AWorkerActorRunsAWholeRunAgainstTheCoordinatorActor) {
  start(options(2, 0, {{EpisodeStage::kAgenticPpo, 3}}));
  LearnerLog learner;
  learner.hold = true;  // the first step waits: admission stays closed meanwhile
  attach_learner(&learner);
  start_worker(4);
  pump();
  EXPECT_EQ(status().waiting, 2u) << "version 0's batch, acknowledged";
  const int asked = work_requests_;
  // 10 retry hints with admission closed: 10 polls, one per hint for the whole worker.
  for (int k = 0; k < 10; ++k) {
    sched_->advance_time(1s);
    pump();
  }
  EXPECT_EQ(work_requests_ - asked, 10);
  learner.hold = false;
  for (auto& p : learner.held) p.deliver(StepDone{0, PolicyVersion{1}, {}});
  learner.held.clear();
  for (int k = 0; k < 60 && !reported(); ++k) {
    pump();
    sched_->advance_time(1s);
  }
  ASSERT_TRUE(reported()) << "the worker did not end";
  const CoordinatedReport r = report();
  EXPECT_TRUE(r.run_finished);
  EXPECT_FALSE(r.error);
  EXPECT_EQ(r.failed + r.superseded + r.unknown, 0u);
  const CoordinatorStatus after = status();
  EXPECT_TRUE(after.finished);
  EXPECT_EQ(after.step, 3u);
  EXPECT_EQ(after.trained, 6u);
  EXPECT_EQ(r.acknowledged, after.trained + after.stale);
  EXPECT_EQ(store_.episodes.size(), r.acknowledged);
}

}  // namespace
}  // namespace cuda_agent
