#include "actors/work_pool_broker.h"

#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "actors/pool_dispatch.h"
#include "core/log.h"
#include "core/malloc_tuning.h"

namespace cuda_agent {

Status validate(const WorkPoolBrokerOptions& o) {
  auto bad = [](const std::string& what) {
    return Status(make_error(ErrorCategory::kInvalidInput, "pool.options", what));
  };
  if (o.heartbeat_timeout_ms < 1) return bad("heartbeat_timeout_ms must be >= 1");
  if (o.first_heartbeat_grace_ms < 0) return bad("first_heartbeat_grace_ms must be >= 0");
  if (o.max_attempts < 1) return bad("max_attempts must be >= 1");
  if (o.max_queued_requests < 0) return bad("max_queued_requests must be >= 0");
  if (o.max_queued_per_client < 1) return bad("max_queued_per_client must be >= 1");
  if (o.max_envelope_bytes < 64) return bad("max_envelope_bytes must be >= 64");
  if (o.max_payload_bytes < 0) return bad("max_payload_bytes must be >= 0");
  if (o.max_slots_per_worker < 1) return bad("max_slots_per_worker must be >= 1");
  if (o.housekeeping_interval_ms < 1) return bad("housekeeping_interval_ms must be >= 1");
  if (o.io_threads < 1 || o.io_threads > 64) return bad("io_threads must be in 1..64");
  if (o.curve && o.curve->allowed_client_public_z85.empty()) {
    return bad("CURVE needs at least one allowed client public key");
  }
  return Status::ok();
}

class WorkPoolBroker::Impl : public PoolOutbox {
 public:
  explicit Impl(const WorkPoolBrokerOptions& options)
      : options_(options),
        dispatcher_(options_, *this),
        limiter_(static_cast<int>(options.bad_frame_logs_per_second)) {}

  Status bind();
  void run();
  Expected<PoolStats> stats(std::chrono::milliseconds timeout);
  void stop();

  void to_client(const std::string& peer, std::string envelope, zmq::message_t* payload) override {
    send(clients_, peer, std::move(envelope), payload);
  }
  void to_worker(const std::string& peer, std::string envelope, zmq::message_t* payload) override {
    send(workers_, peer, std::move(envelope), payload);
  }

  std::string client_endpoint, worker_endpoint;

 private:
  void send(zmq::socket_t& socket, const std::string& peer, std::string envelope,
            zmq::message_t* payload) {
    PoolFrames frames = pool_frames(std::move(envelope), payload);
    // A ROUTER never blocks: a message to a gone or full peer is dropped.
    (void)socket.send(zmq::buffer(peer), zmq::send_flags::sndmore);
    (void)send_frames(socket, frames);
  }
  PoolStats stats_now() const {
    PoolStats s = dispatcher_.stats();
    s.wakes = wakes_;
    s.messages_read = messages_read_;
    return s;
  }
  static PoolNow now() { return PoolNow{std::chrono::steady_clock::now(), now_unix_ms()}; }

  void on_client_message(std::vector<zmq::message_t>& parts, std::size_t dropped);
  void on_worker_message(std::vector<zmq::message_t>& parts, std::size_t dropped);
  void reject(bool client, std::vector<zmq::message_t>& parts, const RequestId& id,
              const Error& error);
  bool on_control();
  void on_zap();
  void give_back_memory(std::size_t peak_queued);

  const WorkPoolBrokerOptions options_;
  zmq::context_t context_{static_cast<int>(options_.io_threads)};
  zmq::socket_t clients_{context_, zmq::socket_type::router};
  zmq::socket_t workers_{context_, zmq::socket_type::router};
  zmq::socket_t control_{context_, zmq::socket_type::pair};      // broker thread's end
  zmq::socket_t control_api_{context_, zmq::socket_type::pair};  // API end, under api_mutex_
  std::optional<zmq::socket_t> zap_;
  std::uint64_t wakes_ = 0, messages_read_ = 0;   // PoolStats.wakes, .messagesRead
  std::unordered_set<std::string> allowed_keys_;  // 32-byte binary CURVE public keys
  PoolDispatcher dispatcher_;
  LogLimiter limiter_;
  std::mutex api_mutex_;
  std::uint64_t stats_seq_ = 0;  // under api_mutex_
  std::thread thread_;
  bool stopped_ = false;  // under api_mutex_
};

Status WorkPoolBroker::Impl::bind() {
  try {
    const std::string control =
        "inproc://pool-broker-control-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
    control_.bind(control);
    control_api_.connect(control);
    if (options_.curve) {
      for (const auto& key : options_.curve->allowed_client_public_z85) {
        std::uint8_t raw[32];
        if (key.size() != 40 || !zmq_z85_decode(raw, key.c_str())) {
          return make_error(ErrorCategory::kInvalidInput, "pool.curve_key",
                            "allowed client key '" + key + "' is not a Z85 public key");
        }
        allowed_keys_.insert(std::string(reinterpret_cast<char*>(raw), 32));
      }
      // The ZAP handler must be bound before a CURVE socket accepts its first connection.
      zap_.emplace(context_, zmq::socket_type::rep);
      zap_->bind("inproc://zeromq.zap.01");
      RETURN_IF_ERROR(apply_curve_server(clients_, *options_.curve, "pool.clients"));
      RETURN_IF_ERROR(apply_curve_server(workers_, *options_.curve, "pool.workers"));
    }
    const std::int64_t hard_limit = 2 * options_.max_payload_bytes + options_.max_envelope_bytes;
    for (zmq::socket_t* s : {&clients_, &workers_}) {
      s->set(zmq::sockopt::linger, 0);
      s->set(zmq::sockopt::maxmsgsize, hard_limit);
    }
    if (options_.io_threads >= 2) {  // client connections on I/O thread 0, workers' on the rest
      clients_.set(zmq::sockopt::affinity, std::uint64_t{1});
      workers_.set(zmq::sockopt::affinity, ~std::uint64_t{1});
    }
  } catch (const zmq::error_t& e) {
    return zmq_failure("setting up the broker sockets", e);
  }
  auto bind_one = [](zmq::socket_t& s, const std::string& endpoint, std::string& bound) -> Status {
    try {
      s.bind(endpoint);
      bound = s.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      return make_error(ErrorCategory::kUnavailable, "pool.bind",
                        "cannot listen on " + endpoint + ": " + e.what());
    }
    return Status::ok();
  };
  RETURN_IF_ERROR(bind_one(clients_, options_.client_endpoint, client_endpoint));
  RETURN_IF_ERROR(bind_one(workers_, options_.worker_endpoint, worker_endpoint));
  log_info("pool broker listening", {{"pool", options_.name},
                                     {"clients", client_endpoint},
                                     {"workers", worker_endpoint},
                                     {"curve", options_.curve ? "on" : "off"}});
  thread_ = std::thread([this] {
    name_this_thread("pool-broker");
    run();
  });
  return Status::ok();
}

void WorkPoolBroker::Impl::run() {
  // One thread owns the sockets and waits in zmq::poll on them. zmq::poll on a ZeroMQ socket is
  // level-triggered (it asks the socket for ZMQ_EVENTS): a socket with a message waiting is
  // ready, whatever a send did to its descriptor's edge meanwhile. A wake reads at most 256
  // messages from each ROUTER, so that one busy side does not starve the other; what is left
  // makes the next poll return at once.
  const int watched = zap_ ? 4 : 3;
  zmq::pollitem_t items[] = {{clients_.handle(), 0, ZMQ_POLLIN, 0},
                             {workers_.handle(), 0, ZMQ_POLLIN, 0},
                             {control_.handle(), 0, ZMQ_POLLIN, 0},
                             {zap_ ? zap_->handle() : nullptr, 0, ZMQ_POLLIN, 0}};
  const auto interval = std::chrono::milliseconds(options_.housekeeping_interval_ms);
  auto next_housekeeping = std::chrono::steady_clock::now() + interval;
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  auto drain = [&](zmq::socket_t& socket, auto on_message) {
    for (int i = 0; i < 256 && recv_multipart(socket, parts, 3, dropped); ++i) {
      (this->*on_message)(parts, dropped);
      ++messages_read_;
    }
  };
  auto readable = [](zmq::socket_t& socket) {
    return (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  };
  for (;;) {
    try {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(
          next_housekeeping - std::chrono::steady_clock::now());
      zmq::poll(items, watched, std::max(wait, std::chrono::milliseconds(0)));
      if (items[0].revents || items[1].revents) ++wakes_;
      if (items[0].revents & ZMQ_POLLIN) drain(clients_, &Impl::on_client_message);
      if (items[1].revents & ZMQ_POLLIN) drain(workers_, &Impl::on_worker_message);
      if (items[2].revents & ZMQ_POLLIN) {
        while (readable(control_))
          if (!on_control()) return;
      }
      if (zap_ && (items[3].revents & ZMQ_POLLIN)) {
        while (readable(*zap_)) on_zap();
      }
      if (std::chrono::steady_clock::now() >= next_housekeeping) {
        dispatcher_.housekeeping(now());
        if (auto peak = dispatcher_.shrink_if_drained()) give_back_memory(*peak);
        next_housekeeping = std::chrono::steady_clock::now() + interval;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR)
        log_error(zmq_failure("pool broker loop", e), {{"pool", options_.name}});
    }
  }
}

void WorkPoolBroker::Impl::give_back_memory(std::size_t peak_queued) {
  // Only after a large queue (PoolDispatcher::kReleaseAfterQueued): below that the freed memory
  // is what the next burst reuses, as core/malloc_tuning.h intends.
  const auto t0 = std::chrono::steady_clock::now();
  const bool released = release_free_memory();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  log_info("pool queue drained", {{"pool", options_.name},
                                  {"peak_queued", std::to_string(peak_queued)},
                                  {"memory_released", released ? "yes" : "no"},
                                  {"trim_us", std::to_string(us.count())}});
}

void WorkPoolBroker::Impl::reject(bool client, std::vector<zmq::message_t>& parts,
                                  const RequestId& id, const Error& error) {
  dispatcher_.count_malformed();
  if (auto suppressed = limiter_.allow(std::chrono::steady_clock::now())) {
    log_warn("pool frame rejected",
             {{"pool", options_.name},
              {"socket", client ? "clients" : "workers"},
              {"peer", describe_peer(parts[0], parts.size() > 1 ? parts[1] : parts[0])},
              {"code", error.code},
              {"error", error.message},
              {"suppressed", std::to_string(*suppressed)}});
  }
  if (client) dispatcher_.refuse(std::string(view(parts[0])), id, error);
}

void WorkPoolBroker::Impl::on_client_message(std::vector<zmq::message_t>& parts,
                                             std::size_t dropped) {
  auto malformed = [](const std::string& what) {
    return make_error(ErrorCategory::kInvalidInput, "wire.malformed", what);
  };
  if (parts.size() < 2) return reject(true, parts, {}, malformed("empty message"));
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_envelope_bytes);
  auto frame = decode_pool_frame(view(parts[1]), limits);
  if (!frame) return reject(true, parts, {}, frame.error());
  PoolMessage* m = &frame->message;
  if (std::holds_alternative<PoolStatsRequest>(*m) && parts.size() == 2) {
    return to_client(std::string(view(parts[0])), encode_pool(stats_now()), nullptr);
  }
  auto* submit = std::get_if<PoolSubmit>(m);
  if (!submit) {
    return reject(true, parts, {},
                  make_error(ErrorCategory::kInvalidInput, "pool.unexpected_message",
                             std::string(pool_message_name(*m)) +
                                 " (with this framing) is not for the broker's client socket"));
  }
  const RequestId id = submit->header.request_id;
  if (id.value().empty() || submit->header.deadline_unix_ms <= 0) {
    return reject(true, parts, id,
                  make_error(ErrorCategory::kInvalidInput, "pool.bad_request",
                             "a request needs a request id and a deadline (deadline_unix_ms > 0)"));
  }
  zmq::message_t payload;
  if (!take_payload(parts, 1, dropped, *frame, payload)) {
    return reject(true, parts, id,
                  malformed("submit needs a payload of payloadBytes (" +
                            std::to_string(submit->payload_bytes) +
                            ") bytes, after its envelope or in one frame of its own"));
  }
  if (payload.size() > static_cast<std::size_t>(options_.max_payload_bytes)) {
    return reject(
        true, parts, id,
        make_error(ErrorCategory::kInvalidInput, "wire.too_large",
                   "payload of " + std::to_string(payload.size()) + " bytes exceeds the limit of " +
                       std::to_string(options_.max_payload_bytes)));
  }
  dispatcher_.on_submit(std::string(view(parts[0])), std::move(*submit), std::move(payload), now());
}

void WorkPoolBroker::Impl::on_worker_message(std::vector<zmq::message_t>& parts,
                                             std::size_t dropped) {
  if (parts.size() < 2) {
    return reject(false, parts, {},
                  make_error(ErrorCategory::kInvalidInput, "wire.malformed", "empty message"));
  }
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_envelope_bytes);
  auto frame = decode_pool_frame(view(parts[1]), limits);
  if (!frame) return reject(false, parts, {}, frame.error());
  PoolMessage* m = &frame->message;
  zmq::message_t payload;
  if (!take_payload(parts, 1, dropped, *frame, payload)) {
    return reject(false, parts, {},
                  make_error(ErrorCategory::kInvalidInput, "wire.malformed",
                             std::string(pool_message_name(*m)) + ": wrong payload framing"));
  }
  const std::string peer(view(parts[0]));
  const PoolNow clock = now();
  if (auto* ready = std::get_if<PoolReady>(m)) {
    if (ready->worker_id.value().empty() || ready->slots == 0 ||
        ready->slots > static_cast<std::uint64_t>(options_.max_slots_per_worker)) {
      return reject(false, parts, {},
                    make_error(ErrorCategory::kInvalidInput, "pool.bad_ready",
                               "ready needs a worker id and 1.." +
                                   std::to_string(options_.max_slots_per_worker) + " slots (got " +
                                   std::to_string(ready->slots) + ")"));
    }
    dispatcher_.on_ready(peer, *ready, clock);
  } else if (auto* hb = std::get_if<PoolHeartbeat>(m)) {
    dispatcher_.on_heartbeat(peer, *hb, clock);
  } else if (auto* result = std::get_if<PoolResult>(m)) {
    dispatcher_.on_result(peer, *result, std::move(payload), clock);
  } else if (std::holds_alternative<PoolDisconnect>(*m)) {
    dispatcher_.on_disconnect(peer, clock);
  } else {
    reject(false, parts, {},
           make_error(ErrorCategory::kInvalidInput, "pool.unexpected_message",
                      std::string(pool_message_name(*m)) + " is not for the worker socket"));
  }
}

bool WorkPoolBroker::Impl::on_control() {
  zmq::message_t command;
  if (!control_.recv(command, zmq::recv_flags::dontwait)) return true;
  if (view(command) == "stop") return false;
  if (command.size() < 7) return true;
  // "stats <seq>": answer [seq][PoolStats envelope].
  control_.send(zmq::buffer(view(command).substr(6)), zmq::send_flags::sndmore);
  control_.send(take_frame(encode_pool(stats_now())), zmq::send_flags::none);
  return true;
}

void WorkPoolBroker::Impl::on_zap() {
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  if (!recv_multipart(*zap_, parts, 8, dropped)) return;
  // ZAP 1.0 (RFC 27): version, request id, domain, address, identity, mechanism, credentials.
  bool allowed = parts.size() >= 7 && view(parts[0]) == "1.0" && view(parts[5]) == "CURVE" &&
                 parts[6].size() == 32 && allowed_keys_.count(std::string(view(parts[6])));
  std::string user;
  if (allowed) {
    char z85[41];
    zmq_z85_encode(z85, static_cast<const std::uint8_t*>(parts[6].data()), 32);
    user = z85;
  } else if (auto suppressed = limiter_.allow(std::chrono::steady_clock::now())) {
    // Refused peers reconnect every 100 ms or so: rate-limited like bad frames.
    log_warn("pool connection refused", {{"pool", options_.name},
                                         {"domain", parts.size() > 2 ? view(parts[2]) : ""},
                                         {"peer", parts.size() > 3 ? view(parts[3]) : ""},
                                         {"reason", "client key not on the allow-list"},
                                         {"suppressed", std::to_string(*suppressed)}});
  }
  zap_->send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
  zap_->send(parts.size() > 1 ? zmq::buffer(view(parts[1])) : zmq::const_buffer(),
             zmq::send_flags::sndmore);
  zap_->send(allowed ? zmq::str_buffer("200") : zmq::str_buffer("400"), zmq::send_flags::sndmore);
  zap_->send(allowed ? zmq::str_buffer("OK") : zmq::str_buffer("key not allowed"),
             zmq::send_flags::sndmore);
  zap_->send(zmq::buffer(user), zmq::send_flags::sndmore);
  zap_->send(zmq::const_buffer(), zmq::send_flags::none);
}

Expected<PoolStats> WorkPoolBroker::Impl::stats(std::chrono::milliseconds timeout) {
  std::lock_guard lock(api_mutex_);
  if (stopped_) {
    return make_error(ErrorCategory::kUnavailable, "pool.stopped", "the broker was stopped");
  }
  const std::string seq = std::to_string(++stats_seq_);
  try {
    control_api_.send(zmq::buffer("stats " + seq), zmq::send_flags::none);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<zmq::message_t> parts;
    std::size_t dropped = 0;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      zmq::pollitem_t item{control_api_.handle(), 0, ZMQ_POLLIN, 0};
      if (left.count() <= 0 || zmq::poll(&item, 1, left) == 0) {
        return make_error(ErrorCategory::kTimeout, "pool.stats_timeout",
                          "the broker thread did not answer a stats request in time");
      }
      // Answers to requests that timed out earlier carry an older seq: skip them.
      if (recv_multipart(control_api_, parts, 2, dropped) && parts.size() == 2 &&
          view(parts[0]) == seq) {
        auto m = decode_pool_message(view(parts[1]));
        if (!m) return m.error();
        return std::get<PoolStats>(std::move(*m));
      }
    }
  } catch (const zmq::error_t& e) {
    return zmq_failure("asking the broker for stats", e);
  }
}

void WorkPoolBroker::Impl::stop() {
  std::lock_guard lock(api_mutex_);
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    control_api_.send(zmq::str_buffer("stop"), zmq::send_flags::none);
    thread_.join();
  }
  log_info("pool broker stopped", {{"pool", options_.name}});
}

Expected<std::unique_ptr<WorkPoolBroker>> WorkPoolBroker::start(
    const WorkPoolBrokerOptions& options) {
  RETURN_IF_ERROR(validate(options));
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->bind());
  return std::unique_ptr<WorkPoolBroker>(new WorkPoolBroker(std::move(impl)));
}

WorkPoolBroker::WorkPoolBroker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkPoolBroker::~WorkPoolBroker() { stop(); }
const std::string& WorkPoolBroker::client_endpoint() const { return impl_->client_endpoint; }
const std::string& WorkPoolBroker::worker_endpoint() const { return impl_->worker_endpoint; }
Expected<PoolStats> WorkPoolBroker::stats(std::chrono::milliseconds timeout) {
  return impl_->stats(timeout);
}
void WorkPoolBroker::stop() { impl_->stop(); }

}  // namespace cuda_agent
