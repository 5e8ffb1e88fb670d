#include "coordinator/coordinator_gateway.h"

#include <zmq.h>

#include <caf/all.hpp>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <utility>

#include "actors/actor_runtime.h"
#include "core/clock.h"
#include "core/log.h"
#include "messages/coordinator_codec.h"

// Local only: frames cross between the io thread and the gateway's actors, never a CAF network
// boundary (ZeroMQ carries them).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cuda_agent::CoordinatorFrame)

namespace cuda_agent {
namespace {

using gw_in_atom = caf::atom_constant<caf::atom("gwin")>;          // io thread -> gateway
using gw_reply_atom = caf::atom_constant<caf::atom("gwreply")>;    // gateway -> proxy
using gw_heard_atom = caf::atom_constant<caf::atom("gwheard")>;    // gateway -> proxy
using gw_retire_atom = caf::atom_constant<caf::atom("gwretire")>;  // gateway -> proxy
using gw_tick_atom = caf::atom_constant<caf::atom("gwtick")>;      // proxy -> itself
using gw_follow_atom = caf::atom_constant<caf::atom("gwfollow")>;  // gateway -> itself
using gw_stop_atom = caf::atom_constant<caf::atom("gwstop")>;      // Impl::stop -> gateway

struct AtomicCounters {
  std::atomic<std::uint64_t> frames_in{0}, refused{0}, frames_out{0}, learners_attached{0},
      learners_detached{0};
};

// Frames the actors want sent. Only the io thread touches the socket: the actors queue here and
// wake it through the eventfd.
class Outbox {
 public:
  void push(const std::string& peer, const CoordinatorFrame& frame) {
    std::string bytes = encode_coordinator_frame(frame);
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(peer, std::move(bytes));
    }
    wake();
  }
  void wake() { wake_fd.notify(); }
  std::deque<std::pair<std::string, std::string>> take() {
    wake_fd.drain();
    std::lock_guard lock(mutex_);
    return std::exchange(queue_, {});
  }
  const WakeFd wake_fd;

 private:
  std::mutex mutex_;
  std::deque<std::pair<std::string, std::string>> queue_;
};

Error gateway_error(ErrorCategory category, std::string code, std::string message) {
  return make_error(category, std::move(code), std::move(message));
}

// A failed request to the coordinator as the error its client gets.
Error from_coordinator(caf::actor_system& system, const caf::error& e, std::string_view what) {
  Error out = from_caf_error(system, e);
  if (out.code == "actor.request_timeout") {
    return gateway_error(ErrorCategory::kTimeout, "coordinator.timeout",
                         "the coordinator did not answer " + std::string(what) + " in time");
  }
  if (out.code == "actor.receiver_down") {
    return gateway_error(ErrorCategory::kUnavailable, "coordinator.unavailable",
                         "the coordinator went away while answering " + std::string(what));
  }
  return out.with_context("coordinator: " + std::string(what));
}

// --- the learner proxy -------------------------------------------------------------------------

using learner_proxy =
    learner_peer::extend<caf::reacts_to<gw_reply_atom, CoordinatorFrame>,
                         caf::reacts_to<gw_heard_atom>, caf::reacts_to<gw_retire_atom, std::string>,
                         caf::reacts_to<gw_tick_atom>>;

struct ProxyArgs {
  std::shared_ptr<Outbox> outbox;
  std::shared_ptr<AtomicCounters> counters;
  std::string peer;  // ROUTER routing id of the learner's connection
  WorkerId learner;
  RunId run;
  std::chrono::milliseconds silence{10'000};
  std::string prefix;  // of request ids: unique per proxy
};

struct ProxyState {
  static inline const char* name = "cuda_agent.learner_proxy";
  ProxyArgs args;
  caf::actor_clock::time_point last_heard;
  std::uint64_t seq = 0;
  std::map<std::string, caf::typed_response_promise<StepDone>> steps;
  std::map<std::string, caf::typed_response_promise<CheckpointDone>> checkpoints;
};

using ProxySelf = learner_proxy::stateful_pointer<ProxyState>;

// Fails what the proxy holds and ends it: the coordinator (monitoring it) offers the batch again.
void retire(ProxySelf self, const std::string& why) {
  auto& st = self->state;
  log_warn("coordinator gateway: learner " + st.args.learner.value() + " detached: " + why);
  for (auto& [id, p] : st.steps) p.deliver(caf::make_error(caf::sec::request_receiver_down, why));
  for (auto& [id, p] : st.checkpoints)
    p.deliver(caf::make_error(caf::sec::request_receiver_down, why));
  st.steps.clear();
  st.checkpoints.clear();
  st.args.counters->learners_detached++;
  self->quit(
      caf::make_error(caf::sec::runtime_error, "learner " + st.args.learner.value() + ": " + why));
}

std::string next_request_id(ProxySelf self) {
  return self->state.args.prefix + "-" + std::to_string(++self->state.seq);
}

learner_proxy::behavior_type learner_proxy_fn(ProxySelf self, ProxyArgs args) {
  self->state.args = std::move(args);
  self->state.last_heard = self->clock().now();
  const auto check_every = std::max(self->state.args.silence / 4, std::chrono::milliseconds(10));
  self->delayed_send(self, check_every, gw_tick_atom::value);
  return {
      [self](train_step_atom, TrainStep& step) {
        auto& st = self->state;
        auto promise = self->make_response_promise<StepDone>();
        const std::string id = next_request_id(self);
        st.steps.emplace(id, promise);
        st.args.outbox->push(st.args.peer, CoordinatorFrame{id, st.args.run, std::move(step)});
        return promise;
      },
      [self](checkpoint_atom, CheckpointRequest& request) {
        auto& st = self->state;
        auto promise = self->make_response_promise<CheckpointDone>();
        const std::string id = next_request_id(self);
        st.checkpoints.emplace(id, promise);
        st.args.outbox->push(st.args.peer, CoordinatorFrame{id, st.args.run, std::move(request)});
        return promise;
      },
      [self](gw_reply_atom, CoordinatorFrame& frame) {
        auto& st = self->state;
        st.last_heard = self->clock().now();
        auto step = st.steps.find(frame.request_id);
        auto checkpoint = st.checkpoints.find(frame.request_id);
        if (auto* done = std::get_if<StepDone>(&frame.body); done && step != st.steps.end()) {
          step->second.deliver(std::move(*done));
          st.steps.erase(step);
        } else if (auto* cp = std::get_if<CheckpointDone>(&frame.body);
                   cp && checkpoint != st.checkpoints.end()) {
          checkpoint->second.deliver(std::move(*cp));
          st.checkpoints.erase(checkpoint);
        } else if (auto* failure = std::get_if<CoordinatorFailure>(&frame.body)) {
          auto e = caf::make_error(caf::sec::runtime_error, failure->error.to_string());
          if (step != st.steps.end()) {
            step->second.deliver(e);
            st.steps.erase(step);
          } else if (checkpoint != st.checkpoints.end()) {
            checkpoint->second.deliver(e);
            st.checkpoints.erase(checkpoint);
          }
        } else {
          // A late answer (its request was failed already) or one that does not match its id.
          log_debug("coordinator gateway: learner answer dropped",
                    {{"learner", st.args.learner.value()}, {"request", frame.request_id}});
        }
      },
      [self](gw_heard_atom) { self->state.last_heard = self->clock().now(); },
      [self](gw_retire_atom, const std::string& why) { retire(self, why); },
      [self, check_every](gw_tick_atom) {
        auto& st = self->state;
        if (self->clock().now() - st.last_heard > st.args.silence) {
          retire(self, "silent for more than " + std::to_string(st.args.silence.count()) + " ms");
          return;
        }
        self->delayed_send(self, check_every, gw_tick_atom::value);
      },
  };
}

// --- the gateway actor -------------------------------------------------------------------------

struct GatewayArgs {
  CoordinatorGatewayOptions options;
  std::shared_ptr<Outbox> outbox;
  std::shared_ptr<AtomicCounters> counters;
  coordinator_supervisor supervisor;  // null: `coordinator` is the only one
  coordinator_actor coordinator;
};

struct GatewayState {
  static inline const char* name = "cuda_agent.coordinator_gateway";
  GatewayArgs args;
  coordinator_actor coordinator;  // the one answering now; null while none is known
  learner_proxy proxy;            // the attached learner's, or null
  std::string learner_peer;
  WorkerId learner;
  std::uint64_t proxies = 0;
};

using GatewaySelf = caf::stateful_actor<GatewayState>*;

void reply(GatewaySelf self, const std::string& peer, const std::string& id, CoordinatorBody body) {
  self->state.args.outbox->push(
      peer, CoordinatorFrame{id, self->state.args.options.run, std::move(body)});
}

void fail(GatewaySelf self, const std::string& peer, const std::string& id, Error error) {
  reply(self, peer, id, CoordinatorFailure{std::move(error)});
}

// Asks the supervisor for the coordinator now running, and follows it until it exits.
void follow(GatewaySelf self) {
  auto& st = self->state;
  self->request(st.args.supervisor, std::chrono::seconds(5), current_atom::value)
      .then(
          [self](coordinator_actor& c) {
            if (!c) {
              self->delayed_send(self, std::chrono::milliseconds(100), gw_follow_atom::value);
              return;
            }
            self->state.coordinator = c;
            self->monitor(c);
          },
          [self](caf::error&) {
            self->delayed_send(self, std::chrono::milliseconds(100), gw_follow_atom::value);
          });
}

template <class Reply, class... Ts>
void ask(GatewaySelf self, const std::string& peer, const std::string& id, const char* what,
         Ts&&... xs) {
  auto& st = self->state;
  if (!st.coordinator) {
    fail(self, peer, id,
         gateway_error(ErrorCategory::kUnavailable, "coordinator.unavailable",
                       std::string("no coordinator is running to answer ") + what +
                           " (it is restarting); ask again"));
    return;
  }
  self->request(st.coordinator, st.args.options.request_timeout, std::forward<Ts>(xs)...)
      .then([self, peer, id](Reply& r) { reply(self, peer, id, std::move(r)); },
            [self, peer, id, what](caf::error& e) {
              fail(self, peer, id, from_coordinator(self->system(), e, what));
            });
}

void attach(GatewaySelf self, const std::string& peer, const AttachLearner& a) {
  auto& st = self->state;
  if (st.coordinator) {
    self->send(st.coordinator, heartbeat_atom::value, Heartbeat{a.learner, MemberRole::kLearner});
  }
  if (st.proxy && st.learner_peer == peer && st.learner == a.learner) return;  // a keep-alive
  learner_proxy old = std::move(st.proxy);
  ProxyArgs args{st.args.outbox, st.args.counters, peer, a.learner, st.args.options.run,
                 st.args.options.learner_silence_timeout,
                 // Unique across restarts of this process: a learner still answering a request
                 // of the previous coordinator must not match one of this coordinator's.
                 "learner-" + std::to_string(::getpid()) + "-" + std::to_string(now_unix_ms()) +
                     "-" + std::to_string(++st.proxies)};
  st.proxy = self->spawn(learner_proxy_fn, std::move(args));
  self->monitor(st.proxy);
  st.learner_peer = peer;
  st.learner = a.learner;
  st.args.counters->learners_attached++;
  log_info("coordinator gateway: learner attached", {{"learner", a.learner.value()}});
  learner_peer handle = st.proxy;
  if (st.args.supervisor) {
    self->send(st.args.supervisor, attach_learner_atom::value, handle);
  } else if (st.coordinator) {
    self->send(st.coordinator, attach_learner_atom::value, handle);
  }
  if (old) {
    self->send(old, gw_retire_atom::value,
               "replaced by learner " + a.learner.value() + " on a new connection");
  }
}

caf::behavior gateway_fn(GatewaySelf self, GatewayArgs args) {
  auto& st = self->state;
  st.args = std::move(args);
  if (st.args.supervisor) {
    follow(self);
  } else {
    st.coordinator = st.args.coordinator;
    self->monitor(st.coordinator);
  }
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.coordinator && dm.source == st.coordinator.address()) {
      st.coordinator = nullptr;
      // The supervisor starts the next one from the store; ask for it once that had a moment.
      if (st.args.supervisor) {
        self->delayed_send(self, std::chrono::milliseconds(50), gw_follow_atom::value);
      }
    } else if (st.proxy && dm.source == st.proxy.address()) {
      st.proxy = nullptr;
      st.learner_peer.clear();
    }
  });
  return {
      [self](gw_in_atom, const std::string& peer, CoordinatorFrame& frame) {
        auto& st = self->state;
        const bool from_learner = st.proxy && peer == st.learner_peer;
        if (from_learner) self->send(st.proxy, gw_heard_atom::value);
        const std::string& id = frame.request_id;
        CoordinatorBody& body = frame.body;
        if (auto* r = std::get_if<WorkRequest>(&body)) {
          ask<WorkReply>(self, peer, id, "a work request", work_atom::value, std::move(*r));
        } else if (auto* s = std::get_if<TrajectorySubmission>(&body)) {
          ask<SubmitReply>(self, peer, id, "a trajectory submission", submit_atom::value,
                           std::move(*s));
        } else if (std::holds_alternative<StatusRequest>(body)) {
          ask<CoordinatorStatus>(self, peer, id, "a status request", status_atom::value);
        } else if (auto* h = std::get_if<Heartbeat>(&body)) {
          if (h->role == MemberRole::kLearner && !st.proxy) {
            // A learner that attached to an earlier gateway (this process restarted) or whose
            // proxy was ended: it attaches again. With a learner attached, another one's
            // heartbeats are only heartbeats, so two learners never take turns.
            attach(self, peer, AttachLearner{h->member});
          } else if (st.coordinator) {
            self->send(st.coordinator, heartbeat_atom::value, std::move(*h));
          }
        } else if (auto* a = std::get_if<AttachLearner>(&body)) {
          attach(self, peer, *a);
        } else if (from_learner) {  // StepDone, CheckpointDone, CoordinatorFailure
          self->send(st.proxy, gw_reply_atom::value, std::move(frame));
        } else {
          log_warn("coordinator gateway: an answer from a peer that is not the learner dropped",
                   {{"request", id}});
        }
      },
      [self](gw_follow_atom) {
        if (!self->state.coordinator) follow(self);
      },
      [self](gw_stop_atom) {
        auto& st = self->state;
        if (st.proxy) self->send(st.proxy, gw_retire_atom::value, std::string("gateway stopped"));
        self->quit();
      },
  };
}

// Which bodies the coordinator's socket takes from its peers.
bool inbound(const CoordinatorBody& body) {
  return std::holds_alternative<WorkRequest>(body) ||
         std::holds_alternative<TrajectorySubmission>(body) ||
         std::holds_alternative<Heartbeat>(body) || std::holds_alternative<StatusRequest>(body) ||
         std::holds_alternative<AttachLearner>(body) || std::holds_alternative<StepDone>(body) ||
         std::holds_alternative<CheckpointDone>(body) ||
         std::holds_alternative<CoordinatorFailure>(body);
}

}  // namespace

// --- the io thread -----------------------------------------------------------------------------

class CoordinatorGateway::Impl {
 public:
  Impl(caf::actor_system& system, CoordinatorGatewayOptions options)
      : system_(system),
        options_(std::move(options)),
        limiter_(static_cast<int>(options_.bad_frame_logs_per_second)) {}
  ~Impl() { stop(); }

  Status bind();
  void start_thread(coordinator_supervisor supervisor, coordinator_actor coordinator);
  void stop();

  std::string endpoint;
  std::shared_ptr<AtomicCounters> counters = std::make_shared<AtomicCounters>();

 private:
  void run();
  void on_message(std::vector<zmq::message_t>& parts, std::size_t dropped);
  void refuse(std::vector<zmq::message_t>& parts, const std::string& id, const Error& error);
  void send(const std::string& peer, std::string bytes);
  void on_zap();

  caf::actor_system& system_;
  const CoordinatorGatewayOptions options_;
  std::shared_ptr<Outbox> outbox_ = std::make_shared<Outbox>();
  zmq::context_t context_{1};
  zmq::socket_t router_{context_, zmq::socket_type::router};
  std::optional<zmq::socket_t> zap_;
  std::unordered_set<std::string> allowed_keys_;  // 32-byte binary CURVE public keys
  LogLimiter limiter_;
  caf::actor gateway_;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mutex_;
  bool stopped_ = false;  // under stop_mutex_
  std::thread thread_;
};

Status CoordinatorGateway::Impl::bind() {
  if (options_.run.value().empty()) {
    return make_error(ErrorCategory::kInvalidInput, "coordinator.gateway_options",
                      "the gateway needs the run id (CoordinatorGatewayOptions::run)");
  }
  if (options_.request_timeout.count() <= 0 || options_.learner_silence_timeout.count() <= 0 ||
      options_.max_frame_bytes < 1024) {
    return make_error(ErrorCategory::kInvalidInput, "coordinator.gateway_options",
                      "request_timeout and learner_silence_timeout must be > 0 and "
                      "max_frame_bytes >= 1024");
  }
  if (!outbox_->wake_fd.valid()) {
    return make_error(ErrorCategory::kIo, "coordinator.eventfd", "cannot create an eventfd");
  }
  try {
    router_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::maxmsgsize, options_.max_frame_bytes);
    // A client that reconnects keeps its routing id (it sets its own): the new connection takes
    // the id over, so replies reach it and the learner keeps its proxy.
    router_.set(zmq::sockopt::router_handover, 1);
    if (options_.curve) {
      if (options_.curve->allowed_client_public_z85.empty()) {
        return make_error(ErrorCategory::kInvalidInput, "coordinator.gateway_options",
                          "CURVE needs at least one allowed client public key");
      }
      for (const auto& key : options_.curve->allowed_client_public_z85) {
        std::uint8_t raw[32];
        if (key.size() != 40 || !zmq_z85_decode(raw, key.c_str())) {
          return make_error(ErrorCategory::kInvalidInput, "coordinator.curve_key",
                            "allowed client key '" + key + "' is not a Z85 public key");
        }
        allowed_keys_.insert(std::string(reinterpret_cast<char*>(raw), 32));
      }
      // The ZAP handler must be bound before a CURVE socket accepts its first connection.
      zap_.emplace(context_, zmq::socket_type::rep);
      zap_->bind("inproc://zeromq.zap.01");
      RETURN_IF_ERROR(apply_curve_server(router_, *options_.curve, "coordinator"));
    }
    router_.bind(options_.endpoint);
    endpoint = router_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return make_error(ErrorCategory::kUnavailable, "coordinator.bind",
                      "cannot listen on " + options_.endpoint + ": " + e.what());
  }
  return Status::ok();
}

void CoordinatorGateway::Impl::start_thread(coordinator_supervisor supervisor,
                                            coordinator_actor coordinator) {
  gateway_ = system_.spawn(gateway_fn, GatewayArgs{options_, outbox_, counters,
                                                   std::move(supervisor), std::move(coordinator)});
  log_info("coordinator gateway listening", {{"run", options_.run.value()},
                                             {"endpoint", endpoint},
                                             {"curve", options_.curve ? "on" : "off"}});
  thread_ = std::thread([this] {
    name_this_thread("coord-gateway");
    run();
  });
}

void CoordinatorGateway::Impl::run() {
  // zmq_poll checks the socket's ZMQ_EVENTS itself, so no edge of ZMQ_FD can be missed; the
  // coordinator's traffic (a few messages per episode) does not need the brokers' raw poll.
  std::vector<zmq::pollitem_t> items = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                                        {nullptr, outbox_->wake_fd.fd(), ZMQ_POLLIN, 0}};
  if (zap_) items.push_back({zap_->handle(), 0, ZMQ_POLLIN, 0});
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  while (!stopping_) {
    try {
      for (auto& [peer, bytes] : outbox_->take()) send(peer, std::move(bytes));
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(500));
      if (items[0].revents & ZMQ_POLLIN) {
        // At most 256 at a time, so that queued replies go out in between.
        for (int i = 0; i < 256 && recv_multipart(router_, parts, 3, dropped); ++i) {
          on_message(parts, dropped);
        }
      }
      if (zap_ && (items[2].revents & ZMQ_POLLIN)) on_zap();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) log_error(zmq_failure("coordinator gateway loop", e));
    }
  }
}

void CoordinatorGateway::Impl::send(const std::string& peer, std::string bytes) {
  // A ROUTER never blocks: a frame to a peer that is gone (or too far behind) is dropped, and
  // its request fails by the peer's own deadline.
  (void)router_.send(zmq::buffer(peer), zmq::send_flags::sndmore);
  (void)router_.send(take_frame(std::move(bytes)), zmq::send_flags::none);
  counters->frames_out++;
}

void CoordinatorGateway::Impl::refuse(std::vector<zmq::message_t>& parts, const std::string& id,
                                      const Error& error) {
  counters->refused++;
  if (auto suppressed = limiter_.allow(std::chrono::steady_clock::now())) {
    log_warn("coordinator frame rejected",
             {{"peer", describe_peer(parts[0], parts.size() > 1 ? parts[1] : parts[0])},
              {"code", error.code},
              {"error", error.message},
              {"suppressed", std::to_string(*suppressed)}});
  }
  if (!id.empty()) {
    send(std::string(view(parts[0])),
         encode_coordinator_frame(CoordinatorFrame{id, options_.run, CoordinatorFailure{error}}));
  }
}

void CoordinatorGateway::Impl::on_message(std::vector<zmq::message_t>& parts, std::size_t dropped) {
  if (parts.size() != 2 || dropped > 0) {
    return refuse(parts, {},
                  make_error(ErrorCategory::kInvalidInput, "wire.malformed",
                             "a coordinator message is one frame (got " +
                                 std::to_string(parts.size() + dropped - 1) + ")"));
  }
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_frame_bytes);
  Expected<CoordinatorFrame> frame = decode_coordinator_frame(view(parts[1]), limits);
  if (!frame) return refuse(parts, {}, frame.error());
  if (frame->run_id != options_.run) {
    return refuse(parts, frame->request_id,
                  make_error(ErrorCategory::kInvalidInput, "coordinator.wrong_run",
                             "this coordinator serves run '" + options_.run.value() + "', not '" +
                                 frame->run_id.value() + "'"));
  }
  if (!inbound(frame->body)) {
    return refuse(parts, frame->request_id,
                  make_error(ErrorCategory::kInvalidInput, "coordinator.unexpected_message",
                             "body #" + std::to_string(frame->body.index()) +
                                 " is sent by the coordinator, not to it"));
  }
  counters->frames_in++;
  caf::anon_send(gateway_, gw_in_atom::value, std::string(view(parts[0])), std::move(*frame));
}

void CoordinatorGateway::Impl::on_zap() {
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  if (!recv_multipart(*zap_, parts, 8, dropped)) return;
  // ZAP 1.0 (RFC 27): version, request id, domain, address, identity, mechanism, credentials.
  const bool allowed = parts.size() >= 7 && view(parts[0]) == "1.0" && view(parts[5]) == "CURVE" &&
                       parts[6].size() == 32 && allowed_keys_.count(std::string(view(parts[6])));
  std::string user;
  if (allowed) {
    char z85[41];
    zmq_z85_encode(z85, static_cast<const std::uint8_t*>(parts[6].data()), 32);
    user = z85;
  } else if (auto suppressed = limiter_.allow(std::chrono::steady_clock::now())) {
    log_warn("coordinator connection refused", {{"peer", parts.size() > 3 ? view(parts[3]) : ""},
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

void CoordinatorGateway::Impl::stop() {
  std::lock_guard lock(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  outbox_->wake();
  if (thread_.joinable()) thread_.join();
  if (gateway_) caf::anon_send(gateway_, gw_stop_atom::value);
  gateway_ = nullptr;
}

namespace {

Expected<std::unique_ptr<CoordinatorGateway::Impl>> bind_gateway(
    caf::actor_system& system, CoordinatorGatewayOptions options) {
  auto impl = std::make_unique<CoordinatorGateway::Impl>(system, std::move(options));
  RETURN_IF_ERROR(impl->bind());
  return impl;
}

}  // namespace

Expected<std::unique_ptr<CoordinatorGateway>> CoordinatorGateway::start(
    caf::actor_system& system, CoordinatorGatewayOptions options,
    coordinator_supervisor supervisor) {
  ASSIGN_OR_RETURN(auto impl, bind_gateway(system, std::move(options)));
  impl->start_thread(std::move(supervisor), coordinator_actor{});
  return std::unique_ptr<CoordinatorGateway>(new CoordinatorGateway(std::move(impl)));
}

Expected<std::unique_ptr<CoordinatorGateway>> CoordinatorGateway::start(
    caf::actor_system& system, CoordinatorGatewayOptions options, coordinator_actor coordinator) {
  ASSIGN_OR_RETURN(auto impl, bind_gateway(system, std::move(options)));
  impl->start_thread(coordinator_supervisor{}, std::move(coordinator));
  return std::unique_ptr<CoordinatorGateway>(new CoordinatorGateway(std::move(impl)));
}

CoordinatorGateway::CoordinatorGateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CoordinatorGateway::~CoordinatorGateway() { impl_->stop(); }

const std::string& CoordinatorGateway::endpoint() const { return impl_->endpoint; }

CoordinatorGatewayCounters CoordinatorGateway::counters() const {
  const AtomicCounters& c = *impl_->counters;
  return {c.frames_in.load(), c.refused.load(), c.frames_out.load(), c.learners_attached.load(),
          c.learners_detached.load()};
}

void CoordinatorGateway::stop() { impl_->stop(); }

}  // namespace cuda_agent
