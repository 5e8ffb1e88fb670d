// The work-pool broker with real ZeroMQ over TCP loopback: routing, idempotency, deadlines,
// back-pressure and bad input. Each test names the interleaving it covers.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <set>

#include "tests/pool_test_util.h"

namespace cuda_agent {
namespace {

using namespace pool_test;

struct Fixture : ::testing::Test {
  void SetUp() override {
    quiet_logs();
    auto b = WorkPoolBroker::start(fast_broker());
    ASSERT_TRUE(b) << b.error().to_string();
    broker = std::move(*b);
    auto c = PoolClient::connect({.broker_endpoint = broker->client_endpoint()});
    ASSERT_TRUE(c) << c.error().to_string();
    client = std::move(*c);
  }
  std::unique_ptr<PoolWorker> worker(const std::string& id, std::vector<std::string> tags,
                                     PoolHandler handler, std::int64_t slots = 1) {
    auto w =
        PoolWorker::start(fast_worker(*broker, id, std::move(tags), slots), std::move(handler));
    EXPECT_TRUE(w) << w.error().to_string();
    return w ? std::move(*w) : nullptr;
  }
  std::unique_ptr<WorkPoolBroker> broker;
  std::unique_ptr<PoolClient> client;
};

PoolHandler echo() {
  return [](const WorkItem& item) -> Expected<std::string> { return "echo:" + item.payload.str(); };
}

TEST_F(Fixture, RequestRoundTripsThroughBrokerAndWorker) {
  auto w = worker("w-1", {}, echo());
  auto out = client->call_with_details(request("r-1", "hello"));
  ASSERT_TRUE(out.result) << out.result.error().to_string();
  EXPECT_EQ(*out.result, "echo:hello");
  EXPECT_EQ(out.attempts, 1u);
  EXPECT_EQ(out.worker_id, WorkerId{"w-1"});
  // A handler's typed error reaches the client unchanged.
  auto failing = worker("w-2", {"fails"}, [](const WorkItem&) -> Expected<std::string> {
    return make_error(ErrorCategory::kPolicy, "policy.symbol", "dlopen is not allowed");
  });
  auto bad = client->call(request("r-2", "x", {"fails"}));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().category, ErrorCategory::kPolicy);
  EXPECT_EQ(bad.error().code, "policy.symbol");
}

// Covers: the broker's wake-up counters (PoolStats wakes, messagesRead): every message read is
// counted, and wakes are counted.
TEST(PoolBrokerCounters, CountWakesAndMessagesRead) {
  quiet_logs();
  auto broker = WorkPoolBroker::start(fast_broker());
  ASSERT_TRUE(broker) << broker.error().to_string();
  auto client = PoolClient::connect({.broker_endpoint = (*broker)->client_endpoint()});
  ASSERT_TRUE(client);
  auto w = PoolWorker::start(fast_worker(**broker, "w", {}, 1), echo());
  ASSERT_TRUE(w);
  for (int i = 0; i < 20; ++i) {
    auto out = (*client)->call(request("c-" + std::to_string(i), "x"));
    ASSERT_TRUE(out) << out.error().to_string();
  }
  const PoolStats s = stats_of(**broker);
  // Each request is a Submit and a Result; the worker's Ready and heartbeats come on top.
  EXPECT_GE(s.messages_read, 41u);
  EXPECT_GE(s.wakes, 1u);
}

// Covers: requests whose tags only one worker has, and least-recently-used rotation among the
// workers that match.
TEST_F(Fixture, RoutesByTagsToTheLeastRecentlyUsedWorker) {
  auto gpu = worker("gpu", {"gpu:NVIDIA H200", "cpu"}, echo());
  auto c1 = worker("cpu-1", {"cpu"}, echo());
  auto c2 = worker("cpu-2", {"cpu"}, echo());
  ASSERT_TRUE(has_workers(*broker, 3));
  for (int i = 0; i < 3; ++i) {
    auto out =
        client->call_with_details(request("g-" + std::to_string(i), "x", {"gpu:NVIDIA H200"}));
    ASSERT_TRUE(out.result) << out.result.error().to_string();
    EXPECT_EQ(out.worker_id, WorkerId{"gpu"});
  }
  // gpu was used last, so the next three cpu requests go to cpu-1 and cpu-2 (either order), then
  // to gpu: each worker once.
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto out = client->call_with_details(request("c-" + std::to_string(i), "x", {"cpu"}));
    ASSERT_TRUE(out.result) << out.result.error().to_string();
    seen.insert(out.worker_id.value());
  }
  EXPECT_EQ(seen, (std::set<std::string>{"cpu-1", "cpu-2", "gpu"}));
}

// Covers: the same request id delivered twice while the first is still on the worker (the second
// attaches to it), then again after it finished (served from the result cache). The handler
// runs once and every sender gets the same outcome.
TEST_F(Fixture, SameRequestDeliveredTwiceRunsTheHandlerOnce) {
  std::atomic<int> runs{0};
  Gate release;
  auto w = worker("w", {}, [&](const WorkItem& item) -> Expected<std::string> {
    ++runs;
    release.wait();
    return "done:" + item.payload.str();
  });
  auto other = PoolClient::connect({.broker_endpoint = broker->client_endpoint()});
  ASSERT_TRUE(other);
  std::promise<PoolOutcome> first, second;
  client->call_async(request("dup", "a"), [&](PoolOutcome o) { first.set_value(std::move(o)); });
  ASSERT_TRUE(eventually([&] { return runs.load() == 1; }));
  (*other)->call_async(request("dup", "a"), [&](PoolOutcome o) { second.set_value(std::move(o)); });
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).attached == 1; }));
  release.open();
  auto a = first.get_future().get();
  auto b = second.get_future().get();
  ASSERT_TRUE(a.result && b.result);
  EXPECT_EQ(*a.result, "done:a");
  EXPECT_EQ(*b.result, "done:a");
  auto again = (*other)->call_with_details(request("dup", "a"));
  ASSERT_TRUE(again.result);
  EXPECT_EQ(*again.result, "done:a");
  EXPECT_EQ(again.worker_id, WorkerId{"w"});
  EXPECT_EQ(runs.load(), 1);
  auto s = stats_of(*broker);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.completed, 1u);
}

// Covers: a request that no worker can take before its deadline: the caller gets a typed timeout
// and the broker drops it from the queue.
TEST_F(Fixture, RequestExpiresInTheQueue) {
  auto out = client->call(request("q-1", "x", {"nobody-has-this"}, 100));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().category, ErrorCategory::kTimeout);
  EXPECT_EQ(out.error().code, "pool.deadline_expired");
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).expired == 1; }));
  EXPECT_EQ(stats_of(*broker).queue_depth, 0u);
  // An already expired request is refused at once.
  auto late = client->call_with_details(request("q-2", "x", {}, -1));
  EXPECT_EQ(late.result.error().code, "pool.deadline_expired");
}

// Covers: the worker's result arriving after the deadline. The caller has its timeout already;
// the broker drops the late result and counts it, does not cache it (a retry runs again), and
// the broker's own timeout reply reaches the client after the deadline and is discarded there.
TEST_F(Fixture, ResultAfterTheDeadlineIsDroppedAndCounted) {
  std::atomic<int> runs{0};
  Gate caller_gave_up;
  auto w = worker("slow", {}, [&](const WorkItem& item) -> Expected<std::string> {
    if (++runs == 1) caller_gave_up.wait();  // returns only after the caller's deadline
    return "late:" + item.payload.str();
  });
  ASSERT_TRUE(has_workers(*broker, 1));
  auto out = client->call(request("slow-1", "x", {}, 150));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, "pool.deadline_expired");
  caller_gave_up.open();
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).late_results == 1; }));
  ASSERT_TRUE(eventually([&] { return client->late_replies() >= 1; }));
  auto retry = client->call(request("slow-1", "x"));
  ASSERT_TRUE(retry) << retry.error().to_string();
  EXPECT_EQ(*retry, "late:x");
  EXPECT_EQ(runs.load(), 2);
}

// Covers: a worker joining while the queue is full. The request past the bound is refused with
// "pool.busy" at once; the new worker drains the queue in order; new requests are accepted again.
TEST(PoolBroker, WorkerJoinsWhileTheQueueIsFull) {
  quiet_logs();
  auto options = fast_broker();
  options.max_queued_requests = 3;
  auto broker = must(WorkPoolBroker::start(options));
  auto client = must(PoolClient::connect({.broker_endpoint = broker->client_endpoint()}));
  std::vector<std::promise<PoolOutcome>> done(3);
  for (int i = 0; i < 3; ++i) {
    client->call_async(request("queued-" + std::to_string(i), std::to_string(i), {"late"}),
                       [&done, i](PoolOutcome o) { done[i].set_value(std::move(o)); });
  }
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).queue_depth == 3; }));
  auto busy = client->call(request("one-too-many", "x", {"late"}));
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().category, ErrorCategory::kUnavailable);
  EXPECT_EQ(busy.error().code, "pool.busy");

  std::mutex order_mutex;
  std::vector<std::string> order;
  auto w = PoolWorker::start(fast_worker(*broker, "late-joiner", {"late"}),
                             [&](const WorkItem& item) -> Expected<std::string> {
                               std::lock_guard lock(order_mutex);
                               order.push_back(item.header.request_id.value());
                               return item.payload.str();
                             });
  ASSERT_TRUE(w);
  for (int i = 0; i < 3; ++i) {
    auto o = done[i].get_future().get();
    ASSERT_TRUE(o.result) << o.result.error().to_string();
    EXPECT_EQ(*o.result, std::to_string(i));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"queued-0", "queued-1", "queued-2"}));
  auto after = client->call(request("after", "y", {"late"}));
  ASSERT_TRUE(after) << after.error().to_string();
  EXPECT_EQ(stats_of(*broker).rejected_busy, 1u);
}

// Covers: each kind of bad frame on the client socket gets a typed error reply naming the
// problem; bad frames on the worker socket are counted; the broker keeps serving.
TEST_F(Fixture, BadFramesGetTypedErrorsAndTheBrokerKeepsServing) {
  auto w = worker("w", {}, echo());
  RawPeer raw(broker->client_endpoint());
  auto code_of_reply = [&](const std::vector<std::string>& frames) -> std::string {
    raw.send(frames);
    auto reply = raw.receive_as<PoolReply>();
    if (!reply) return "no reply";
    return reply->first.error ? reply->first.error->code : "ok";
  };
  const std::string submit = encode_pool(PoolSubmit{header("bad-1"), {}, 3});
  EXPECT_EQ(code_of_reply({"garbage-bytes"}), "wire.malformed");
  EXPECT_EQ(code_of_reply({std::string(64, '\xff')}), "wire.malformed");
  EXPECT_EQ(code_of_reply({submit.substr(0, submit.size() - 8), "abc"}), "wire.malformed");
  EXPECT_EQ(code_of_reply({submit}), "wire.malformed");                 // payload frame missing
  EXPECT_EQ(code_of_reply({submit, "abcd"}), "wire.malformed");         // payload size mismatch
  EXPECT_EQ(code_of_reply({submit + "ab"}), "wire.malformed");          // inline payload too short
  EXPECT_EQ(code_of_reply({submit + "abc", "abc"}), "wire.malformed");  // inline and a frame
  // The same request with its payload inline is served (messages/pool_codec.h).
  EXPECT_EQ(code_of_reply({encode_pool(PoolSubmit{header("inline-1"), {}, 3}) + "abc"}), "ok");
  EXPECT_EQ(code_of_reply({encode_pool(PoolReady{WorkerId{"x"}, {}, 1})}),
            "pool.unexpected_message");
  std::string newer = submit;
  newer[16] = 9;  // PoolEnvelope.formatVersion
  EXPECT_EQ(code_of_reply({newer, "abc"}), "wire.version");
  EXPECT_EQ(code_of_reply({std::string(128 << 10, '\0')}), "wire.too_large");
  const std::string big((4 << 20) + 1, 'p');
  EXPECT_EQ(code_of_reply({encode_pool(PoolSubmit{header("big"), {}, big.size()}), big}),
            "wire.too_large");
  EXPECT_EQ(code_of_reply({encode_pool(PoolSubmit{header(""), {}, 1}), "x"}), "pool.bad_request");

  RawPeer raw_worker(broker->worker_endpoint());
  raw_worker.send({"not a frame"});
  raw_worker.send({encode_pool(PoolSubmit{header("w"), {}, 1}), "x"});
  raw_worker.send({encode_pool(PoolReady{WorkerId{"greedy"}, {}, 1'000'000, {}})});
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).malformed_frames >= 15; }));
  EXPECT_EQ(stats_of(*broker).workers.size(), 1u);

  auto ok = client->call(request("after-bad", "fine"));
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(*ok, "echo:fine");
}

TEST(PoolBroker, RejectsBadOptionsAndBusyPorts) {
  quiet_logs();
  WorkPoolBrokerOptions o;
  o.max_attempts = 0;
  EXPECT_EQ(WorkPoolBroker::start(o).error().code, "pool.options");
  auto first = WorkPoolBroker::start({});
  ASSERT_TRUE(first);
  WorkPoolBrokerOptions same;
  same.client_endpoint = (*first)->client_endpoint();
  EXPECT_EQ(WorkPoolBroker::start(same).error().code, "pool.bind");
  EXPECT_EQ(PoolClient::connect({}).error().code, "pool.options");
}

}  // namespace
}  // namespace cuda_agent
