#include "coordinator/coordinator_client.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "actors/endpoint.h"
#include "core/log.h"
#include "messages/coordinator_codec.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

// Where a caller finds its answer (under Impl::mutex_).
struct Waiter {
  bool done = false;
  bool sent = false;  // handed to a connected coordinator
  Expected<CoordinatorBody> result = Error{};
};

struct Outgoing {
  std::string id;  // empty: nobody waits for an answer (heartbeats, the learner's answers)
  std::string bytes;
  Clock::time_point give_up;
};

std::string random_hex() {
  std::random_device rd;
  const std::uint64_t x = (std::uint64_t{rd()} << 32) ^ rd();
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(x));
  return out;
}

Status validate(const CoordinatorClientOptions& o) {
  auto bad = [](const std::string& what) {
    return Status(make_error(ErrorCategory::kInvalidInput, "coordinator.client_options", what));
  };
  if (std::string problem = endpoint_problem(o.endpoint, EndpointUse::kConnect); !problem.empty())
    return bad("endpoint '" + o.endpoint + "': " + problem);
  if (o.run.value().empty()) return bad("the run id is empty");
  if (o.member.value().empty()) return bad("the member id is empty");
  if (o.request_timeout.count() <= 0) return bad("request_timeout must be > 0 ms");
  if (o.heartbeat_interval.count() <= 0) return bad("heartbeat_interval must be > 0 ms");
  return Status::ok();
}

Error closed_error() {
  return make_error(ErrorCategory::kUnavailable, "coordinator.client_closed",
                    "the coordinator client is closed");
}

Error cancelled_error() {
  return make_error(ErrorCategory::kUnavailable, "coordinator.work_cancelled",
                    "work requests were cancelled: this worker is stopping");
}

}  // namespace

class CoordinatorClient::Impl {
 public:
  Impl(CoordinatorClientOptions o, bool learner)
      : options(std::move(o)),
        learner_(learner),
        prefix_(options.member.value() + "/" + random_hex()) {}
  ~Impl() { close(); }

  Status start();
  void close();
  /// Sends `body` and waits for its answer until request_timeout.
  /// `cancellable`: cancel_work_requests() ends it (work requests).
  Expected<CoordinatorBody> call(CoordinatorBody body, const char* what, bool cancellable = false);
  void cancel_work_requests();
  void set_degraded(std::string why) {
    Lock lock(mutex_);
    degraded_ = std::move(why);
  }
  /// Sends `frame` without waiting for an answer (the learner's answers).
  void post(const CoordinatorFrame& frame);
  /// The next TrainStep / CheckpointRequest from the coordinator, waiting up to `wait`.
  std::optional<CoordinatorFrame> next_request(std::chrono::milliseconds wait);

  const CoordinatorClientOptions options;

 private:
  using Lock = std::unique_lock<std::mutex>;
  void io_loop();
  void wake() { wake_.notify(); }
  /// Sends what can go out now (under the lock); keeps the rest while no coordinator is connected.
  void flush(Clock::time_point now);
  void on_frame(const zmq::message_t& bytes);

  const bool learner_;
  const std::string prefix_;  // routing id and request-id prefix: unique per client
  WakeFd wake_;               // callers -> the io thread
  zmq::context_t context_{1};
  zmq::socket_t dealer_{context_, zmq::socket_type::dealer};  // the io thread's only
  std::mutex mutex_;                                          // everything below
  std::condition_variable answered_;
  std::condition_variable requested_;
  std::condition_variable idle_;  // close() waiting for callers to leave call()
  std::size_t blocked_ = 0;       // callers inside call()
  bool closed_ = false;
  bool work_cancelled_ = false;  // cancel_work_requests(): work requests end at once
  std::uint64_t seq_ = 0;
  bool attach_sent_ = false;  // serve_learner: the first keep-alive was an AttachLearner
  std::string degraded_;      // what the next heartbeats report (set_degraded)
  std::deque<Outgoing> outgoing_;
  std::unordered_map<std::string, std::shared_ptr<Waiter>> pending_;
  std::deque<CoordinatorFrame> requests_;  // from the coordinator, for serve_learner
  LogLimiter limiter_{5};
  std::thread thread_;
};

Status CoordinatorClient::Impl::start() {
  RETURN_IF_ERROR(validate(options));
  if (!wake_.valid()) {
    return make_error(ErrorCategory::kIo, "coordinator.eventfd", "cannot create an eventfd");
  }
  try {
    // Frames go only to a connected coordinator: none waits in the socket for one that is down
    // and then arrives after its caller gave up.
    dealer_.set(zmq::sockopt::immediate, 1);
    // Long enough for the learner's last answer to leave when the client closes.
    dealer_.set(zmq::sockopt::linger, 500);
    dealer_.set(zmq::sockopt::maxmsgsize, std::int64_t{256} << 20);
    dealer_.set(zmq::sockopt::reconnect_ivl_max, 2000);
    // A stable routing id: after a reconnect the gateway's ROUTER hands it to the new connection.
    dealer_.set(zmq::sockopt::routing_id, zmq::buffer(prefix_.substr(0, 255)));
    if (options.curve) RETURN_IF_ERROR(apply_curve_client(dealer_, *options.curve));
    dealer_.connect(options.endpoint);
  } catch (const zmq::error_t& e) {
    return make_error(ErrorCategory::kUnavailable, "coordinator.connect",
                      "cannot connect to " + options.endpoint + ": " + e.what());
  }
  thread_ = std::thread([this] {
    name_this_thread("coord-client");
    io_loop();
  });
  return Status::ok();
}

void CoordinatorClient::Impl::close() {
  {
    Lock lock(mutex_);
    if (closed_) return;
    closed_ = true;
    wake();
  }
  answered_.notify_all();
  requested_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Callers still in call() (woken above) must leave it before the members go.
  Lock lock(mutex_);
  idle_.wait(lock, [&] { return blocked_ == 0; });
}

void CoordinatorClient::Impl::cancel_work_requests() {
  {
    Lock lock(mutex_);
    work_cancelled_ = true;
  }
  answered_.notify_all();
}

Expected<CoordinatorBody> CoordinatorClient::Impl::call(CoordinatorBody body, const char* what,
                                                        bool cancellable) {
  auto waiter = std::make_shared<Waiter>();
  const auto give_up = Clock::now() + options.request_timeout;
  Lock lock(mutex_);
  if (closed_) return closed_error();
  const auto cancelled = [&] { return cancellable && work_cancelled_; };
  if (cancelled()) return cancelled_error();
  const std::string id = prefix_ + "-" + std::to_string(++seq_);
  outgoing_.push_back(
      {id, encode_coordinator_frame(CoordinatorFrame{id, options.run, std::move(body)}), give_up});
  pending_.emplace(id, waiter);
  wake();
  ++blocked_;
  answered_.wait_until(lock, give_up, [&] { return waiter->done || closed_ || cancelled(); });
  if (--blocked_ == 0 && closed_) idle_.notify_all();
  pending_.erase(id);
  if (waiter->done) return std::move(waiter->result);
  if (closed_) return closed_error();
  if (cancelled()) return cancelled_error();
  const std::string waited = std::to_string(options.request_timeout.count()) + " ms";
  if (!waiter->sent) {
    return make_error(ErrorCategory::kUnavailable, "coordinator.unreachable",
                      std::string("no coordinator connected at ") + options.endpoint + " for " +
                          what + " within " + waited + " (is it running?)");
  }
  return make_error(ErrorCategory::kTimeout, "coordinator.timeout",
                    std::string("the coordinator at ") + options.endpoint + " did not answer " +
                        what + " within " + waited);
}

void CoordinatorClient::Impl::post(const CoordinatorFrame& frame) {
  Lock lock(mutex_);
  if (closed_) return;
  outgoing_.push_back(
      {std::string(), encode_coordinator_frame(frame), Clock::now() + options.request_timeout});
  wake();
}

std::optional<CoordinatorFrame> CoordinatorClient::Impl::next_request(
    std::chrono::milliseconds wait) {
  Lock lock(mutex_);
  requested_.wait_for(lock, wait, [&] { return !requests_.empty() || closed_; });
  if (requests_.empty()) return std::nullopt;
  CoordinatorFrame f = std::move(requests_.front());
  requests_.pop_front();
  return f;
}

void CoordinatorClient::Impl::flush(Clock::time_point now) {
  while (!outgoing_.empty()) {
    Outgoing& o = outgoing_.front();
    auto waiter = pending_.end();
    if (!o.id.empty()) waiter = pending_.find(o.id);
    const bool abandoned = !o.id.empty() && waiter == pending_.end();
    if (abandoned || now >= o.give_up) {  // its caller gave up: never send it late
      outgoing_.pop_front();
      continue;
    }
    if (!dealer_.send(zmq::buffer(o.bytes), zmq::send_flags::dontwait)) return;  // not connected
    if (!o.id.empty()) waiter->second->sent = true;
    outgoing_.pop_front();
  }
}

void CoordinatorClient::Impl::on_frame(const zmq::message_t& bytes) {
  DecodeLimits limits;
  limits.max_bytes = std::size_t{256} << 20;
  Expected<CoordinatorFrame> frame = decode_coordinator_frame(view(bytes), limits);
  if (!frame) {
    if (auto suppressed = limiter_.allow(Clock::now())) {
      log_warn("coordinator reply rejected", {{"coordinator", options.endpoint},
                                              {"error", frame.error().to_string()},
                                              {"suppressed", std::to_string(*suppressed)}});
    }
    return;
  }
  if (auto it = pending_.find(frame->request_id); it != pending_.end()) {
    Waiter& w = *it->second;
    if (auto* failure = std::get_if<CoordinatorFailure>(&frame->body)) {
      w.result = failure->error;
    } else {
      w.result = std::move(frame->body);
    }
    w.done = true;
    answered_.notify_all();
    return;
  }
  const bool request = std::holds_alternative<TrainStep>(frame->body) ||
                       std::holds_alternative<CheckpointRequest>(frame->body);
  if (request && learner_) {
    requests_.push_back(std::move(*frame));
    requested_.notify_one();
    return;
  }
  log_debug("coordinator frame dropped (its caller gave up, or it is not for this client)",
            {{"request", frame->request_id}});
}

void CoordinatorClient::Impl::io_loop() {
  const auto beat = options.heartbeat_interval;
  auto next_beat = Clock::now();  // the first at once: the learner attaches without waiting
  zmq::pollitem_t items[] = {{dealer_.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, wake_.fd(), ZMQ_POLLIN, 0}};
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  for (;;) {
    auto wait = std::chrono::milliseconds(0);
    {
      Lock lock(mutex_);
      const auto now = Clock::now();
      if (options.heartbeats && now >= next_beat && !closed_) {
        CoordinatorBody keep_alive = Heartbeat{options.member, options.role, degraded_};
        if (learner_ && !attach_sent_) keep_alive = AttachLearner{options.member};
        attach_sent_ = true;
        outgoing_.push_back(
            {std::string(),
             encode_coordinator_frame(CoordinatorFrame{"", options.run, std::move(keep_alive)}),
             now + beat});
        next_beat = now + beat;
      }
      try {
        flush(now);
      } catch (const zmq::error_t& e) {
        log_error(zmq_failure("coordinator client send", e));
      }
      if (closed_) return;  // what could be sent is sent; linger lets it leave
      wait = std::chrono::ceil<std::chrono::milliseconds>(next_beat - now);
      // Frames waiting for a connection are tried again soon.
      if (!outgoing_.empty()) wait = std::min(wait, std::chrono::milliseconds(20));
    }
    try {
      zmq::poll(items, 2, std::max(wait, std::chrono::milliseconds(0)));
      if (items[1].revents) wake_.drain();
      if (items[0].revents & ZMQ_POLLIN) {
        Lock lock(mutex_);
        while (recv_multipart(dealer_, parts, 1, dropped)) {
          if (dropped == 0 && !parts.empty()) on_frame(parts[0]);
        }
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) log_error(zmq_failure("coordinator client loop", e));
    }
  }
}

// --- the public API ----------------------------------------------------------------------------

namespace {

template <class T>
Expected<T> expect(Expected<CoordinatorBody> body, const char* what) {
  if (!body) return body.error();
  if (auto* t = std::get_if<T>(&*body)) return std::move(*t);
  return make_error(ErrorCategory::kInternal, "coordinator.unexpected_reply",
                    std::string("the coordinator answered ") + what + " with body #" +
                        std::to_string(body->index()));
}

}  // namespace

Expected<std::unique_ptr<CoordinatorClient>> CoordinatorClient::connect(
    CoordinatorClientOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options), false);
  RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<CoordinatorClient>(new CoordinatorClient(std::move(impl)));
}

CoordinatorClient::CoordinatorClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CoordinatorClient::~CoordinatorClient() = default;

void CoordinatorClient::cancel_work_requests() { impl_->cancel_work_requests(); }

void CoordinatorClient::set_degraded(std::string why) { impl_->set_degraded(std::move(why)); }

Expected<WorkReply> CoordinatorClient::request_work() {
  return expect<WorkReply>(impl_->call(WorkRequest{impl_->options.member}, "a work request",
                                       /*cancellable=*/true),
                           "a work request");
}

Expected<SubmitReply> CoordinatorClient::submit(TrajectorySubmission submission) {
  return expect<SubmitReply>(impl_->call(std::move(submission), "a trajectory submission"),
                             "a trajectory submission");
}

Expected<CoordinatorStatus> CoordinatorClient::status() {
  return expect<CoordinatorStatus>(impl_->call(StatusRequest{}, "a status request"),
                                   "a status request");
}

Status serve_learner(const CoordinatorClientOptions& options, LearnerHandler& handler,
                     const std::atomic<bool>& stop) {
  CoordinatorClientOptions o = options;
  o.role = MemberRole::kLearner;
  CoordinatorClient::Impl client(o, true);
  RETURN_IF_ERROR(client.start());
  log_info("learner attaching to the coordinator",
           {{"learner", o.member.value()}, {"coordinator", o.endpoint}});
  while (!stop.load()) {
    std::optional<CoordinatorFrame> request = client.next_request(std::chrono::milliseconds(100));
    if (!request) continue;
    CoordinatorFrame answer{request->request_id, o.run, CoordinatorFailure{}};
    try {
      if (auto* step = std::get_if<TrainStep>(&request->body)) {
        Expected<StepDone> done = handler.train(*step);
        if (done) {
          answer.body = std::move(*done);
        } else {
          answer.body = CoordinatorFailure{done.error()};
        }
      } else if (auto* cp = std::get_if<CheckpointRequest>(&request->body)) {
        Expected<CheckpointDone> done = handler.checkpoint(*cp);
        if (done) {
          answer.body = std::move(*done);
        } else {
          answer.body = CoordinatorFailure{done.error()};
        }
      }
    } catch (const std::exception& e) {
      answer.body = CoordinatorFailure{
          make_error(ErrorCategory::kInternal, "learner.handler_threw", e.what())};
    }
    client.post(answer);
  }
  return Status::ok();
}

}  // namespace cuda_agent
