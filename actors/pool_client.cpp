#include "actors/pool_client.h"

#include <atomic>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/log.h"

namespace cuda_agent {
namespace {

Error deadline_error(const std::string& id) {
  return make_error(ErrorCategory::kTimeout, "pool.deadline_expired",
                    "no reply for request " + id + " before its deadline");
}

using StatsCallback = std::function<void(Expected<PoolStats>)>;

// A call handed from a caller's thread to the io thread.
struct Outgoing {
  std::string id;  // empty for a stats request
  std::int64_t deadline_unix_ms = 0;
  PoolCallback done;
  StatsCallback stats_done;
  zmq::message_t envelope;
  zmq::message_t payload;
};

}  // namespace

class PoolClient::Impl {
 public:
  explicit Impl(const PoolClientOptions& options) : options_(options) {}
  Status start();
  void close();
  void submit(Outgoing out);

  const PoolClientOptions options_;
  std::atomic<std::uint64_t> late_replies_{0};

 private:
  struct Pending {
    std::int64_t deadline_unix_ms = 0;
    std::vector<PoolCallback> done;
    std::multimap<std::int64_t, std::string>::iterator by_deadline;
  };
  struct StatsWaiter {
    std::int64_t deadline_unix_ms = 0;
    StatsCallback done;
  };

  void io_loop();
  void take_outgoing();
  void on_reply(std::vector<zmq::message_t>& parts, std::size_t dropped);
  void complete(const std::string& id, PoolOutcome outcome);
  void expire(std::int64_t now);

  zmq::context_t context_{1};
  zmq::socket_t broker_{context_, zmq::socket_type::dealer};  // io thread
  zmq::socket_t wake_{context_, zmq::socket_type::pair};      // io thread's end
  zmq::socket_t wake_api_{context_, zmq::socket_type::pair};  // callers' end, under mutex_
  std::mutex mutex_;
  std::deque<Outgoing> outgoing_;  // under mutex_
  bool closed_ = false;            // under mutex_
  std::thread thread_;
  // io thread only:
  std::unordered_map<std::string, Pending> pending_;
  std::multimap<std::int64_t, std::string> deadlines_;
  std::deque<StatsWaiter> stats_waiters_;
};

Status PoolClient::Impl::start() {
  if (options_.broker_endpoint.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options", "broker_endpoint is empty");
  }
  try {
    const std::string wake =
        "inproc://pool-client-wake-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
    wake_.bind(wake);
    wake_api_.connect(wake);
    broker_.set(zmq::sockopt::linger, 0);
    broker_.set(zmq::sockopt::maxmsgsize,
                2 * options_.max_payload_bytes + options_.max_envelope_bytes);
    if (options_.curve) RETURN_IF_ERROR(apply_curve_client(broker_, *options_.curve));
    broker_.connect(options_.broker_endpoint);
  } catch (const zmq::error_t& e) {
    return make_error(ErrorCategory::kUnavailable, "pool.connect",
                      "cannot connect to " + options_.broker_endpoint + ": " + e.what());
  }
  thread_ = std::thread([this] { io_loop(); });
  return Status::ok();
}

void PoolClient::Impl::submit(Outgoing out) {
  std::unique_lock lock(mutex_);
  if (closed_) {
    lock.unlock();
    Error e = make_error(ErrorCategory::kUnavailable, "pool.client_closed", "client is closed");
    if (out.done) out.done(PoolOutcome{RequestId{out.id}, e, 0, WorkerId{}});
    if (out.stats_done) out.stats_done(e);
    return;
  }
  outgoing_.push_back(std::move(out));
  // One wake per call; if the pipe is full the io thread has wakes enough already.
  (void)wake_api_.send(zmq::message_t(), zmq::send_flags::dontwait);
}

void PoolClient::Impl::io_loop() {
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  for (;;) {
    try {
      std::int64_t wait_ms = 1000;
      const std::int64_t now = now_unix_ms();
      if (!deadlines_.empty()) wait_ms = std::min(wait_ms, deadlines_.begin()->first - now);
      if (!stats_waiters_.empty()) {
        wait_ms = std::min(wait_ms, stats_waiters_.front().deadline_unix_ms - now);
      }
      zmq::pollitem_t items[] = {{broker_.handle(), 0, ZMQ_POLLIN, 0},
                                 {wake_.handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::chrono::milliseconds(std::max<std::int64_t>(wait_ms, 0)));
      if (items[1].revents & ZMQ_POLLIN) {
        zmq::message_t m;
        while (wake_.recv(m, zmq::recv_flags::dontwait)) {
        }
        std::lock_guard lock(mutex_);
        if (closed_) break;
      }
      take_outgoing();
      for (int i = 0; i < 256 && recv_multipart(broker_, parts, 2, dropped); ++i) {
        on_reply(parts, dropped);
      }
      expire(now_unix_ms());
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      if (e.num() != EINTR) log_error(zmq_failure("pool client loop", e));
    }
  }
  take_outgoing();  // callers that raced with close() get their answer below
  Error closed = make_error(ErrorCategory::kUnavailable, "pool.client_closed", "client is closed");
  for (auto& [id, p] : pending_) {
    for (auto& done : p.done) done(PoolOutcome{RequestId{id}, closed, 0, WorkerId{}});
  }
  for (auto& w : stats_waiters_) w.done(closed);
}

void PoolClient::Impl::take_outgoing() {
  std::deque<Outgoing> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(outgoing_);
  }
  for (Outgoing& out : batch) {
    if (out.stats_done) {
      stats_waiters_.push_back(StatsWaiter{out.deadline_unix_ms, std::move(out.stats_done)});
      (void)broker_.send(out.envelope, zmq::send_flags::dontwait);
      continue;
    }
    if (auto it = pending_.find(out.id); it != pending_.end()) {
      it->second.done.push_back(std::move(out.done));  // same id in flight: share its outcome
      continue;
    }
    Pending& p = pending_[out.id];
    p.deadline_unix_ms = out.deadline_unix_ms;
    p.done.push_back(std::move(out.done));
    p.by_deadline = deadlines_.emplace(out.deadline_unix_ms, out.id);
    (void)broker_.send(out.envelope, zmq::send_flags::sndmore);
    (void)broker_.send(out.payload, zmq::send_flags::none);
  }
}

void PoolClient::Impl::on_reply(std::vector<zmq::message_t>& parts, std::size_t dropped) {
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_envelope_bytes);
  auto m = decode_pool_message(view(parts[0]), limits);
  if (m && std::holds_alternative<PoolStats>(*m) && !stats_waiters_.empty()) {
    auto done = std::move(stats_waiters_.front().done);
    stats_waiters_.pop_front();
    done(std::get<PoolStats>(std::move(*m)));
    return;
  }
  auto* reply = m ? std::get_if<PoolReply>(&*m) : nullptr;
  if (!reply) {
    log_warn("pool reply rejected", {{"broker", options_.broker_endpoint},
                                     {"error", m ? "unexpected message" : m.error().to_string()}});
    return;
  }
  const std::string& id = reply->request_id.value();
  auto it = pending_.find(id);
  if (it == pending_.end() || now_unix_ms() >= it->second.deadline_unix_ms) {
    ++late_replies_;  // its caller's deadline passed: discarded (expire() answers the caller)
    return;
  }
  PoolOutcome outcome{reply->request_id, Error{}, reply->attempts, reply->worker_id};
  if (reply->error) {
    outcome.result = *reply->error;
  } else if (parts.size() != 2 || dropped != 0 || parts[1].size() != reply->payload_bytes) {
    outcome.result = make_error(ErrorCategory::kInternal, "wire.malformed",
                                "reply without a payload frame of payloadBytes bytes");
  } else {
    outcome.result = Expected<std::string>(std::in_place, std::string(view(parts[1])));
  }
  complete(id, std::move(outcome));
}

void PoolClient::Impl::complete(const std::string& id, PoolOutcome outcome) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  deadlines_.erase(p.by_deadline);
  for (std::size_t i = 0; i + 1 < p.done.size(); ++i) p.done[i](outcome);
  p.done.back()(std::move(outcome));
}

void PoolClient::Impl::expire(std::int64_t now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    std::string id = deadlines_.begin()->second;
    complete(id, PoolOutcome{RequestId{id}, deadline_error(id), 0, WorkerId{}});
  }
  while (!stats_waiters_.empty() && stats_waiters_.front().deadline_unix_ms <= now) {
    auto done = std::move(stats_waiters_.front().done);
    stats_waiters_.pop_front();
    done(make_error(ErrorCategory::kTimeout, "pool.stats_timeout", "no stats before the timeout"));
  }
}

void PoolClient::Impl::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    (void)wake_api_.send(zmq::message_t(), zmq::send_flags::dontwait);
  }
  if (thread_.joinable()) thread_.join();
}

Expected<std::unique_ptr<PoolClient>> PoolClient::connect(const PoolClientOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<PoolClient>(new PoolClient(std::move(impl)));
}

PoolClient::PoolClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PoolClient::~PoolClient() { impl_->close(); }

void PoolClient::call_async(PoolRequest request, PoolCallback done) {
  const std::string& id = request.header.request_id.value();
  Error refused;
  if (id.empty() || request.header.deadline_unix_ms <= 0) {
    refused = make_error(ErrorCategory::kInvalidInput, "pool.bad_request",
                         "a request needs a request id and a deadline (deadline_unix_ms > 0)");
  } else if (request.payload.size() > static_cast<std::size_t>(impl_->options_.max_payload_bytes)) {
    refused = make_error(
        ErrorCategory::kInvalidInput, "wire.too_large",
        "payload of " + std::to_string(request.payload.size()) + " bytes exceeds the limit");
  }
  if (!refused.code.empty()) {
    done(PoolOutcome{request.header.request_id, refused, 0, WorkerId{}});
    return;
  }
  Outgoing out;
  out.id = id;
  out.deadline_unix_ms = request.header.deadline_unix_ms;
  out.done = std::move(done);
  PoolSubmit submit{std::move(request.header), std::move(request.tags), request.payload.size()};
  out.envelope = take_frame(encode_pool(submit));
  out.payload = take_frame(std::move(request.payload));
  impl_->submit(std::move(out));
}

PoolOutcome PoolClient::call_with_details(PoolRequest request) {
  auto promise = std::make_shared<std::promise<PoolOutcome>>();
  auto future = promise->get_future();
  const RequestId id = request.header.request_id;
  const std::int64_t deadline = request.header.deadline_unix_ms;
  call_async(std::move(request), [promise](PoolOutcome o) { promise->set_value(std::move(o)); });
  // The io thread answers by the deadline; the extra second only covers a stalled io thread.
  const auto wait =
      std::chrono::milliseconds(std::max<std::int64_t>(deadline - now_unix_ms(), 0) + 1000);
  if (future.wait_for(wait) != std::future_status::ready) {
    return PoolOutcome{id, deadline_error(id.value()), 0, WorkerId{}};
  }
  return future.get();
}

Expected<std::string> PoolClient::call(PoolRequest request) {
  return call_with_details(std::move(request)).result;
}

Expected<PoolStats> PoolClient::stats(std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<Expected<PoolStats>>>();
  auto future = promise->get_future();
  Outgoing out;
  out.deadline_unix_ms = now_unix_ms() + timeout.count();
  out.stats_done = [promise](Expected<PoolStats> s) { promise->set_value(std::move(s)); };
  out.envelope = take_frame(encode_pool(PoolStatsRequest{}));
  impl_->submit(std::move(out));
  if (future.wait_for(timeout + std::chrono::seconds(1)) != std::future_status::ready) {
    return make_error(ErrorCategory::kTimeout, "pool.stats_timeout", "no stats before the timeout");
  }
  return future.get();
}

std::uint64_t PoolClient::late_replies() const { return impl_->late_replies_; }

}  // namespace cuda_agent
