// Test-only fixture of the coordinator's actor tests (never linked into the product): an actor
// system on CAF's deterministic test coordinator (scheduler.policy "testing": messages run when
// the test runs the scheduler, time moves when the test advances it), the fake store, a fake
// learner and a fake version subscriber, and helpers that ask, submit and pump.
//
// Threading: single-threaded tests only.
#pragma once

#include <gtest/gtest.h>
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <map>
#include <memory>
#include <optional>

#include "coordinator/coordinator_actor.h"
#include "coordinator/test_support.h"

namespace cuda_agent::coord_test {

using namespace std::chrono_literals;
const RunId kRun{"run1"};

struct LearnerLog {
  std::vector<TrainStep> steps;
  std::vector<CheckpointRequest> checkpoints;
  bool hold = false;  // keep step requests unanswered
  /// Answer the next step request with this step number instead of its own (once).
  std::optional<std::uint64_t> wrong_step;
  std::vector<caf::typed_response_promise<StepDone>> held;
};

inline learner_peer::behavior_type fake_learner(learner_peer::pointer self, LearnerLog* log) {
  return {
      [self, log](train_step_atom, const TrainStep& s) {
        log->steps.push_back(s);
        auto p = self->make_response_promise<StepDone>();
        if (log->hold) {
          log->held.push_back(p);
        } else if (log->wrong_step) {
          p.deliver(StepDone{*log->wrong_step, PolicyVersion{*log->wrong_step + 1}, {}});
          log->wrong_step.reset();
        } else {
          p.deliver(StepDone{s.step, PolicyVersion{s.version.value() + 1}, {{"loss/policy", 0.5}}});
        }
        return p;
      },
      [log](checkpoint_atom, const CheckpointRequest& c) -> CheckpointDone {
        log->checkpoints.push_back(c);
        return {c.step, "/ckpt/" + std::to_string(c.step), 10, "abc"};
      },
  };
}

inline version_subscriber::behavior_type fake_subscriber(version_subscriber::pointer,
                                                         std::vector<PolicyVersion>* seen) {
  return {[seen](version_atom, const VersionPublished& v) { seen->push_back(v.version); }};
}

class CoordinatorActorTest : public ::testing::Test {
 protected:
  CoordinatorActorTest() {
    cfg_.set("scheduler.policy", caf::atom("testing"));
    cfg_.set("logger.file-verbosity", caf::atom("quiet"));
    cfg_.set("logger.console", caf::atom("none"));
    add_coordinator_message_types(cfg_);
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
    self_.emplace(*sys_, true);
  }
  ~CoordinatorActorTest() override {
    for (const caf::actor& a : spawned_) caf::anon_send_exit(a, caf::exit_reason::kill);
    if (coord_) caf::anon_send_exit(coord_, caf::exit_reason::kill);
    sched_->run();
    store_.pending.clear();
    spawned_.clear();
    coord_ = nullptr;
    self_.reset();
    sched_->run();
    sys_.reset();
  }

  static CoordinatorOptions options(std::uint64_t batch, std::uint64_t s,
                                    std::vector<StagePlan> stages = {
                                        {EpisodeStage::kAgenticPpo, 100}}) {
    CoordinatorOptions o;
    o.run = kRun;
    o.stages = std::move(stages);
    for (int i = 0; i < 5; ++i) o.tasks.push_back(TaskId{"suite/" + std::to_string(i)});
    o.seed = 5;
    o.staleness = {.batch_episodes = batch, .max_staleness = s};
    o.membership = {.heartbeat_interval_ms = 1000ms,
                    .heartbeat_timeout_ms = 10'000ms,
                    .first_heartbeat_grace_ms = 30'000ms};
    o.checkpoint_every_steps = 100;
    return o;
  }

  void start(CoordinatorOptions o) {
    Expected<coordinator_actor> c = start_coordinator(*sys_, std::move(o), store_);
    ASSERT_TRUE(c) << c.error().to_string();
    coord_ = *c;
    sched_->run();
  }

  learner_peer attach_learner(LearnerLog* log) {
    learner_peer l = sys_->spawn(fake_learner, log);
    spawned_.push_back(caf::actor_cast<caf::actor>(l));
    caf::anon_send(coord_, attach_learner_atom::value, l);
    sched_->run();
    return l;
  }

  WorkReply ask(const std::string& worker) {
    auto rh =
        (*self_)->request(coord_, caf::infinite, work_atom::value, WorkRequest{WorkerId{worker}});
    sched_->run();
    WorkReply out;
    rh.receive([&](WorkReply& r) { out = std::move(r); },
               [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }

  static EpisodeRecord record(const Assignment& a) {
    EpisodeRecord r;
    r.episode_id = a.episode_id;
    r.run_id = kRun;
    r.task_id = a.task_id;
    r.stage = a.stage;
    r.policy_version = a.policy_version;
    r.final_reward = 1;
    r.trajectory_bytes = "tokens of " + a.episode_id.value();
    return r;
  }

  using Handle = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<coordinator_actor&>(), caf::infinite, submit_atom::value,
      std::declval<TrajectorySubmission>()));

  /// Sends a submission and runs the scheduler; the reply is read with `reply(handle)`.
  Handle send_submit(const std::string& worker, const Assignment& a, std::uint32_t attempt = 0) {
    return send_submission(
        TrajectorySubmission{WorkerId{worker}, attempt ? attempt : a.attempt, record(a)});
  }
  Handle send_submission(TrajectorySubmission s) {
    auto rh = (*self_)->request(coord_, caf::infinite, submit_atom::value, std::move(s));
    sched_->run();
    return rh;
  }
  SubmitReply reply(Handle& rh) {
    SubmitReply out;
    rh.receive([&](SubmitReply& r) { out = std::move(r); },
               [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }
  /// Submits, lets the store complete every write, returns the reply.
  SubmitReply submit(const std::string& worker, const Assignment& a, std::uint32_t attempt = 0) {
    auto rh = send_submit(worker, a, attempt);
    pump();
    return reply(rh);
  }
  /// A heartbeat from `member` (delivered on the next run of the scheduler).
  void beat(const std::string& member, MemberRole role, std::string degraded = {}) {
    caf::anon_send(coord_, heartbeat_atom::value,
                   Heartbeat{WorkerId{member}, role, std::move(degraded)});
  }
  /// `n` seconds of the coordinator's clock, one tick each; `each()` runs at the start of every
  /// second (heartbeats, say).
  template <class F>
  void seconds(int n, F each) {
    for (int i = 0; i < n; ++i) {
      each();
      sched_->run();
      sched_->advance_time(1s);
      sched_->run();
    }
  }
  /// Runs messages and completes store writes until neither is left.
  void pump() {
    for (;;) {
      sched_->run();
      if (store_.pending.empty()) return;
      store_.complete_next();
    }
  }
  CoordinatorStatus status() {
    auto rh = (*self_)->request(coord_, caf::infinite, status_atom::value);
    sched_->run();
    CoordinatorStatus out;
    rh.receive([&](CoordinatorStatus& s) { out = s; },
               [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }
  bool no_reply_yet() { return (*self_)->mailbox().empty(); }

  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  std::optional<caf::scoped_actor> self_;
  FakeCoordinatorStore store_;
  coordinator_actor coord_;
  std::vector<caf::actor> spawned_;
};

}  // namespace cuda_agent::coord_test
