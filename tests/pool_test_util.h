// Helpers shared by the work-pool tests (tests/pool_*_test.cpp): fast heartbeat settings, request
// headers, a condition wait with a deadline, and a raw DEALER that speaks the pool wire format by
// hand (to play a misbehaving worker or client).
//
// Threading: each helper object belongs to the test thread that made it.
#pragma once

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "actors/pool_client.h"
#include "actors/pool_transport.h"
#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "core/log.h"
#include "messages/pool_codec.h"

namespace cuda_agent::pool_test {

/// The value of an Expected the test cannot go on without.
template <class T>
T must(Expected<T> e) {
  if (!e) {
    ADD_FAILURE() << e.error().to_string();
    std::abort();
  }
  return std::move(e).value();
}

inline void quiet_logs() { (void)setup_logging({.level = "warn"}); }

/// Heartbeats every 20 ms, a worker counts as lost after 250 ms of silence.
inline WorkPoolBrokerOptions fast_broker() {
  WorkPoolBrokerOptions o;
  o.heartbeat_timeout_ms = 250;
  o.first_heartbeat_grace_ms = 250;
  o.housekeeping_interval_ms = 5;
  o.max_payload_bytes = 4 << 20;  // so the oversized-payload case stays cheap
  return o;
}

inline PoolWorkerOptions fast_worker(const WorkPoolBroker& broker, std::string id,
                                     std::vector<std::string> tags = {}, std::int64_t slots = 1) {
  PoolWorkerOptions o;
  o.broker_endpoint = broker.worker_endpoint();
  o.worker_id = WorkerId{std::move(id)};
  o.tags = std::move(tags);
  o.slots = slots;
  o.heartbeat_interval_ms = 20;
  o.broker_timeout_ms = 250;
  return o;
}

inline RequestHeader header(const std::string& id, std::int64_t deadline_in_ms = 20'000) {
  RequestHeader h;
  h.request_id = RequestId{id};
  h.run_id = RunId{"test-run"};
  h.deadline_unix_ms = now_unix_ms() + deadline_in_ms;
  return h;
}

inline PoolRequest request(const std::string& id, std::string payload,
                           std::vector<std::string> tags = {},
                           std::int64_t deadline_in_ms = 20'000) {
  return PoolRequest{header(id, deadline_in_ms), std::move(tags), std::move(payload)};
}

/// Waits for `condition` to hold, re-checking every millisecond, for at most `timeout`. This is
/// how a test waits on broker state it can only observe by asking (stats).
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

/// A one-shot gate a test handler waits on. The wait is bounded, so a test that fails before
/// opening the gate cannot hang in a worker's destructor.
class Gate {
 public:
  void open() {
    if (!opened_.exchange(true)) promise_.set_value();
  }
  void wait() const { (void)future_.wait_for(std::chrono::seconds(15)); }

 private:
  std::atomic<bool> opened_{false};
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

/// Broker stats, failing the test when the broker does not answer.
inline PoolStats stats_of(WorkPoolBroker& broker) {
  auto s = broker.stats();
  EXPECT_TRUE(s) << s.error().to_string();
  return s ? *s : PoolStats{};
}

inline bool has_workers(WorkPoolBroker& broker, std::size_t n) {
  return eventually([&] { return stats_of(broker).workers.size() == n; });
}

/// A DEALER socket driven by hand: sends raw frames, receives with a deadline.
class RawPeer {
 public:
  explicit RawPeer(const std::string& endpoint) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  void send(const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      (void)socket_.send(zmq::buffer(frames[i]),
                         i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
  /// The next message's frames, or empty after `timeout`.
  std::vector<std::string> receive(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    std::vector<std::string> frames;
    if (zmq::poll(&item, 1, timeout) <= 0) return frames;
    zmq::message_t m;
    do {
      (void)socket_.recv(m);
      frames.emplace_back(static_cast<const char*>(m.data()), m.size());
    } while (m.more());
    return frames;
  }
  /// The next message that decodes to a T (others are skipped), or nullopt after `timeout`.
  template <class T>
  std::optional<std::pair<T, std::vector<std::string>>> receive_as(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto frames = receive(left);
      if (frames.empty()) return std::nullopt;
      // An inline payload (messages/pool_codec.h) is split off, so that callers always see
      // [envelope, payload] for a message that carries one.
      auto f = decode_pool_frame(frames[0]);
      if (!f || !std::holds_alternative<T>(f->message)) continue;
      if (frames.size() == 1 && has_payload_frame(f->message)) {
        std::string payload(f->trailing);
        frames[0].resize(frames[0].size() - payload.size());
        frames.push_back(std::move(payload));
      }
      return std::make_pair(std::get<T>(std::move(f->message)), frames);
    }
  }
  zmq::socket_t& socket() { return socket_; }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

}  // namespace cuda_agent::pool_test
