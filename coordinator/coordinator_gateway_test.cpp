// The coordinator's gateway over real ZeroMQ on loopback, in front of a real coordinator actor
// (on a store whose writes complete at once): rollout clients get work, submit and are
// acknowledged; a learner attached through serve_learner trains steps; a learner that stops is
// detached and its batch goes to the next learner; bad frames are refused while the gateway
// keeps serving; a dead endpoint fails by the deadline; the supervisor's restarted coordinator
// is followed.
#include "coordinator/coordinator_gateway.h"

#include <gtest/gtest.h>
#include <caf/all.hpp>

#include <mutex>
#include <thread>

#include "actors/actor_runtime.h"
#include "coordinator/coordinator_client.h"
#include "coordinator/test_support.h"
#include "core/log.h"
#include "messages/coordinator_codec.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
const RunId kRun{"gw-run"};

// The fake store behind a mutex, completing each write at once on the caller's thread (the
// coordinator's): the actor runs on a threaded scheduler here.
class ImmediateStore final : public CoordinatorStore {
 public:
  void submit(StoreWrite write, WriteCallback done) override {
    {
      std::lock_guard lock(mutex_);
      fake_.apply(write);
    }
    done(Status::ok());
  }
  Expected<std::optional<RunRecord>> get_run(const RunId& run) const override {
    std::lock_guard lock(mutex_);
    return fake_.get_run(run);
  }
  Expected<std::optional<CheckpointRecord>> latest_checkpoint(const RunId& run) const override {
    std::lock_guard lock(mutex_);
    return fake_.latest_checkpoint(run);
  }
  Status scan_run(const RunId& run, const SummaryVisitor& visit) const override {
    std::lock_guard lock(mutex_);
    return fake_.scan_run(run, visit);
  }

 private:
  mutable std::mutex mutex_;
  coord_test::FakeCoordinatorStore fake_;
};

// Records the steps it trains; answers version + 1.
class RecordingLearner final : public LearnerHandler {
 public:
  Expected<StepDone> train(const TrainStep& step) override {
    std::lock_guard lock(mutex);
    steps.push_back(step);
    return StepDone{step.step, PolicyVersion{step.version.value() + 1}, {{"reward/mean", 0.5}}};
  }
  Expected<CheckpointDone> checkpoint(const CheckpointRequest& r) override {
    std::lock_guard lock(mutex);
    checkpoints.push_back(r);
    return CheckpointDone{r.step, "/ckpt/" + std::to_string(r.step), 1, "ab"};
  }
  std::vector<TrainStep> trained() {
    std::lock_guard lock(mutex);
    return steps;
  }
  std::mutex mutex;
  std::vector<TrainStep> steps;
  std::vector<CheckpointRequest> checkpoints;
};

// serve_learner on a thread of its own until stop().
class LearnerThread {
 public:
  LearnerThread(const CoordinatorClientOptions& o, LearnerHandler& handler)
      : thread_([this, o, &handler] { status_ = serve_learner(o, handler, stop_); }) {}
  ~LearnerThread() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    EXPECT_TRUE(status_.is_ok()) << status_.error().to_string();
  }

 private:
  std::atomic<bool> stop_{false};
  Status status_;
  std::thread thread_;
};

/// Polls `f` until it holds or `limit` passes (cross-process effects have no event to wait on).
template <class F>
bool eventually(F f, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)setup_logging({.level = "error"});
    runtime_ = std::make_unique<ActorRuntime>(ActorRuntimeOptions{.scheduler_threads = 2});
  }
  void TearDown() override {
    gateway_.reset();
    // The supervisor ends once its coordinator exits with user_shutdown.
    if (supervisor_) {
      if (coordinator_actor c = current()) caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    }
    if (coordinator_) caf::anon_send_exit(coordinator_, caf::exit_reason::user_shutdown);
    supervisor_ = nullptr;
    coordinator_ = nullptr;
    runtime_.reset();
  }

  static CoordinatorOptions options() {
    CoordinatorOptions o;
    o.run = kRun;
    o.stages = {{EpisodeStage::kAgenticPpo, 100}};
    for (int i = 0; i < 5; ++i) o.tasks.push_back(TaskId{"suite/" + std::to_string(i)});
    o.seed = 7;
    o.staleness = {.batch_episodes = 2, .max_staleness = 1};
    o.membership = {.heartbeat_interval_ms = 100ms,
                    .heartbeat_timeout_ms = 5'000ms,
                    .first_heartbeat_grace_ms = 5'000ms};
    o.checkpoint_every_steps = 100;
    o.step_timeout_ms = 30'000ms;
    return o;
  }
  CoordinatorGatewayOptions gateway_options() const {
    CoordinatorGatewayOptions g;
    g.run = kRun;
    g.request_timeout = 5s;
    g.learner_silence_timeout = 500ms;
    return g;
  }

  void start() {
    auto c = start_coordinator(runtime_->system(), options(), store_);
    ASSERT_TRUE(c) << c.error().to_string();
    coordinator_ = *c;
    auto g = CoordinatorGateway::start(runtime_->system(), gateway_options(), coordinator_);
    ASSERT_TRUE(g) << g.error().to_string();
    gateway_ = std::move(*g);
  }

  CoordinatorClientOptions client_options(const std::string& member) const {
    CoordinatorClientOptions o;
    o.endpoint = gateway_->endpoint();
    o.run = kRun;
    o.member = WorkerId{member};
    o.request_timeout = 5s;
    o.heartbeat_interval = 100ms;
    return o;
  }
  std::unique_ptr<CoordinatorClient> client(const std::string& member) {
    auto c = CoordinatorClient::connect(client_options(member));
    EXPECT_TRUE(c) << c.error().to_string();
    return c ? std::move(*c) : nullptr;
  }

  static TrajectorySubmission submission(const std::string& worker, const Assignment& a) {
    EpisodeRecord r;
    r.episode_id = a.episode_id;
    r.run_id = kRun;
    r.task_id = a.task_id;
    r.stage = a.stage;
    r.policy_version = a.policy_version;
    r.final_reward = 1;
    r.trajectory_bytes = "tokens of " + a.episode_id.value();
    return TrajectorySubmission{WorkerId{worker}, a.attempt, std::move(r)};
  }

  /// Runs `n` episodes through `c`: work, submit, acknowledged. Returns their ids.
  std::vector<EpisodeId> run_episodes(CoordinatorClient& c, const std::string& worker, int n) {
    std::vector<EpisodeId> ids;
    for (int i = 0; i < n; ++i) {
      Expected<WorkReply> work = c.request_work();
      EXPECT_TRUE(work) << work.error().to_string();
      if (!work) return ids;
      EXPECT_TRUE(work->assigned) << work->reason;
      if (!work->assigned) return ids;
      Expected<SubmitReply> ack = c.submit(submission(worker, work->assignment));
      EXPECT_TRUE(ack) << ack.error().to_string();
      if (!ack) return ids;
      EXPECT_EQ(ack->status, SubmitStatus::kAcknowledged) << ack->message;
      ids.push_back(work->assignment.episode_id);
    }
    return ids;
  }

  coordinator_actor current() {
    caf::scoped_actor self{runtime_->system()};
    coordinator_actor out;
    self->request(supervisor_, 5s, current_atom::value)
        .receive([&](coordinator_actor c) { out = c; },
                 [&](caf::error& e) { ADD_FAILURE() << runtime_->system().render(e); });
    return out;
  }

  std::uint64_t step_now(CoordinatorClient& c) {
    Expected<CoordinatorStatus> s = c.status();
    return s ? s->step : 0;
  }

  ImmediateStore store_;
  std::unique_ptr<ActorRuntime> runtime_;
  coordinator_actor coordinator_;
  coordinator_supervisor supervisor_;
  std::unique_ptr<CoordinatorGateway> gateway_;
};

TEST_F(GatewayTest, WorkerGetsWorkSubmitsAndIsAcknowledged) {
  start();
  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  std::vector<EpisodeId> ids = run_episodes(*worker, "rollout-1", 1);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].value().rfind(kRun.value() + "/ep", 0), 0u) << ids[0].value();

  // A repeat of the same submission is answered the same way (idempotent).
  Expected<CoordinatorStatus> s = worker->status();
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->waiting, 1u);
  EXPECT_EQ(s->in_flight, 0u);
  EXPECT_EQ(s->step, 0u);
  EXPECT_GE(s->members, 1u);  // the worker, heard from its requests and heartbeats
}

// A status-only client (no heartbeats, only status calls) is never counted as a member, while a
// worker's heartbeats make it one.
TEST_F(GatewayTest, AStatusOnlyClientIsNoMember) {
  start();
  CoordinatorClientOptions o = client_options("status-probe");
  o.heartbeats = false;
  auto probe = CoordinatorClient::connect(o);
  ASSERT_TRUE(probe) << probe.error().to_string();
  std::this_thread::sleep_for(300ms);  // three heartbeat intervals
  Expected<CoordinatorStatus> before = (*probe)->status();
  ASSERT_TRUE(before) << before.error().to_string();
  EXPECT_EQ(before->members, 0u);
  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  const bool joined = [&] {
    for (int i = 0; i < 50; ++i) {
      auto s = (*probe)->status();
      if (s && s->members == 1u) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }();
  EXPECT_TRUE(joined) << "the worker's heartbeats did not make it a member";
}

TEST_F(GatewayTest, CallsFromManyThreadsAtOnceAllGetTheirOwnAnswers) {
  start();
  auto worker = client("rollout-many");
  ASSERT_TRUE(worker);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) ok += worker->status().has_value();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 80);
}

TEST_F(GatewayTest, AttachedLearnerTrainsSteps) {
  start();
  RecordingLearner learner;
  LearnerThread serving(client_options("learner-a"), learner);
  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  std::vector<EpisodeId> first = run_episodes(*worker, "rollout-1", 2);
  ASSERT_TRUE(eventually([&] { return step_now(*worker) >= 1; })) << "no step recorded";
  std::vector<EpisodeId> second = run_episodes(*worker, "rollout-1", 2);
  ASSERT_TRUE(eventually([&] { return step_now(*worker) >= 2; })) << "no second step";

  std::vector<TrainStep> steps = learner.trained();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 0u);
  EXPECT_EQ(steps[0].episodes, first);
  EXPECT_EQ(steps[1].step, 1u);
  EXPECT_EQ(steps[1].version.value(), 1u);
  EXPECT_EQ(steps[1].episodes, second);
  Expected<CoordinatorStatus> s = worker->status();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->version.value(), 2u);
  EXPECT_EQ(s->trained, 4u);
  EXPECT_EQ(gateway_->counters().learners_attached, 1u);  // keep-alives do not re-attach
}

TEST_F(GatewayTest, StoppedLearnerIsDetachedAndItsBatchGoesToTheNextLearner) {
  start();
  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  {
    RecordingLearner gone;
    LearnerThread serving(client_options("learner-a"), gone);
    ASSERT_TRUE(eventually([&] { return gateway_->counters().learners_attached == 1; }));
  }  // learner-a stops: its keep-alives end
  // The batch forms while the coordinator still holds learner-a's proxy: the step goes nowhere.
  std::vector<EpisodeId> batch = run_episodes(*worker, "rollout-1", 2);
  ASSERT_EQ(batch.size(), 2u);
  // Silent past learner_silence_timeout: the proxy exits, the coordinator fails the step.
  ASSERT_TRUE(eventually([&] { return gateway_->counters().learners_detached == 1; }));
  EXPECT_EQ(step_now(*worker), 0u);

  RecordingLearner next;
  LearnerThread serving(client_options("learner-b"), next);
  ASSERT_TRUE(eventually([&] { return step_now(*worker) >= 1; })) << "batch not re-offered";
  std::vector<TrainStep> steps = next.trained();
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps[0].step, 0u);
  EXPECT_EQ(steps[0].episodes, batch);
}

TEST_F(GatewayTest, ANewLearnerReplacesTheAttachedOne) {
  start();
  RecordingLearner a, b;
  LearnerThread serving_a(client_options("learner-a"), a);
  ASSERT_TRUE(eventually([&] { return gateway_->counters().learners_attached == 1; }));
  LearnerThread serving_b(client_options("learner-b"), b);
  ASSERT_TRUE(eventually([&] { return gateway_->counters().learners_detached >= 1; }));
  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  run_episodes(*worker, "rollout-1", 2);
  ASSERT_TRUE(eventually([&] { return step_now(*worker) >= 1; }));
  // learner-a keeps heartbeating, which does not take the attachment back.
  EXPECT_EQ(b.trained().size(), 1u);
  EXPECT_TRUE(a.trained().empty());
  EXPECT_EQ(gateway_->counters().learners_attached, 2u);
}

TEST_F(GatewayTest, GarbageAndWrongRunFramesAreRefusedAndTheGatewayKeepsServing) {
  start();
  zmq::context_t context(1);
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(gateway_->endpoint());
  raw.send(zmq::str_buffer("definitely not a capnp frame"), zmq::send_flags::none);
  ASSERT_TRUE(eventually([&] { return gateway_->counters().refused >= 1; }));

  // A frame of another run, with a request id: answered with CoordinatorFailure.
  const std::string wrong = encode_coordinator_frame(
      CoordinatorFrame{"req-9", RunId{"other-run"}, WorkRequest{WorkerId{"w"}}});
  raw.send(zmq::buffer(wrong), zmq::send_flags::none);
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(5000)), 1);
  zmq::message_t answer;
  ASSERT_TRUE(raw.recv(answer));
  Expected<CoordinatorFrame> frame = decode_coordinator_frame(answer.to_string_view());
  ASSERT_TRUE(frame) << frame.error().to_string();
  EXPECT_EQ(frame->request_id, "req-9");
  auto* failure = std::get_if<CoordinatorFailure>(&frame->body);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->error.code, "coordinator.wrong_run");
  EXPECT_EQ(gateway_->counters().refused, 2u);

  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  EXPECT_EQ(run_episodes(*worker, "rollout-1", 1).size(), 1u);
}

// Options of a rollout worker's client for a port nothing listens on (bound, noted, closed).
CoordinatorClientOptions dead_endpoint_client() {
  CoordinatorClientOptions o;
  {
    zmq::context_t context(1);
    zmq::socket_t s(context, zmq::socket_type::router);
    s.set(zmq::sockopt::linger, 0);
    s.bind("tcp://127.0.0.1:0");
    o.endpoint = s.get(zmq::sockopt::last_endpoint);
  }
  o.run = kRun;
  o.member = WorkerId{"rollout-1"};
  return o;
}

TEST_F(GatewayTest, ADeadEndpointFailsByTheDeadline) {
  CoordinatorClientOptions o = dead_endpoint_client();
  o.request_timeout = 300ms;
  auto c = CoordinatorClient::connect(o);
  ASSERT_TRUE(c) << c.error().to_string();
  const auto started = std::chrono::steady_clock::now();
  Expected<WorkReply> work = (*c)->request_work();
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(work);
  EXPECT_EQ(work.error().code, "coordinator.unreachable");
  EXPECT_EQ(work.error().category, ErrorCategory::kUnavailable);
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 2s);
}

// A stopping worker cancels its work requests: one waiting on a coordinator that will never
// answer (here: nothing listens) ends at once instead of at its 30 s request timeout, and so
// does every later one.
TEST_F(GatewayTest, CancelledWorkRequestsEndAtOnce) {
  CoordinatorClientOptions o = dead_endpoint_client();
  o.request_timeout = 30s;
  auto c = CoordinatorClient::connect(o);
  ASSERT_TRUE(c) << c.error().to_string();
  const auto started = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);  // the request is waiting by then (or soon after)
    (*c)->cancel_work_requests();
  });
  Expected<WorkReply> work = (*c)->request_work();
  canceller.join();
  ASSERT_FALSE(work);
  EXPECT_EQ(work.error().code, "coordinator.work_cancelled");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  Expected<WorkReply> later = (*c)->request_work();
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code, "coordinator.work_cancelled");
}

TEST_F(GatewayTest, BadClientOptionsAreRefused) {
  CoordinatorClientOptions o;
  o.endpoint = "tcp://127.0.0.1";  // no port
  o.run = kRun;
  o.member = WorkerId{"w"};
  auto c = CoordinatorClient::connect(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, "coordinator.client_options");
}

TEST_F(GatewayTest, FollowsTheCoordinatorTheSupervisorRestarts) {
  supervisor_ = spawn_coordinator_supervisor(runtime_->system(), options(), store_);
  auto g = CoordinatorGateway::start(runtime_->system(), gateway_options(), supervisor_);
  ASSERT_TRUE(g) << g.error().to_string();
  gateway_ = std::move(*g);
  auto worker = client("rollout-1");
  ASSERT_TRUE(worker);
  ASSERT_TRUE(eventually([&] { return worker->status().has_value(); }));
  RecordingLearner learner;
  LearnerThread serving(client_options("learner-a"), learner);
  run_episodes(*worker, "rollout-1", 2);
  ASSERT_TRUE(eventually([&] { return step_now(*worker) >= 1; }));

  // Kill the coordinator: the supervisor restarts it from the store, the gateway follows it and
  // the supervisor re-attaches the learner.
  coordinator_actor first = current();
  ASSERT_TRUE(first);
  caf::anon_send_exit(first, caf::exit_reason::kill);
  ASSERT_TRUE(eventually([&] {
    Expected<CoordinatorStatus> s = worker->status();
    return s && s->step == 1;
  }));
  ASSERT_TRUE(eventually([&] {
    Expected<WorkReply> w = worker->request_work();
    if (!w || !w->assigned) return false;
    Expected<SubmitReply> a = worker->submit(submission("rollout-1", w->assignment));
    return a && a->status == SubmitStatus::kAcknowledged;
  }));
  run_episodes(*worker, "rollout-1", 1);
  ASSERT_TRUE(eventually([&] { return step_now(*worker) >= 2; })) << "no step after the restart";
}

}  // namespace
}  // namespace cuda_agent
