// The broker's routing state (pool_dispatch.h) driven by hand, without sockets: fair queueing
// across clients (issue 27 item 7), the per-client bound, refunds and expiry in a client's queue,
// and giving memory back once a large queue drains. Each test names the interleaving it covers.
#include "actors/pool_dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/log.h"

namespace cuda_agent {
namespace {

// Records what the dispatcher sends: the request ids given to workers, in order, and the replies.
struct Recorder : PoolOutbox {
  void to_client(const std::string& peer, std::string envelope, zmq::message_t*) override {
    auto m = decode_pool_message(envelope);
    ASSERT_TRUE(m) << m.error().to_string();
    replies.push_back({peer, std::get<PoolReply>(std::move(*m))});
  }
  void to_worker(const std::string&, std::string envelope, zmq::message_t*) override {
    auto m = decode_pool_message(envelope);
    ASSERT_TRUE(m) << m.error().to_string();
    if (auto* work = std::get_if<PoolWork>(&*m))
      work_ids.push_back(work->header.request_id.value());
  }
  std::vector<std::string> work_ids;
  std::vector<std::pair<std::string, PoolReply>> replies;  // client peer, reply
};

PoolNow now() { return PoolNow{std::chrono::steady_clock::now(), now_unix_ms()}; }

struct Pool {
  explicit Pool(WorkPoolBrokerOptions o) : options(std::move(o)), dispatcher(options, out) {
    (void)setup_logging({.level = "warn"});
  }
  void submit(const std::string& client, const std::string& id,
              std::int64_t deadline_in_ms = 600'000) {
    PoolSubmit s;
    s.header.request_id = RequestId{id};
    s.header.run_id = RunId{"test"};
    s.header.deadline_unix_ms = now_unix_ms() + deadline_in_ms;
    s.payload_bytes = 1;
    dispatcher.on_submit(client, std::move(s), zmq::message_t("x", 1), now());
  }
  void worker(const std::string& peer, std::uint32_t slots = 1) {
    dispatcher.on_ready(peer, PoolReady{WorkerId{peer}, {}, slots, {}}, now());
  }
  // The worker `peer` returns the result of `id`.
  void complete(const std::string& peer, const std::string& id) {
    dispatcher.on_result(peer, PoolResult{RequestId{id}, std::nullopt, 2}, zmq::message_t("ok", 2),
                         now());
  }
  WorkPoolBrokerOptions options;
  Recorder out;
  PoolDispatcher dispatcher;
};

// Covers: the flood. Client A queues 20,000 requests behind the one worker, then client B
// queues one. B's request goes to the worker within the next two dispatches, not after A's
// 20,000 (the FIFO queue before issue 27 item 7 dispatched it 20,000th).
TEST(PoolDispatch, AFloodingClientDoesNotDelayAnotherClientsRequest) {
  WorkPoolBrokerOptions o;
  o.max_queued_requests = 100'000;
  o.max_queued_per_client = 100'000;
  Pool pool(o);
  pool.worker("w");
  for (int i = 0; i < 20'000; ++i) pool.submit("client-a", "a-" + std::to_string(i));
  ASSERT_EQ(pool.out.work_ids, std::vector<std::string>{"a-0"});
  ASSERT_EQ(pool.dispatcher.stats().queue_depth, 19'999u);
  pool.submit("client-b", "b-0");
  EXPECT_EQ(pool.dispatcher.stats().queue_depth, 20'000u);
  for (int turn = 0; turn < 2; ++turn) pool.complete("w", pool.out.work_ids.back());
  const std::vector<std::string> next(pool.out.work_ids.begin() + 1, pool.out.work_ids.end());
  EXPECT_NE(std::find(next.begin(), next.end(), "b-0"), next.end())
      << "b-0 was not among the two dispatches after it was queued: " << next[0] << ", " << next[1];
  EXPECT_TRUE(pool.out.replies.size() == 2u && pool.out.replies[0].first == "client-a");
}

// Covers: three clients with queued work before any worker exists; one worker then joins and is
// given one request of each client in turn (in the order the clients first queued work), each
// client's own requests in the order it sent them.
TEST(PoolDispatch, ClientsTakeTurnsOneRequestEach) {
  Pool pool(WorkPoolBrokerOptions{});
  for (const char* id : {"a-0", "a-1", "a-2"}) pool.submit("client-a", id);
  for (const char* id : {"b-0", "b-1"}) pool.submit("client-b", id);
  pool.submit("client-c", "c-0");
  pool.worker("w");
  for (int i = 0; i < 5; ++i) pool.complete("w", pool.out.work_ids.back());
  EXPECT_EQ(pool.out.work_ids,
            (std::vector<std::string>{"a-0", "b-0", "c-0", "a-1", "b-1", "a-2"}));
  EXPECT_EQ(pool.dispatcher.stats().queue_depth, 0u);
}

// Covers: two clients that send one request at a time (the next when the last is answered) beside
// a flooding one. Each newcomer joins the current round, but one served in it already waits for
// the next: every round serves A, S1 and S2 once, and A is not starved by the two taking turns.
TEST(PoolDispatch, AClientServedInThisRoundWaitsForTheNext) {
  Pool pool(WorkPoolBrokerOptions{});
  pool.worker("w");
  for (int i = 0; i < 100; ++i) pool.submit("client-a", "a-" + std::to_string(i));
  int s1 = 0, s2 = 0;
  pool.submit("client-s1", "s1-0");
  pool.submit("client-s2", "s2-0");
  while (pool.out.work_ids.size() < 10) {
    const std::string done = pool.out.work_ids.back();
    pool.complete("w", done);  // the broker dispatches the next before the answer arrives
    if (done.rfind("s1-", 0) == 0) pool.submit("client-s1", "s1-" + std::to_string(++s1));
    if (done.rfind("s2-", 0) == 0) pool.submit("client-s2", "s2-" + std::to_string(++s2));
  }
  EXPECT_EQ(pool.out.work_ids, (std::vector<std::string>{"a-0", "s1-0", "s2-0", "a-1", "s1-1",
                                                         "s2-1", "a-2", "s1-2", "s2-2", "a-3"}));
}

// Covers: a client at max_queued_per_client is refused with "pool.client_busy" naming the limit,
// while another client's request is still queued; past max_queued_requests in all, anyone gets
// "pool.busy". A repeat of a queued id attaches and counts against no one's share.
TEST(PoolDispatch, AClientPastItsShareIsRefusedWhileOthersAreQueued) {
  WorkPoolBrokerOptions o;
  o.max_queued_requests = 3;
  o.max_queued_per_client = 2;
  Pool pool(o);
  pool.submit("client-a", "a-0");
  pool.submit("client-a", "a-1");
  pool.submit("client-a", "a-1");  // a repeat: attached
  pool.submit("client-a", "a-2");
  pool.submit("client-b", "b-0");
  pool.submit("client-c", "c-0");
  ASSERT_EQ(pool.out.replies.size(), 2u);
  const auto& [a_peer, a_reply] = pool.out.replies[0];
  EXPECT_EQ(a_peer, "client-a");
  EXPECT_EQ(a_reply.request_id.value(), "a-2");
  ASSERT_TRUE(a_reply.error);
  EXPECT_EQ(a_reply.error->category, ErrorCategory::kUnavailable);
  EXPECT_EQ(a_reply.error->code, "pool.client_busy");
  EXPECT_NE(a_reply.error->message.find("max_queued_per_client 2"), std::string::npos)
      << a_reply.error->message;
  const auto& [c_peer, c_reply] = pool.out.replies[1];
  EXPECT_EQ(c_peer, "client-c");
  ASSERT_TRUE(c_reply.error);
  EXPECT_EQ(c_reply.error->code, "pool.busy");
  const PoolStats s = pool.dispatcher.stats();
  EXPECT_EQ(s.queue_depth, 3u);
  EXPECT_EQ(s.rejected_busy, 2u);
  EXPECT_EQ(s.attached, 1u);
}

// Covers: a worker that leaves with a request on it while two clients have queued work. The
// request goes back to the front of its client's queue and that client is served next (without
// costing an attempt), then the turns go on: a-0 (refunded), b-0, a-1.
TEST(PoolDispatch, ARefundGoesBackFirstInItsClientsQueue) {
  Pool pool(WorkPoolBrokerOptions{});
  pool.worker("w-1");
  pool.submit("client-a", "a-0");  // runs on w-1
  pool.submit("client-b", "b-0");  // B's turn comes first now
  pool.submit("client-a", "a-1");
  pool.dispatcher.on_disconnect("w-1", now());
  EXPECT_EQ(pool.dispatcher.stats().queue_depth, 3u);
  pool.out.work_ids.clear();
  pool.worker("w-2");
  for (int i = 0; i < 2; ++i) pool.complete("w-2", pool.out.work_ids.back());
  EXPECT_EQ(pool.out.work_ids, (std::vector<std::string>{"a-0", "b-0", "a-1"}));
  EXPECT_EQ(pool.dispatcher.stats().requeued, 1u);
}

// Covers: a queued request of one client passes its deadline while another client's waits. The
// expired one is answered "pool.deadline_expired" and leaves its client's queue (and the turns);
// the other is dispatched when a worker joins, and the expired client can queue again.
TEST(PoolDispatch, AnExpiredRequestLeavesItsClientsQueue) {
  Pool pool(WorkPoolBrokerOptions{});
  pool.submit("client-a", "a-0", 500);
  pool.submit("client-b", "b-0");
  PoolNow later = now();
  later.unix_ms += 1'000;
  pool.dispatcher.housekeeping(later);
  ASSERT_EQ(pool.out.replies.size(), 1u);
  EXPECT_EQ(pool.out.replies[0].first, "client-a");
  ASSERT_TRUE(pool.out.replies[0].second.error);
  EXPECT_EQ(pool.out.replies[0].second.error->code, "pool.deadline_expired");
  EXPECT_EQ(pool.dispatcher.stats().queue_depth, 1u);
  pool.submit("client-a", "a-1");
  pool.worker("w");
  pool.complete("w", pool.out.work_ids.back());
  EXPECT_EQ(pool.out.work_ids, (std::vector<std::string>{"b-0", "a-1"}));
  EXPECT_EQ(pool.dispatcher.stats().expired, 1u);
}

// Covers: a queue of 1,500 drains while its last request is still on the worker. The drain
// rebuilds the tables once (shrink_if_drained names the peak, then nothing until the next large
// queue), the request in flight survives the rebuild and is answered, and a small queue's drain
// keeps its memory.
TEST(PoolDispatch, ALargeQueueGivesItsMemoryBackOnceDrained) {
  Pool pool(WorkPoolBrokerOptions{});
  for (int i = 0; i < 1'500; ++i) pool.submit("client-a", "a-" + std::to_string(i));
  EXPECT_FALSE(pool.dispatcher.shrink_if_drained()) << "the queue is not empty";
  pool.worker("w");
  for (int i = 0; i < 1'499; ++i) pool.complete("w", pool.out.work_ids.back());
  ASSERT_EQ(pool.dispatcher.stats().queue_depth, 0u);
  ASSERT_EQ(pool.dispatcher.stats().in_flight, 1u);
  EXPECT_EQ(pool.dispatcher.shrink_if_drained(), std::optional<std::size_t>(1'500));
  EXPECT_FALSE(pool.dispatcher.shrink_if_drained());
  pool.complete("w", "a-1499");
  ASSERT_EQ(pool.out.replies.size(), 1'500u);
  EXPECT_EQ(pool.out.replies.back().second.request_id.value(), "a-1499");
  EXPECT_FALSE(pool.out.replies.back().second.error);
  EXPECT_EQ(pool.dispatcher.stats().in_flight, 0u);

  pool.submit("client-a", "busy");  // occupies the worker
  for (int i = 0; i < 10; ++i) pool.submit("client-b", "b-" + std::to_string(i));
  for (int i = 0; i < 11; ++i) pool.complete("w", pool.out.work_ids.back());
  EXPECT_EQ(pool.dispatcher.stats().queue_depth, 0u);
  EXPECT_FALSE(pool.dispatcher.shrink_if_drained()) << "10 queued is below kReleaseAfterQueued";
}

}  // namespace
}  // namespace cuda_agent
