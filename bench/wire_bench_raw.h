// bench_wire's raw ZeroMQ paths (actors/wire_bench.cpp): the anchors the pool path is compared
// with. A DEALER client, a ROUTER echo thread, and a ROUTER/ROUTER relay thread with a DEALER echo
// worker behind it. Benchmark code only; not part of the library.
//
// Threading: each Loop runs its body on its own thread with its own sockets until destroyed; a
// Path is used by one thread.
#pragma once

#include <zmq.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "actors/pool_transport.h"

namespace cuda_agent::wire_bench {

// One request path under test: a blocking round trip and a windowed pipeline.
struct Path {
  virtual ~Path() = default;
  virtual std::string round_trip(const std::string& payload) = 0;
  /// Sends `count` requests with at most `window` outstanding; false on a wrong reply.
  virtual bool pipeline(const std::string& payload, int count, int window) = 0;
  /// Brings the path to its steady state for this payload size before it is timed (a pool's
  /// result cache full, as in a long-running broker); nothing for stateless paths.
  virtual void reach_steady_state(const std::string& /*payload*/, int /*window*/) {}
  /// A broker's (wakes, messages read) so far (PoolStats); nothing for paths without one.
  virtual std::optional<std::pair<std::uint64_t, std::uint64_t>> broker_reads() { return {}; }
};

class RawClient : public Path {
 public:
  explicit RawClient(const std::string& endpoint) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  std::string round_trip(const std::string& payload) override {
    (void)socket_.send(zmq::buffer(payload), zmq::send_flags::none);
    zmq::message_t reply;
    (void)socket_.recv(reply);
    return std::string(view(reply));
  }
  bool pipeline(const std::string& payload, int count, int window) override {
    int sent = 0, received = 0;
    bool ok = true;
    while (received < count) {
      while (sent < count && sent - received < window) {
        (void)socket_.send(zmq::buffer(payload), zmq::send_flags::none);
        ++sent;
      }
      zmq::message_t reply;
      (void)socket_.recv(reply);
      ok &= reply.size() == payload.size();
      ++received;
    }
    return ok;
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_{context_, zmq::socket_type::dealer};
};

// A thread that owns its sockets and polls them until stopped.
class Loop {
 public:
  ~Loop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  /// Runs `body` on a thread named `name` (name_this_thread).
  void start(const char* name, std::function<void(zmq::context_t&, std::atomic<bool>&)> body) {
    thread_ = std::thread([this, name, body] {
      name_this_thread(name);
      body(context_, stop_);
    });
  }
  zmq::context_t& context() { return context_; }

 private:
  zmq::context_t context_{1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

inline bool wait_readable(zmq::socket_t& a, zmq::socket_t* b, bool& a_ready, bool& b_ready) {
  zmq::pollitem_t items[] = {{a.handle(), 0, ZMQ_POLLIN, 0}, {b ? b->handle() : nullptr, 0, 0, 0}};
  if (b) items[1].events = ZMQ_POLLIN;
  zmq::poll(items, b ? 2 : 1, std::chrono::milliseconds(50));
  a_ready = items[0].revents & ZMQ_POLLIN;
  b_ready = b && (items[1].revents & ZMQ_POLLIN);
  return a_ready || b_ready;
}

// ROUTER that sends every [id][payload] back.
inline std::string start_echo(Loop& loop) {
  auto router = std::make_shared<zmq::socket_t>(loop.context(), zmq::socket_type::router);
  router->set(zmq::sockopt::linger, 0);
  router->bind("tcp://127.0.0.1:0");
  std::string endpoint = router->get(zmq::sockopt::last_endpoint);
  loop.start("raw-echo", [router](zmq::context_t&, std::atomic<bool>& stop) {
    bool ready = false, unused = false;
    while (!stop) {
      if (!wait_readable(*router, nullptr, ready, unused)) continue;
      zmq::message_t id, payload;
      while (router->recv(id, zmq::recv_flags::dontwait)) {
        (void)router->recv(payload);
        (void)router->send(id, zmq::send_flags::sndmore);
        (void)router->send(payload, zmq::send_flags::none);
      }
    }
  });
  return endpoint;
}

// ROUTER/ROUTER relay thread plus a DEALER echo worker thread behind it.
inline std::string start_relay(Loop& relay, Loop& worker) {
  auto front = std::make_shared<zmq::socket_t>(relay.context(), zmq::socket_type::router);
  auto back = std::make_shared<zmq::socket_t>(relay.context(), zmq::socket_type::router);
  for (auto* s : {front.get(), back.get()}) {
    s->set(zmq::sockopt::linger, 0);
    s->bind("tcp://127.0.0.1:0");
  }
  std::string back_endpoint = back->get(zmq::sockopt::last_endpoint);
  relay.start("raw-relay", [front, back](zmq::context_t&, std::atomic<bool>& stop) {
    std::string worker_id;
    bool f = false, b = false;
    while (!stop) {
      if (!wait_readable(*front, back.get(), f, b)) continue;
      zmq::message_t id, client, payload;
      while (back->recv(id, zmq::recv_flags::dontwait)) {  // [worker][client][payload] or "R"
        (void)back->recv(client);
        if (!client.more()) {
          worker_id = std::string(view(id));
          continue;
        }
        (void)back->recv(payload);
        (void)front->send(client, zmq::send_flags::sndmore);
        (void)front->send(payload, zmq::send_flags::none);
      }
      while (!worker_id.empty() && front->recv(client, zmq::recv_flags::dontwait)) {
        (void)front->recv(payload);
        (void)back->send(zmq::buffer(worker_id), zmq::send_flags::sndmore);
        (void)back->send(client, zmq::send_flags::sndmore);
        (void)back->send(payload, zmq::send_flags::none);
      }
    }
  });
  worker.start("raw-relay-echo", [back_endpoint](zmq::context_t& context, std::atomic<bool>& stop) {
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(back_endpoint);
    (void)dealer.send(zmq::str_buffer("R"), zmq::send_flags::none);
    bool ready = false, unused = false;
    while (!stop) {
      if (!wait_readable(dealer, nullptr, ready, unused)) continue;
      zmq::message_t client, payload;
      while (dealer.recv(client, zmq::recv_flags::dontwait)) {
        (void)dealer.recv(payload);
        (void)dealer.send(client, zmq::send_flags::sndmore);
        (void)dealer.send(payload, zmq::send_flags::none);
      }
    }
  });
  return front->get(zmq::sockopt::last_endpoint);
}

}  // namespace cuda_agent::wire_bench
