// PoolWorker against a hand-driven ROUTER standing in for the broker, so the test sees every
// frame the worker sends.
#include "actors/pool_worker.h"

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "actors/pool_transport.h"
#include "core/log.h"
#include "messages/pool_codec.h"

namespace cuda_agent {
namespace {

// The next message from a worker as (routing id, decoded envelope, payload frame); nullopt when
// nothing arrives within 10 s.
struct Received {
  std::string peer;
  PoolMessage message;
  std::string payload;
  bool payload_inline = false;  // appended to the envelope frame (messages/pool_codec.h)
};

std::optional<Received> next(zmq::socket_t& router) {
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    if (!recv_multipart(router, parts, 3, dropped) || parts.size() < 2) continue;
    auto frame = decode_pool_frame(view(parts[1]));
    if (!frame) continue;
    const auto payload = payload_of(parts, 1, dropped, *frame);
    if (!payload) continue;
    const bool payload_inline = parts.size() == 2 && has_payload_frame(frame->message);
    return Received{std::string(view(parts[0])), std::move(frame->message), std::string(*payload),
                    payload_inline};
  }
  return std::nullopt;
}

// A ROUTER on a loopback port standing in for the broker: the worker options that connect to it
// and hand-made PoolWork for a request id (payload "x", in its own frame or appended inline).
class StandInBroker {
 public:
  StandInBroker() {
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:0");
  }
  /// Heartbeats every `heartbeat_ms`; the stand-in echoes none, so the worker never times it out.
  PoolWorkerOptions worker_options(const std::string& id, std::int64_t slots,
                                   std::int64_t heartbeat_ms) {
    PoolWorkerOptions options;
    options.broker_endpoint = router.get(zmq::sockopt::last_endpoint);
    options.worker_id = WorkerId{id};
    options.slots = slots;
    options.heartbeat_interval_ms = heartbeat_ms;
    options.broker_timeout_ms = 3'600'000;
    return options;
  }
  void send_work(const std::string& peer, const std::string& request_id, std::uint32_t attempt = 1,
                 bool payload_inline = false) {
    RequestHeader header;
    header.request_id = RequestId{request_id};
    header.run_id = RunId{"test"};
    header.deadline_unix_ms = now_unix_ms() + 60'000;
    (void)router.send(zmq::buffer(peer), zmq::send_flags::sndmore);
    if (payload_inline) {
      (void)router.send(take_frame(encode_pool(PoolWork{header, 1, attempt}) + "x"),
                        zmq::send_flags::none);
    } else {
      (void)router.send(take_frame(encode_pool(PoolWork{header, 1, attempt})),
                        zmq::send_flags::sndmore);
      (void)router.send(zmq::str_buffer("x"), zmq::send_flags::none);
    }
  }

  zmq::context_t context{1};
  zmq::socket_t router{context, zmq::socket_type::router};
};

// Covers: a handler running for many heartbeat intervals on a one-slot worker. The thread that
// took the request in runs it and holds the only slot; another thread must take the socket over
// by the next heartbeat, so the broker keeps hearing from the worker while the handler runs, and
// the result still goes out when the handler returns.
TEST(PoolWorker, HeartbeatsGoOnWhileTheOnlySlotIsBusy) {
  (void)setup_logging({.level = "error"});
  StandInBroker broker;
  const PoolWorkerOptions options = broker.worker_options("one-slot", 1, 10);
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto worker = PoolWorker::start(options, [&](const WorkItem& item) -> Expected<std::string> {
    started.set_value();
    released.wait();
    return "done:" + item.payload.str();
  });
  ASSERT_TRUE(worker) << worker.error().to_string();

  auto ready = next(broker.router);
  ASSERT_TRUE(ready && std::holds_alternative<PoolReady>(ready->message));
  broker.send_work(ready->peer, "long-1");
  started.get_future().wait();

  // Four heartbeats after the handler started (the first may have been sent just before).
  int heartbeats = 0;
  while (heartbeats < 4) {
    auto m = next(broker.router);
    ASSERT_TRUE(m) << "no heartbeat while the handler ran";
    ASSERT_FALSE(std::holds_alternative<PoolResult>(m->message)) << "result before release";
    if (std::holds_alternative<PoolHeartbeat>(m->message)) ++heartbeats;
  }
  release.set_value();
  for (;;) {
    auto m = next(broker.router);
    ASSERT_TRUE(m) << "no result after the handler returned";
    if (auto* result = std::get_if<PoolResult>(&m->message)) {
      EXPECT_EQ(result->request_id.value(), "long-1");
      EXPECT_FALSE(result->error);
      EXPECT_EQ(m->payload, "done:x");
      EXPECT_TRUE(m->payload_inline) << "a 6-byte result travels in its envelope frame";
      break;
    }
  }
  EXPECT_EQ((*worker)->handled(), 1u);
}

// Covers: the same request given twice to a worker that holds it (a restarted broker that got
// the client's re-sent request while the first copy was still on its way to the worker over the
// old connection). The worker runs it once and sends one result, which answers both.
TEST(PoolWorker, WorkForAHeldRequestIsNotRunTwice) {
  (void)setup_logging({.level = "error"});
  StandInBroker broker;
  const PoolWorkerOptions options = broker.worker_options("two-slots", 2, 10);
  std::atomic<int> runs{0};
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto worker = PoolWorker::start(options, [&](const WorkItem& item) -> Expected<std::string> {
    if (++runs == 1) started.set_value();
    released.wait();
    return "done:" + item.payload.str();
  });
  ASSERT_TRUE(worker) << worker.error().to_string();
  auto ready = next(broker.router);
  ASSERT_TRUE(ready && std::holds_alternative<PoolReady>(ready->message));
  broker.send_work(ready->peer, "twice", 1);
  started.get_future().wait();
  broker.send_work(ready->peer, "twice", 2);  // a free slot: without the check it would start
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((*worker)->duplicates() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ((*worker)->duplicates(), 1u);
  release.set_value();
  int results = 0;
  const auto quiet_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < quiet_until) {
    auto m = next(broker.router);
    if (m && std::holds_alternative<PoolResult>(m->message)) ++results;
  }
  EXPECT_EQ(results, 1);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ((*worker)->handled(), 1u);
}

// Covers: a burst of work taken in by one thread on a multi-slot worker. That thread runs the
// first job; an idle thread must be woken for each further job while a slot is free, and none
// beyond the slots. Heartbeats are an hour apart here, so a thread not woken for queued work would
// otherwise sleep past the 10 s the handlers wait for each other.
TEST(PoolWorker, ABurstOfWorkFillsEveryFreeSlotAndNoMore) {
  (void)setup_logging({.level = "error"});
  StandInBroker broker;
  constexpr int kSlots = 4, kJobs = 6;
  PoolWorkerOptions options = broker.worker_options("four-slots", kSlots, 3'600'000);
  options.prefetch = kJobs - kSlots;
  std::mutex mutex;
  std::condition_variable cv;
  int running = 0, most = 0, started = 0;
  auto worker = PoolWorker::start(options, [&](const WorkItem&) -> Expected<std::string> {
    std::unique_lock lock(mutex);
    most = std::max(most, ++running);
    ++started;
    cv.notify_all();
    // The first kSlots jobs wait until all of them run at once.
    const bool together =
        cv.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::seconds(10),
                      [&] { return started >= kSlots; });
    --running;
    return std::string(together ? "together" : "alone");
  });
  ASSERT_TRUE(worker) << worker.error().to_string();

  auto ready = next(broker.router);
  ASSERT_TRUE(ready && std::holds_alternative<PoolReady>(ready->message));
  for (int i = 0; i < kJobs; ++i) {  // one burst: the worker takes them in together
    // Both forms of a payload are read: in its own frame, and inline.
    broker.send_work(ready->peer, "burst-" + std::to_string(i), 1, /*payload_inline=*/i % 2 == 0);
  }
  int results = 0;
  while (results < kJobs) {
    auto m = next(broker.router);
    ASSERT_TRUE(m) << "only " << results << " results";
    if (auto* result = std::get_if<PoolResult>(&m->message)) {
      EXPECT_FALSE(result->error);
      EXPECT_EQ(m->payload, "together") << result->request_id.value() << " ran without the others";
      ++results;
    }
  }
  std::lock_guard lock(mutex);
  EXPECT_EQ(most, kSlots);
}

// Covers: PoolBytes, the form a handler gets its payload in and may return it in. A result that
// is a large received frame goes back out as that same frame (no copy); one of at most
// kPoolInlinePayloadBytes is appended to the envelope whether a string or a frame held it.
TEST(PoolBytes, SendsAReceivedFrameWithoutACopy) {
  PoolFrames small = pool_frames("env", PoolBytes(std::string("inline payload")));
  EXPECT_EQ(view(small.envelope), "envinline payload");
  EXPECT_FALSE(small.payload);
  PoolFrames small_frame = pool_frames("env", PoolBytes(zmq::message_t(std::string("abc"))));
  EXPECT_EQ(view(small_frame.envelope), "envabc");
  EXPECT_FALSE(small_frame.payload);

  const std::string large(kPoolInlinePayloadBytes + 1000, 'x');
  zmq::message_t received(large.data(), large.size());
  const void* received_at = received.data();
  PoolBytes frame_bytes(std::move(received));
  ASSERT_NE(frame_bytes.frame(), nullptr);
  EXPECT_EQ(frame_bytes.view(), large);
  PoolFrames out = pool_frames("env", std::move(frame_bytes));
  ASSERT_TRUE(out.payload);
  EXPECT_EQ(out.payload->data(), received_at) << "the received frame itself goes out";
  EXPECT_EQ(view(out.envelope), "env");

  PoolBytes owned{std::string(large)};
  EXPECT_EQ(owned.frame(), nullptr);
  PoolFrames from_string = pool_frames("env", std::move(owned));
  ASSERT_TRUE(from_string.payload);
  EXPECT_EQ(view(*from_string.payload), large);

  EXPECT_EQ(PoolBytes(zmq::message_t(std::string("abc"))).str(), "abc");
  EXPECT_EQ(std::move(PoolBytes(zmq::message_t(std::string("abcdef")))).take(), "abcdef");
  EXPECT_TRUE(PoolBytes().empty());
}

// Covers: a worker given a broker whose host does not resolve (issue 27 item 3) fails start()
// with "pool.host_unresolvable" naming the host, instead of running and reconnecting forever.
TEST(PoolWorker, ABrokerHostThatDoesNotResolveFailsStart) {
  (void)setup_logging({.level = "error"});
  PoolWorkerOptions options;
  options.broker_endpoint = "tcp://no-such-host.invalid:17552";
  auto worker = PoolWorker::start(
      options, [](const WorkItem&) -> Expected<std::string> { return std::string("never"); });
  ASSERT_FALSE(worker) << "started against a host that does not exist";
  EXPECT_EQ(worker.error().code, "pool.host_unresolvable");
  EXPECT_NE(worker.error().message.find("cannot resolve host no-such-host.invalid"),
            std::string::npos)
      << worker.error().message;
}

}  // namespace
}  // namespace cuda_agent
