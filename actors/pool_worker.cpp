#include "actors/pool_worker.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "actors/endpoint.h"
#include "core/log.h"
#include "messages/pool_codec.h"

namespace cuda_agent {
namespace {

WorkerId default_worker_id() {
  static std::atomic<int> counter{0};
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return WorkerId{std::string(host) + "-" + std::to_string(getpid()) + "-" +
                  std::to_string(counter++)};
}

}  // namespace

// One io thread owns the DEALER and its connection monitor: it waits in zmq::poll on the socket,
// the monitor and an eventfd, takes in work, sends heartbeats, results and announcements, and
// reconnects. `slots` handler threads take the work from `jobs_` and put each result in
// `results_`, waking the io thread through the eventfd. zmq::poll on a ZeroMQ socket is level-
// triggered, so a send cannot hide a message from the next poll. The monitor: a broker connected
// again after a lost connection gets a Ready at once, and a refused handshake is logged once per
// streak.
class PoolWorker::Impl {
 public:
  Impl(const PoolWorkerOptions& options, PoolHandler handler)
      : options_(options), handler_(std::move(handler)), limiter_(10) {
    if (options_.worker_id.value().empty()) options_.worker_id = default_worker_id();
  }
  Status start();
  void stop();

  PoolWorkerOptions options_;
  std::atomic<std::uint64_t> announcements_{0};
  std::atomic<std::uint64_t> handled_{0};
  std::atomic<std::uint64_t> duplicates_{0};

  Error refusal() {
    std::lock_guard lock(mutex_);
    return refusal_;
  }

 private:
  struct Result {
    RequestId id;
    Expected<PoolBytes> result = Error{};
  };

  void io_loop();
  void handler_loop();
  Expected<PoolBytes> run(WorkItem& item);
  Status connect();
  void send_envelope(std::string envelope);
  /// Sends Ready with the ids this worker holds.
  void announce();
  /// Takes in every message waiting in the socket.
  void take_in();
  /// Reads the connection monitor until nothing waits.
  void watch_connection();
  void on_broker_message(std::vector<zmq::message_t>& parts, std::size_t dropped);
  /// Sends the results the handlers finished; returns how many.
  std::size_t send_results();
  void answer(const RequestId& id, Expected<PoolBytes> result);

  const PoolHandler handler_;
  LogLimiter limiter_;
  zmq::context_t context_{1};
  WakeFd wake_;  // the io thread polls it beside the socket: results and the stop

  std::mutex api_mutex_;
  bool stopped_ = false;  // under api_mutex_

  std::mutex mutex_;              // everything up to the io thread's own below
  std::condition_variable work_;  // handler threads waiting for a job
  std::deque<WorkItem> jobs_;
  std::deque<Result> results_;
  std::int64_t running_ = 0;
  bool stopping_ = false;
  Error refusal_;  // the last handshake refused (empty code: none since)

  // The io thread's own.
  std::optional<zmq::socket_t> broker_;
  StringSet held_;  // ids queued, running or with a result not yet sent
  std::vector<zmq::message_t> parts_;
  SteadyTime last_from_broker_;
  SteadyTime next_heartbeat_;
  std::uint64_t heartbeat_seq_ = 0;
  ConnectionMonitor monitor_;     // after broker_: closed before it
  bool lost_connection_ = false;  // since the last connection was made

  std::thread io_thread_;
  std::vector<std::thread> handlers_;
};

Status PoolWorker::Impl::start() {
  if (options_.broker_endpoint.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options", "broker_endpoint is empty");
  }
  if (options_.slots < 1 || options_.prefetch < 0 || options_.heartbeat_interval_ms < 1 ||
      options_.broker_timeout_ms < 1 || options_.resolve_timeout_ms < 0) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options",
                      "slots, heartbeat_interval_ms and broker_timeout_ms must be >= 1, "
                      "prefetch and resolve_timeout_ms >= 0");
  }
  RETURN_IF_ERROR(resolve_endpoint_host(options_.broker_endpoint,
                                        std::chrono::milliseconds(options_.resolve_timeout_ms)));
  if (!wake_.valid()) {
    return make_error(ErrorCategory::kIo, "pool.eventfd", "cannot create the worker's eventfd");
  }
  RETURN_IF_ERROR(connect());
  next_heartbeat_ =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.heartbeat_interval_ms);
  for (std::int64_t i = 0; i < options_.slots; ++i)
    handlers_.emplace_back([this] {
      name_this_thread("pool-handler");
      handler_loop();
    });
  io_thread_ = std::thread([this] {
    name_this_thread("pool-worker");
    io_loop();
  });
  return Status::ok();
}

Status PoolWorker::Impl::connect() {
  try {
    if (broker_) monitor_.stop(*broker_);
    broker_.reset();
    broker_.emplace(context_, zmq::socket_type::dealer);
    broker_->set(zmq::sockopt::linger, 0);
    broker_->set(zmq::sockopt::maxmsgsize,
                 2 * options_.max_payload_bytes + options_.max_envelope_bytes);
    if (options_.curve) RETURN_IF_ERROR(apply_curve_client(*broker_, *options_.curve));
    RETURN_IF_ERROR(
        monitor_.start(context_, *broker_, options_.broker_endpoint, options_.curve.has_value()));
    lost_connection_ = false;
    broker_->connect(options_.broker_endpoint);
  } catch (const zmq::error_t& e) {
    return make_error(ErrorCategory::kUnavailable, "pool.connect",
                      "cannot connect to " + options_.broker_endpoint + ": " + e.what());
  }
  last_from_broker_ = std::chrono::steady_clock::now();
  announce();
  return Status::ok();
}

void PoolWorker::Impl::announce() {
  PoolReady ready{options_.worker_id,
                  options_.tags,
                  static_cast<std::uint32_t>(options_.slots + options_.prefetch),
                  {}};
  ready.running.assign(held_.begin(), held_.end());
  send_envelope(encode_pool(ready));
  ++announcements_;
}

void PoolWorker::Impl::send_envelope(std::string envelope) {
  (void)broker_->send(take_frame(std::move(envelope)), zmq::send_flags::dontwait);
}

void PoolWorker::Impl::handler_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left to take
    WorkItem item = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    Expected<PoolBytes> result = run(item);
    lock.lock();
    --running_;
    results_.push_back(Result{item.header.request_id, std::move(result)});
    wake_.notify();
  }
}

std::size_t PoolWorker::Impl::send_results() {
  std::deque<Result> done;
  {
    std::lock_guard lock(mutex_);
    done.swap(results_);
  }
  for (Result& r : done) {
    try {
      answer(r.id, std::move(r.result));
    } catch (const zmq::error_t& e) {
      log_error(zmq_failure("pool worker result", e));
    }
    held_.erase(r.id.value());
  }
  return done.size();
}

void PoolWorker::Impl::io_loop() {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  const auto broker_timeout = std::chrono::milliseconds(options_.broker_timeout_ms);
  for (;;) {
    try {
      send_results();
      take_in();
      bool stopping = false;
      {
        std::lock_guard lock(mutex_);
        stopping = stopping_;
        // Stopping ends once every handler has returned and its result is out.
        if (stopping && running_ == 0 && results_.empty()) break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_heartbeat_) {
        send_envelope(encode_pool(PoolHeartbeat{options_.worker_id, ++heartbeat_seq_}));
        next_heartbeat_ = now + interval;
      }
      watch_connection();
      if (!stopping && now - last_from_broker_ > broker_timeout) {
        // After a refused handshake ZeroMQ does not try again: a new socket does, quietly (the
        // refusal was logged once; a broker that accepts the key again ends the streak).
        bool refused = false;
        {
          std::lock_guard lock(mutex_);
          refused = !refusal_.code.empty();
        }
        (refused ? log_debug : log_warn)(
            "pool broker silent; reconnecting",
            {{"worker", options_.worker_id.value()}, {"broker", options_.broker_endpoint}});
        Status s = connect();
        if (!s) log_error(s.error(), {{"worker", options_.worker_id.value()}});
      }
      zmq::pollitem_t items[] = {{broker_->handle(), 0, ZMQ_POLLIN, 0},
                                 {nullptr, wake_.fd(), ZMQ_POLLIN, 0},
                                 {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_heartbeat_ - now);
      zmq::poll(items, monitor_.handle() ? 3 : 2, std::max(wait, std::chrono::milliseconds(0)));
      if (items[1].revents & ZMQ_POLLIN) wake_.drain();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      if (e.num() != EINTR) log_error(zmq_failure("pool worker loop", e));
    }
  }
}

void PoolWorker::Impl::take_in() {
  std::size_t dropped = 0;
  while (recv_multipart(*broker_, parts_, 3, dropped)) {
    last_from_broker_ = std::chrono::steady_clock::now();
    on_broker_message(parts_, dropped);
  }
}

void PoolWorker::Impl::watch_connection() {
  for (;;) {
    switch (monitor_.next()) {
      case ConnectionMonitor::Change::kNone: return;
      case ConnectionMonitor::Change::kUp: {
        bool was_refused = false;
        {
          std::lock_guard lock(mutex_);
          was_refused = !refusal_.code.empty();
          refusal_ = Error{};
        }
        if (was_refused) {
          log_info("pool broker accepts this worker's key again",
                   {{"worker", options_.worker_id.value()}, {"broker", options_.broker_endpoint}});
        }
        // A broker on the other end of a new connection may be a restarted one that does not
        // know this worker: announce now rather than after a heartbeat and its reregister.
        if (lost_connection_) announce();
        lost_connection_ = false;
        break;
      }
      case ConnectionMonitor::Change::kDown: lost_connection_ = true; break;
      case ConnectionMonitor::Change::kRefused: {
        bool first = false;
        const Error refusal = monitor_.refusal();
        {
          std::lock_guard lock(mutex_);
          first = refusal_.code.empty();
          refusal_ = refusal;
        }
        if (first) {
          log_error(refusal, {{"worker", options_.worker_id.value()}});
          if (options_.on_refusal) options_.on_refusal(refusal);
        }
        break;
      }
    }
  }
}

void PoolWorker::Impl::on_broker_message(std::vector<zmq::message_t>& parts, std::size_t dropped) {
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_envelope_bytes);
  auto frame = decode_pool_frame(view(parts[0]), limits);
  PoolMessage* m = frame ? &frame->message : nullptr;
  Error problem;
  if (!m) {
    problem = frame.error();
  } else if (std::holds_alternative<PoolReregister>(*m)) {
    announce();
    return;
  } else if (std::holds_alternative<PoolHeartbeat>(*m)) {
    return;
  } else if (auto* work = std::get_if<PoolWork>(m)) {
    // A large payload is read in place, in its own frame; an inline one is copied (small).
    auto payload = take_payload_bytes(parts, 0, dropped, *frame);
    if (!payload || payload->size() > static_cast<std::size_t>(options_.max_payload_bytes)) {
      problem = make_error(ErrorCategory::kInvalidInput, "wire.malformed",
                           "work without a payload of payloadBytes bytes");
    } else {
      std::unique_lock lock(mutex_);
      // Stopping: not taken; the broker re-queues it when the Disconnect arrives.
      if (stopping_) return;
      // A request this worker holds already is not run twice: its result answers the broker that
      // sent it again. (A restarted broker can: the request's first copy reached this worker over
      // the old connection after it announced itself, without it, to the new broker, which then
      // gave the client's re-sent request to this free-looking worker.)
      if (!held_.insert(work->header.request_id.value()).second) {
        ++duplicates_;
        return;
      }
      jobs_.push_back(WorkItem{std::move(work->header), std::move(*payload), work->attempt});
      lock.unlock();
      work_.notify_one();
      return;
    }
  } else {
    problem = make_error(ErrorCategory::kInvalidInput, "pool.unexpected_message",
                         std::string(pool_message_name(*m)) + " is not for a worker");
  }
  if (auto suppressed = limiter_.allow(std::chrono::steady_clock::now())) {
    log_warn("pool frame from broker rejected", {{"worker", options_.worker_id.value()},
                                                 {"code", problem.code},
                                                 {"error", problem.message},
                                                 {"suppressed", std::to_string(*suppressed)}});
  }
}

Expected<PoolBytes> PoolWorker::Impl::run(WorkItem& item) {
  if (now_unix_ms() >= item.header.deadline_unix_ms) {
    return make_error(ErrorCategory::kTimeout, "pool.deadline_expired",
                      "request " + item.header.request_id.value() +
                          " passed its deadline before its handler started");
  }
  Expected<PoolBytes> result =
      make_error(ErrorCategory::kInternal, "pool.handler_threw", "not run");
  try {
    result = handler_(item);
  } catch (const std::exception& e) {
    result = make_error(ErrorCategory::kInternal, "pool.handler_threw", e.what());
  } catch (...) {
    result = make_error(ErrorCategory::kInternal, "pool.handler_threw", "unknown exception");
  }
  ++handled_;
  return result;
}

void PoolWorker::Impl::answer(const RequestId& id, Expected<PoolBytes> result) {
  // Never blocks the io thread: past the high-water mark (broker unreachable for a long time) the
  // result is dropped; the broker re-queues the request when it drops the worker.
  PoolResult r;
  r.request_id = id;
  if (!result) {
    r.error = result.error();
    (void)broker_->send(take_frame(encode_pool(r)), zmq::send_flags::dontwait);
    return;
  }
  r.payload_bytes = result->size();
  PoolFrames frames = pool_frames(encode_pool(r), std::move(*result));
  (void)send_frames(*broker_, frames, zmq::send_flags::dontwait);
}

void PoolWorker::Impl::stop() {
  std::lock_guard api_lock(api_mutex_);
  if (stopped_) return;
  stopped_ = true;
  std::vector<std::string> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    // Queued work is not run: the broker re-queues it when the Disconnect arrives.
    for (const auto& job : jobs_) dropped.push_back(job.header.request_id.value());
    jobs_.clear();
  }
  work_.notify_all();
  for (auto& t : handlers_) t.join();
  if (wake_.valid()) wake_.notify();
  if (io_thread_.joinable()) io_thread_.join();  // it sends the last results, then ends
  try {
    if (broker_ && !handlers_.empty()) {
      for (const std::string& id : dropped) held_.erase(id);
      send_envelope(encode_pool(PoolDisconnect{options_.worker_id}));
      broker_->set(zmq::sockopt::linger, 1000);  // let the Disconnect and last results out
      broker_.reset();
    }
  } catch (const zmq::error_t&) {
  }
  log_info("pool worker stopped", {{"worker", options_.worker_id.value()}});
}

Expected<std::unique_ptr<PoolWorker>> PoolWorker::start(const PoolWorkerOptions& options,
                                                        PoolHandler handler) {
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  Status s = impl->start();
  if (!s) {
    impl->stop();
    return s.error();
  }
  return std::unique_ptr<PoolWorker>(new PoolWorker(std::move(impl)));
}

PoolWorker::PoolWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PoolWorker::~PoolWorker() { stop(); }
void PoolWorker::stop() { impl_->stop(); }
const WorkerId& PoolWorker::worker_id() const { return impl_->options_.worker_id; }
std::uint64_t PoolWorker::announcements() const { return impl_->announcements_; }
std::uint64_t PoolWorker::handled() const { return impl_->handled_; }
std::uint64_t PoolWorker::duplicates() const { return impl_->duplicates_; }
Error PoolWorker::refusal() const { return impl_->refusal(); }

}  // namespace cuda_agent
