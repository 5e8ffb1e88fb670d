// Supervision of the coordinator, deterministic (see actor_test_fixture.h).
#include "coordinator/coordinator_supervisor.h"

#include "coordinator/actor_test_fixture.h"

namespace cuda_agent {
namespace {

using coord_test::CoordinatorActorTest;
using coord_test::fake_learner;
using coord_test::LearnerLog;

class CoordinatorSupervisorTest : public CoordinatorActorTest {
 protected:
  coordinator_actor current(const coordinator_supervisor& sup) {
    auto rh = (*self_)->request(sup, caf::infinite, current_atom::value);
    sched_->run();
    coordinator_actor out;
    rh.receive([&](coordinator_actor& c) { out = c; },
               [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }
};

// Interleaving: a step is recorded; the coordinator crashes (killed); the supervisor starts a new
// one from the store and re-attaches the learner; the new one continues at step 1. Then three
// crashes in the window with max_restarts 2: the supervisor escalates (exits with the reason).
TEST_F(CoordinatorSupervisorTest, ACrashedCoordinatorIsRestartedFromTheStoreThenEscalated) {
  auto sup =
      spawn_coordinator_supervisor(*sys_, options(1, 0), store_,
                                   {.max_restarts = 2, .restart_window_ms = std::chrono::hours(1)});
  spawned_.push_back(caf::actor_cast<caf::actor>(sup));
  sched_->run();
  LearnerLog log;
  learner_peer learner = sys_->spawn(fake_learner, &log);
  spawned_.push_back(caf::actor_cast<caf::actor>(learner));
  caf::anon_send(sup, attach_learner_atom::value, learner);
  coord_ = current(sup);
  ASSERT_TRUE(coord_);
  Assignment a = ask("w").assignment;
  EXPECT_EQ(submit("w", a).status, SubmitStatus::kAcknowledged);
  pump();
  ASSERT_EQ(log.steps.size(), 1u);

  const coordinator_actor first = coord_;
  caf::anon_send_exit(first, caf::exit_reason::kill);
  sched_->run();
  coord_ = current(sup);
  ASSERT_TRUE(coord_);
  EXPECT_NE(coord_, first);
  EXPECT_EQ(status().step, 1u);
  Assignment b = ask("w").assignment;
  EXPECT_EQ(b.policy_version, PolicyVersion{1});
  EXPECT_EQ(submit("w", b).status, SubmitStatus::kAcknowledged);
  pump();
  ASSERT_EQ(log.steps.size(), 2u) << "the learner was attached to the new coordinator";

  (*self_)->monitor(sup);
  caf::anon_send_exit(coord_, caf::exit_reason::kill);  // restart 2
  sched_->run();
  caf::anon_send_exit(current(sup), caf::exit_reason::kill);  // third crash: escalate
  sched_->run();
  bool down = false;
  (*self_)->receive([&](caf::down_msg& dm) {
    down = true;
    EXPECT_EQ(dm.reason, caf::exit_reason::kill);
  });
  EXPECT_TRUE(down);
  coord_ = nullptr;
}

}  // namespace
}  // namespace cuda_agent
