#include "actors/pool_worker.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

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

 private:
  void io_loop();
  void slot_loop();
  Status connect();
  void send_envelope(std::string envelope);
  /// Sends Ready with the ids this worker holds.
  void announce();
  /// Sends the handler threads' results on; true when stop() asked the loop to end.
  bool forward_results(std::vector<zmq::message_t>& parts);
  void on_broker_message(std::vector<zmq::message_t>& parts, std::size_t dropped);
  void answer(zmq::socket_t& out, const RequestId& id, Expected<std::string> result);

  const PoolHandler handler_;
  LogLimiter limiter_;
  zmq::context_t context_{1};
  std::optional<zmq::socket_t> broker_;  // the DEALER, owned by the io thread
  std::string results_endpoint_;
  zmq::socket_t results_{context_, zmq::socket_type::pull};  // slot results and stop, io thread
  std::mutex api_mutex_;
  bool stopped_ = false;  // under api_mutex_

  std::mutex jobs_mutex_;
  std::condition_variable jobs_cv_;
  std::deque<WorkItem> jobs_;             // under jobs_mutex_
  std::unordered_set<std::string> held_;  // ids queued or running, under jobs_mutex_
  bool closing_ = false;                  // under jobs_mutex_
  int running_ = 0;                       // under jobs_mutex_

  std::thread io_thread_;
  std::vector<std::thread> slot_threads_;
  SteadyTime last_from_broker_;
  std::uint64_t heartbeat_seq_ = 0;
};

Status PoolWorker::Impl::start() {
  if (options_.broker_endpoint.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options", "broker_endpoint is empty");
  }
  if (options_.slots < 1 || options_.prefetch < 0 || options_.heartbeat_interval_ms < 1 ||
      options_.broker_timeout_ms < 1) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options",
                      "slots, heartbeat_interval_ms and broker_timeout_ms must be >= 1, "
                      "prefetch >= 0");
  }
  results_endpoint_ =
      "inproc://pool-worker-results-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  try {
    results_.bind(results_endpoint_);
  } catch (const zmq::error_t& e) {
    return zmq_failure("binding the worker's result socket", e);
  }
  RETURN_IF_ERROR(connect());
  for (std::int64_t i = 0; i < options_.slots; ++i)
    slot_threads_.emplace_back([this] { slot_loop(); });
  io_thread_ = std::thread([this] { io_loop(); });
  return Status::ok();
}

Status PoolWorker::Impl::connect() {
  try {
    broker_.reset();
    broker_.emplace(context_, zmq::socket_type::dealer);
    broker_->set(zmq::sockopt::linger, 0);
    broker_->set(zmq::sockopt::maxmsgsize,
                 2 * options_.max_payload_bytes + options_.max_envelope_bytes);
    if (options_.curve) RETURN_IF_ERROR(apply_curve_client(*broker_, *options_.curve));
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
  {
    std::lock_guard lock(jobs_mutex_);
    ready.running.assign(held_.begin(), held_.end());
  }
  send_envelope(encode_pool(ready));
  ++announcements_;
}

void PoolWorker::Impl::send_envelope(std::string envelope) {
  (void)broker_->send(take_frame(std::move(envelope)), zmq::send_flags::dontwait);
}

void PoolWorker::Impl::io_loop() {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  const auto broker_timeout = std::chrono::milliseconds(options_.broker_timeout_ms);
  auto next_heartbeat = std::chrono::steady_clock::now() + interval;
  bool stopping = false;
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  for (;;) {
    try {
      std::vector<zmq::pollitem_t> items = {{broker_->handle(), 0, ZMQ_POLLIN, 0},
                                            {results_.handle(), 0, ZMQ_POLLIN, 0}};
      auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_heartbeat -
                                                               std::chrono::steady_clock::now());
      zmq::poll(items, std::max(wait, std::chrono::milliseconds(0)));
      stopping |= forward_results(parts);
      for (int i = 0; i < 256 && recv_multipart(*broker_, parts, 3, dropped); ++i) {
        last_from_broker_ = std::chrono::steady_clock::now();
        on_broker_message(parts, dropped);
      }
      const auto now = std::chrono::steady_clock::now();
      if (stopping) {
        std::lock_guard lock(jobs_mutex_);
        if (running_ == 0) break;
      }
      if (now >= next_heartbeat) {
        send_envelope(encode_pool(PoolHeartbeat{options_.worker_id, ++heartbeat_seq_}));
        next_heartbeat = now + interval;
      }
      if (now - last_from_broker_ > broker_timeout) {
        log_warn("pool broker silent; reconnecting",
                 {{"worker", options_.worker_id.value()}, {"broker", options_.broker_endpoint}});
        Status s = connect();
        if (!s) log_error(s.error(), {{"worker", options_.worker_id.value()}});
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      if (e.num() != EINTR) log_error(zmq_failure("pool worker loop", e));
    }
  }
  try {
    forward_results(parts);  // results sent after the last pass (running_ is already 0)
    send_envelope(encode_pool(PoolDisconnect{options_.worker_id}));
    broker_->set(zmq::sockopt::linger, 1000);  // let the Disconnect and last results out
    broker_.reset();
  } catch (const zmq::error_t&) {
  }
  {
    std::lock_guard lock(jobs_mutex_);
    closing_ = true;
  }
  jobs_cv_.notify_all();
}

bool PoolWorker::Impl::forward_results(std::vector<zmq::message_t>& parts) {
  bool stop_requested = false;
  std::size_t dropped = 0;
  while (recv_multipart(results_, parts, 2, dropped)) {
    if (parts[0].size() == 0) {  // stop(): drop work not yet started
      stop_requested = true;
      std::lock_guard lock(jobs_mutex_);
      for (const auto& job : jobs_) held_.erase(job.header.request_id.value());
      jobs_.clear();
      continue;
    }
    (void)broker_->send(parts[0],
                        parts.size() > 1 ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (parts.size() > 1) (void)broker_->send(parts[1], zmq::send_flags::none);
  }
  return stop_requested;
}

void PoolWorker::Impl::on_broker_message(std::vector<zmq::message_t>& parts, std::size_t dropped) {
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_envelope_bytes);
  auto m = decode_pool_message(view(parts[0]), limits);
  Error problem;
  if (!m) {
    problem = m.error();
  } else if (std::holds_alternative<PoolReregister>(*m)) {
    announce();
    return;
  } else if (std::holds_alternative<PoolHeartbeat>(*m)) {
    return;
  } else if (auto* work = std::get_if<PoolWork>(&*m)) {
    if (parts.size() != 2 || dropped != 0 || parts[1].size() != work->payload_bytes ||
        parts[1].size() > static_cast<std::size_t>(options_.max_payload_bytes)) {
      problem = make_error(ErrorCategory::kInvalidInput, "wire.malformed",
                           "work without a payload frame of payloadBytes bytes");
    } else {
      {
        std::lock_guard lock(jobs_mutex_);
        held_.insert(work->header.request_id.value());
        jobs_.push_back(
            WorkItem{std::move(work->header), std::string(view(parts[1])), work->attempt});
      }
      jobs_cv_.notify_one();
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

void PoolWorker::Impl::slot_loop() {
  zmq::socket_t out(context_, zmq::socket_type::push);
  out.set(zmq::sockopt::linger, 1000);
  out.connect(results_endpoint_);
  for (;;) {
    WorkItem item;
    {
      std::unique_lock lock(jobs_mutex_);
      jobs_cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // closing
      item = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    Expected<std::string> result =
        make_error(ErrorCategory::kInternal, "pool.handler_threw", "not run");
    if (now_unix_ms() >= item.header.deadline_unix_ms) {
      result = make_error(ErrorCategory::kTimeout, "pool.deadline_expired",
                          "request " + item.header.request_id.value() +
                              " passed its deadline before its handler started");
    } else {
      try {
        result = handler_(item);
      } catch (const std::exception& e) {
        result = make_error(ErrorCategory::kInternal, "pool.handler_threw", e.what());
      } catch (...) {
        result = make_error(ErrorCategory::kInternal, "pool.handler_threw", "unknown exception");
      }
      ++handled_;
    }
    answer(out, item.header.request_id, std::move(result));
    std::lock_guard lock(jobs_mutex_);
    held_.erase(item.header.request_id.value());
    --running_;
  }
}

void PoolWorker::Impl::answer(zmq::socket_t& out, const RequestId& id,
                              Expected<std::string> result) {
  PoolResult r;
  r.request_id = id;
  if (!result) {
    r.error = result.error();
    (void)out.send(take_frame(encode_pool(r)), zmq::send_flags::none);
    return;
  }
  r.payload_bytes = result->size();
  (void)out.send(take_frame(encode_pool(r)), zmq::send_flags::sndmore);
  (void)out.send(take_frame(std::move(*result)), zmq::send_flags::none);
}

void PoolWorker::Impl::stop() {
  std::lock_guard lock(api_mutex_);
  if (stopped_) return;
  stopped_ = true;
  if (io_thread_.joinable()) {
    zmq::socket_t push(context_, zmq::socket_type::push);
    push.connect(results_endpoint_);
    (void)push.send(zmq::message_t(), zmq::send_flags::none);
    io_thread_.join();
  } else {
    std::lock_guard jobs_lock(jobs_mutex_);
    closing_ = true;
  }
  jobs_cv_.notify_all();
  for (auto& t : slot_threads_) t.join();
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

}  // namespace cuda_agent
