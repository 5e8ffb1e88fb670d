// The pool channel seen from actors: the same caller code against an in-process channel and the
// process gateway in front of a real broker and worker gets the same results, the same typed
// errors and the same deadline and idempotency behaviour.
#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/actor_runtime.h"
#include "actors/pool_gateway.h"
#include "tests/pool_test_util.h"

namespace cuda_agent {
namespace {

using namespace pool_test;

class PoolChannelTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    quiet_logs();
    runtime_ = std::make_unique<ActorRuntime>(ActorRuntimeOptions{.scheduler_threads = 2});
    PoolHandler handler = [this](const WorkItem& item) -> Expected<std::string> {
      ++runs_;
      if (item.payload.view() == "fail") {
        return make_error(ErrorCategory::kPolicy, "policy.forbidden_call", "no dlopen");
      }
      if (item.payload.view() == "slow") slow_.wait();
      return "echo:" + item.payload.str();
    };
    if (remote()) {
      broker_ = must(WorkPoolBroker::start(fast_broker()));
      worker_ = must(PoolWorker::start(fast_worker(*broker_, "remote-worker"), handler));
      ASSERT_TRUE(has_workers(*broker_, 1));
      channel_ =
          must(spawn_pool_gateway(system(), {.broker_endpoint = broker_->client_endpoint()}));
    } else {
      channel_ = spawn_local_pool_channel(system(), handler);
    }
  }
  void TearDown() override {
    slow_.open();
    caf::anon_send_exit(channel_, caf::exit_reason::user_shutdown);
    channel_ = pool_channel{};  // a detached actor's thread ends with its last handle
    runtime_.reset();           // waits for every actor
    worker_.reset();
    broker_.reset();
  }
  bool remote() const { return GetParam(); }
  caf::actor_system& system() { return runtime_->system(); }
  PoolOutcome call(PoolRequest r) { return call_pool_channel(system(), channel_, std::move(r)); }

  std::unique_ptr<ActorRuntime> runtime_;
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<PoolWorker> worker_;
  pool_channel channel_;
  std::atomic<int> runs_{0};
  Gate slow_;
};

TEST_P(PoolChannelTest, ResultsAndTypedErrorsLookTheSameLocalOrRemote) {
  auto ok = call(request("g-1", "hi"));
  ASSERT_TRUE(ok.result) << ok.result.error().to_string();
  EXPECT_EQ(*ok.result, "echo:hi");
  EXPECT_EQ(ok.attempts, 1u);
  EXPECT_EQ(ok.worker_id, WorkerId{remote() ? "remote-worker" : "local"});

  auto failed = call(request("g-2", "fail"));
  ASSERT_FALSE(failed.result);
  EXPECT_EQ(failed.result.error().category, ErrorCategory::kPolicy);
  EXPECT_EQ(failed.result.error().code, "policy.forbidden_call");

  auto bad = call(request("", "x"));
  EXPECT_EQ(bad.result.error().code, "pool.bad_request");
}

// Covers: the same request id sent twice through the channel: the second gets the stored
// outcome and the handler runs once.
TEST_P(PoolChannelTest, RepeatedRequestIdRunsOnce) {
  auto first = call(request("same", "a"));
  auto second = call(request("same", "a"));
  ASSERT_TRUE(first.result && second.result);
  EXPECT_EQ(*second.result, "echo:a");
  EXPECT_EQ(runs_.load(), 1);
}

// Covers: a handler still running at the deadline: the caller gets "pool.deadline_expired" by
// the deadline, from either kind of channel.
TEST_P(PoolChannelTest, DeadlineBecomesATypedTimeout) {
  auto late = call(request("slow-1", "slow", {}, 150));
  ASSERT_FALSE(late.result);
  EXPECT_EQ(late.result.error().category, ErrorCategory::kTimeout);
  EXPECT_EQ(late.result.error().code, "pool.deadline_expired");
}

// An event-based actor asks the channel with request(...).then(...), as pool users will.
TEST_P(PoolChannelTest, EventBasedActorGetsTheOutcome) {
  std::promise<PoolOutcome> got;
  pool_channel channel = channel_;
  system().spawn([&got, channel](caf::event_based_actor* self) {
    PoolRequest r = request("ev-1", "from-actor");
    auto timeout = pool_request_timeout(r);
    const RequestId id = r.header.request_id;
    self->request(channel, timeout, pool_call_atom::value, std::move(r))
        .then([&got](const PoolOutcome& o) { got.set_value(o); },
              [&got, self, id](caf::error& e) {
                PoolOutcome failed;
                failed.result = pool_error_from_caf(self->system(), e, id);
                got.set_value(failed);
              });
  });
  auto o = got.get_future().get();
  ASSERT_TRUE(o.result) << o.result.error().to_string();
  EXPECT_EQ(*o.result, "echo:from-actor");
}

INSTANTIATE_TEST_SUITE_P(LocalAndRemote, PoolChannelTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Remote" : "Local"; });

}  // namespace
}  // namespace cuda_agent
