// PoolClient's shared socket: blocked callers, async callers and the io thread taking turns at
// watching it (leader/follower), against a real broker and worker.
#include "actors/pool_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "actors/pool_transport.h"
#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "core/log.h"

namespace cuda_agent {
namespace {

PoolRequest request(const std::string& id, const std::string& payload) {
  PoolRequest r;
  r.header.request_id = RequestId{id};
  r.header.run_id = RunId{"test"};
  r.header.deadline_unix_ms = now_unix_ms() + 30'000;
  r.payload = payload;
  return r;
}

// A broker, one worker running `handler` and a client, all started (or the test stops).
struct Pool {
  std::unique_ptr<WorkPoolBroker> broker;
  std::unique_ptr<PoolWorker> worker;
  std::unique_ptr<PoolClient> client;
};
void start_pool(Pool& p, std::int64_t slots, std::int64_t prefetch, PoolHandler handler) {
  (void)setup_logging({.level = "error"});
  auto broker = WorkPoolBroker::start({});
  ASSERT_TRUE(broker) << broker.error().to_string();
  p.broker = std::move(*broker);
  PoolWorkerOptions w;
  w.broker_endpoint = p.broker->worker_endpoint();
  w.slots = slots;
  w.prefetch = prefetch;
  auto worker = PoolWorker::start(w, std::move(handler));
  ASSERT_TRUE(worker) << worker.error().to_string();
  p.worker = std::move(*worker);
  auto client = PoolClient::connect({.broker_endpoint = p.broker->client_endpoint()});
  ASSERT_TRUE(client) << client.error().to_string();
  p.client = std::move(*client);
}

// Covers: threads blocked in call() and threads using call_async() on one client at once, so the
// watch over the socket passes between blocked callers and the io thread while replies arrive
// for all of them. Every call gets its own reply, exactly once, and no reply is counted late.
TEST(PoolClient, BlockedAndAsyncCallersShareOneSocket) {
  Pool pool;
  ASSERT_NO_FATAL_FAILURE(start_pool(pool, 2, 4, [](const WorkItem& item) -> Expected<std::string> {
    return "echo:" + item.payload.str();
  }));

  constexpr int kThreads = 4, kCalls = 200;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (t % 2 == 0) {
          auto out = pool.client->call(request(id, id));
          if (!out || *out != "echo:" + id) ++wrong;
        } else {
          std::promise<PoolOutcome> done;
          pool.client->call_async(request(id, id),
                                  [&](PoolOutcome o) { done.set_value(std::move(o)); });
          PoolOutcome o = done.get_future().get();
          if (!o.result || *o.result != "echo:" + id) ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(pool.client->late_replies(), 0u);
  auto stats = pool.client->stats();
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(stats->completed, static_cast<std::uint64_t>(kThreads * kCalls));
}

// Covers: a handler that returns the payload it got, moved out of its WorkItem: the worker
// sends the received bytes back out (a frame of their own above the inline limit, no copy); a
// moved-from payload must not leak into the next request.
TEST(PoolClient, AHandlerMayMoveThePayloadOut) {
  Pool pool;
  ASSERT_NO_FATAL_FAILURE(start_pool(
      pool, 1, 4, [](WorkItem& item) -> Expected<PoolBytes> { return std::move(item.payload); }));
  for (int i = 0; i < 50; ++i) {
    const std::string payload(static_cast<std::size_t>(1 + i * 997),
                              static_cast<char>('a' + i % 26));
    auto out = pool.client->call(request("move-" + std::to_string(i), payload));
    ASSERT_TRUE(out) << out.error().to_string();
    EXPECT_EQ(*out, payload) << "request " << i;
  }
}

// Covers: payloads on both sides of the inline limit (messages/pool_codec.h), on every hop: the
// request and the result travel appended to their envelope up to kPoolInlinePayloadBytes and in a
// frame of their own above it, and a repeated id gets the broker's cached copy of either form.
TEST(PoolClient, PayloadsOnEitherSideOfTheInlineLimitArriveWhole) {
  Pool pool;
  ASSERT_NO_FATAL_FAILURE(start_pool(
      pool, 1, 0, [](WorkItem& item) -> Expected<PoolBytes> { return std::move(item.payload); }));
  const std::size_t limit = kPoolInlinePayloadBytes;
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, limit - 1, limit, limit + 1,
                           kCopyFrameBytes, kCopyFrameBytes + 1, std::size_t{1} << 16}) {
    std::string payload(size, '\0');
    for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 131 + size);
    const std::string id = "edge-" + std::to_string(size);
    for (int repeat = 0; repeat < 2; ++repeat) {  // the second answer comes from the cache
      auto out = pool.client->call(request(id, payload));
      ASSERT_TRUE(out) << size << " bytes: " << out.error().to_string();
      EXPECT_EQ(*out, payload) << size << " bytes, call " << repeat;
    }
  }
  EXPECT_EQ(pool.worker->handled(), 8u) << "each id ran once";
}

// Covers: the client closing while a thread is blocked in call() on a request nobody answers
// (no worker). The blocked caller gets "pool.client_closed" instead of waiting for its deadline.
TEST(PoolClient, CloseAnswersABlockedCaller) {
  (void)setup_logging({.level = "error"});
  auto broker = WorkPoolBroker::start({});
  ASSERT_TRUE(broker) << broker.error().to_string();
  auto client = PoolClient::connect({.broker_endpoint = (*broker)->client_endpoint()});
  ASSERT_TRUE(client) << client.error().to_string();
  std::promise<void> sent;
  auto outcome = std::async(std::launch::async, [&] {
    PoolRequest r = request("never", "x");
    // The request is on the socket once call_async returns; the blocked call shares its id.
    (*client)->call_async(r, [](PoolOutcome) {});
    sent.set_value();
    return (*client)->call_with_details(r);
  });
  sent.get_future().wait();
  ASSERT_TRUE([&] {  // the broker holds it queued (no worker): nobody will answer it
    for (int i = 0; i < 1000; ++i) {
      auto s = (*broker)->stats();
      if (s && s->queue_depth == 1) return true;
    }
    return false;
  }());
  client->reset();
  PoolOutcome o = outcome.get();
  ASSERT_FALSE(o.result);
  EXPECT_EQ(o.result.error().code, "pool.client_closed");
}

// Covers: a broker endpoint whose host does not resolve (issue 27 item 3). ZeroMQ would accept it
// and try in the background forever, so every request waited out reconnect_timeout_ms and failed
// as "broker not answering"; connect() now fails at once with an error of its own, naming the
// host and the endpoint.
TEST(PoolClient, ABrokerHostThatDoesNotResolveFailsConnect) {
  (void)setup_logging({.level = "error"});
  const std::string endpoint = "tcp://no-such-host.invalid:17552";
  const auto start = std::chrono::steady_clock::now();
  auto client = PoolClient::connect({.broker_endpoint = endpoint});
  ASSERT_FALSE(client) << "connected to a host that does not exist";
  EXPECT_EQ(client.error().code, "pool.host_unresolvable");
  EXPECT_NE(client.error().message.find("cannot resolve host no-such-host.invalid in " + endpoint),
            std::string::npos)
      << client.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace cuda_agent
