#include "actors/pool_client.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "actors/endpoint.h"
#include "core/log.h"

namespace cuda_agent {
namespace {

// `why` (may be empty) says what the client knows about the broker at that moment.
Error deadline_error(const std::string& id, const std::string& why = {}) {
  return make_error(ErrorCategory::kTimeout, "pool.deadline_expired",
                    "no reply for request " + id + " before its deadline" + why);
}

using StatsCallback = std::function<void(Expected<PoolStats>)>;

// Where a blocked call() finds its outcome.
struct CallWaiter {
  bool done = false;  // under Impl::mutex_
  PoolOutcome outcome;
};

Error closed_error() {
  return make_error(ErrorCategory::kUnavailable, "pool.client_closed", "client is closed");
}

// An outcome on its way to a callback or a blocked caller's waiter (filled by the io thread
// after a turn, callbacks outside the mutex).
struct Ready {
  PoolCallback done;
  std::shared_ptr<CallWaiter> waiter;
  PoolOutcome outcome;
  StatsCallback stats_done;
  Expected<PoolStats> stats = Error{};
};

}  // namespace

// One io thread owns the DEALER, its connection monitor and every pending request; it waits in
// zmq::poll on the socket, the monitor and an eventfd, and nothing else touches them. Callers hand
// their requests over through `inbox_` (under mutex_) and wake it through the eventfd; a blocked
// caller then waits on `answered_` for its waiter. zmq::poll on a ZeroMQ socket is level-
// triggered (it asks the socket for ZMQ_EVENTS), so a send cannot hide a reply from the next
// poll. The monitor: a lost connection starts the reconnect clock, a new one re-sends what waits,
// a refused handshake fails everything.
class PoolClient::Impl {
 public:
  explicit Impl(const PoolClientOptions& options) : options_(options) {}
  Status start();
  void close_client();
  /// Hands a request to the io thread; `done` or `waiter` gets the outcome.
  void submit(std::string id, std::int64_t deadline_unix_ms, PoolFrames frames, PoolCallback done,
              std::shared_ptr<CallWaiter> waiter);
  void submit_stats(std::int64_t deadline_unix_ms, StatsCallback done);
  /// Blocks until `waiter` is done or `give_up_at`.
  bool wait(const std::shared_ptr<CallWaiter>& waiter, std::int64_t give_up_at_unix_ms);
  std::uint64_t late_replies();

  const PoolClientOptions options_;

 private:
  // What a caller hands to the io thread.
  struct Command {
    enum class Kind : std::uint8_t { kSubmit, kStats, kSync } kind = Kind::kSubmit;
    std::string id;
    std::int64_t deadline_unix_ms = 0;
    PoolFrames frames;
    PoolCallback done;
    std::shared_ptr<CallWaiter> waiter;  // kSubmit (blocked caller), kSync
    StatsCallback stats_done;
  };
  struct Pending {
    std::int64_t deadline_unix_ms = 0;
    std::int64_t submitted_unix_ms = 0;
    // The request's frames, sharing (not copying) what was sent, to send again when a broker
    // connects after a lost connection.
    PoolFrames frames;
    // Sent while the connection was known to be down, after `outages_` reached `sent_outage`:
    // it waits in the socket and goes out on the next connection by itself.
    bool sent_while_down = false;
    std::uint64_t sent_outage = 0;
    std::vector<PoolCallback> done;
    std::vector<std::shared_ptr<CallWaiter>> waiters;
    std::multimap<std::int64_t, std::string>::iterator by_deadline;
  };
  struct StatsWaiter {
    std::int64_t deadline_unix_ms = 0;
    StatsCallback done;
  };
  using Lock = std::unique_lock<std::mutex>;

  void io_loop();
  /// Hands `command` over and wakes the io thread; false when the client is closed.
  bool hand_over(Command command);
  void handle(Command& command, std::vector<Ready>& ready);
  /// Reads the socket until nothing waits.
  void take_in(std::vector<Ready>& ready);
  void on_reply(std::vector<zmq::message_t>& parts, std::size_t dropped, std::vector<Ready>& ready);
  void complete(const std::string& id, PoolOutcome outcome, std::vector<Ready>& ready);
  void expire(std::int64_t now, std::vector<Ready>& ready);
  void fail_all(const Error& error, std::vector<Ready>& ready);
  /// Reads the connection monitor until nothing waits; acts on each change.
  void watch_connection(std::vector<Ready>& ready);
  /// Sends every waiting request again, except those already waiting in the socket.
  void resend_pending();
  /// Fails the requests that have waited reconnect_timeout_ms without a connected broker.
  void fail_unreachable(std::int64_t now, std::vector<Ready>& ready);
  /// When the next poll must end at the latest (a deadline, the reconnect clock, 1 s).
  std::int64_t next_wake(std::int64_t now) const;
  /// The frames of `p`, shared, for one more send.
  static PoolFrames share(PoolFrames& frames);
  /// Runs the callbacks and fills the blocked callers' waiters (their lock taken here).
  void run(std::vector<Ready>& ready);

  WakeFd wake_;  // callers -> the io thread
  zmq::context_t context_{1};
  zmq::socket_t broker_{context_, zmq::socket_type::dealer};  // the io thread's only
  std::thread thread_;

  std::mutex mutex_;                  // inbox_, closed_, waiters' fields, blocked_
  std::condition_variable answered_;  // blocked callers
  std::condition_variable idle_;      // close_client() waiting for blocked callers to leave
  std::deque<Command> inbox_;
  bool closed_ = false;
  std::size_t blocked_ = 0;  // callers inside wait()
  std::atomic<std::uint64_t> late_replies_{0};

  // The io thread's own.
  StringMap<Pending> pending_;
  std::multimap<std::int64_t, std::string> deadlines_;
  std::deque<StatsWaiter> stats_waiters_;
  std::vector<zmq::message_t> parts_;
  ConnectionMonitor monitor_;  // after broker_: closed before it
  Error refusal_;              // the broker refused the handshake: every request fails with it
  std::uint64_t outages_ = 0;  // connections lost so far
  std::int64_t lost_since_unix_ms_ = 0;         // when the last one was lost (or the client began)
  std::int64_t unreachable_check_unix_ms_ = 0;  // next fail_unreachable() due; 0: none
};

Status PoolClient::Impl::start() {
  if (options_.broker_endpoint.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options", "broker_endpoint is empty");
  }
  if (options_.heartbeat_interval_ms < 1 || options_.heartbeat_timeout_ms < 1 ||
      options_.reconnect_timeout_ms < 1 || options_.heartbeat_timeout_ms > 6'553'500 ||
      options_.resolve_timeout_ms < 0) {
    return make_error(ErrorCategory::kInvalidInput, "pool.options",
                      "heartbeat_interval_ms, heartbeat_timeout_ms (at most 6553500) and "
                      "reconnect_timeout_ms must be >= 1, resolve_timeout_ms >= 0");
  }
  RETURN_IF_ERROR(resolve_endpoint_host(options_.broker_endpoint,
                                        std::chrono::milliseconds(options_.resolve_timeout_ms)));
  if (!wake_.valid()) {
    return make_error(ErrorCategory::kIo, "pool.eventfd", "cannot create the client's eventfd");
  }
  lost_since_unix_ms_ = now_unix_ms();  // not connected yet: the reconnect clock runs
  try {
    broker_.set(zmq::sockopt::linger, 0);
    broker_.set(zmq::sockopt::maxmsgsize,
                2 * options_.max_payload_bytes + options_.max_envelope_bytes);
    broker_.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(options_.heartbeat_interval_ms));
    broker_.set(zmq::sockopt::heartbeat_timeout, static_cast<int>(options_.heartbeat_timeout_ms));
    // The broker drops this connection after as long without a ping from it (ZMQ_HEARTBEAT_TTL,
    // in units of 100 ms on the wire).
    broker_.set(zmq::sockopt::heartbeat_ttl,
                static_cast<int>(std::max<std::int64_t>(options_.heartbeat_timeout_ms, 100)));
    if (options_.curve) RETURN_IF_ERROR(apply_curve_client(broker_, *options_.curve));
    RETURN_IF_ERROR(
        monitor_.start(context_, broker_, options_.broker_endpoint, options_.curve.has_value()));
    broker_.connect(options_.broker_endpoint);
  } catch (const zmq::error_t& e) {
    return make_error(ErrorCategory::kUnavailable, "pool.connect",
                      "cannot connect to " + options_.broker_endpoint + ": " + e.what());
  }
  thread_ = std::thread([this] {
    name_this_thread("pool-client");
    io_loop();
  });
  return Status::ok();
}

bool PoolClient::Impl::hand_over(Command command) {
  {
    Lock lock(mutex_);
    if (closed_) return false;
    inbox_.push_back(std::move(command));
  }
  wake_.notify();
  return true;
}

void PoolClient::Impl::submit(std::string id, std::int64_t deadline_unix_ms, PoolFrames frames,
                              PoolCallback done, std::shared_ptr<CallWaiter> waiter) {
  PoolOutcome closed{RequestId{id}, closed_error(), 0, WorkerId{}};
  const bool blocked = waiter != nullptr;
  if (hand_over(Command{.kind = Command::Kind::kSubmit,
                        .id = std::move(id),
                        .deadline_unix_ms = deadline_unix_ms,
                        .frames = std::move(frames),
                        .done = done,
                        .waiter = waiter})) {
    return;
  }
  if (blocked) {
    Lock lock(mutex_);
    waiter->outcome = std::move(closed);
    waiter->done = true;
    return;
  }
  done(std::move(closed));
}

void PoolClient::Impl::submit_stats(std::int64_t deadline_unix_ms, StatsCallback done) {
  if (hand_over(Command{
          .kind = Command::Kind::kStats, .deadline_unix_ms = deadline_unix_ms, .stats_done = done}))
    return;
  done(closed_error());
}

bool PoolClient::Impl::wait(const std::shared_ptr<CallWaiter>& waiter,
                            std::int64_t give_up_at_unix_ms) {
  Lock lock(mutex_);
  ++blocked_;
  answered_.wait_until(
      lock, std::chrono::system_clock::time_point(std::chrono::milliseconds(give_up_at_unix_ms)),
      [&] { return waiter->done; });
  --blocked_;
  if (closed_ && blocked_ == 0) idle_.notify_all();  // the destructor may go on
  return waiter->done;
}

void PoolClient::Impl::run(std::vector<Ready>& ready) {
  bool filled = false;
  {
    Lock lock(mutex_);
    for (Ready& r : ready) {
      if (!r.waiter) continue;
      r.waiter->outcome = std::move(r.outcome);
      r.waiter->done = true;
      filled = true;
    }
  }
  if (filled) answered_.notify_all();
  for (Ready& r : ready) {
    if (r.done) r.done(std::move(r.outcome));
    if (r.stats_done) r.stats_done(std::move(r.stats));
  }
  ready.clear();
}

void PoolClient::Impl::handle(Command& c, std::vector<Ready>& ready) {
  switch (c.kind) {
    case Command::Kind::kSync: ready.push_back(Ready{.waiter = std::move(c.waiter)}); return;
    case Command::Kind::kStats:
      if (!refusal_.code.empty()) {
        ready.push_back(Ready{.stats_done = std::move(c.stats_done), .stats = refusal_});
        return;
      }
      stats_waiters_.push_back(StatsWaiter{c.deadline_unix_ms, std::move(c.stats_done)});
      try {
        (void)broker_.send(take_frame(encode_pool(PoolStatsRequest{})), zmq::send_flags::dontwait);
      } catch (const zmq::error_t& e) {
        log_error(zmq_failure("pool client send", e));
      }
      return;
    case Command::Kind::kSubmit: break;
  }
  auto add = [&](Pending& p) {
    if (c.waiter) {
      p.waiters.push_back(std::move(c.waiter));
    } else {
      p.done.push_back(std::move(c.done));
    }
  };
  auto refuse = [&](Error error) {
    ready.push_back(
        Ready{.done = std::move(c.done),
              .waiter = std::move(c.waiter),
              .outcome = PoolOutcome{RequestId{c.id}, std::move(error), 0, WorkerId{}}});
  };
  if (auto it = pending_.find(c.id); it != pending_.end()) {
    add(it->second);  // same id in flight: share its outcome
    return;
  }
  if (!refusal_.code.empty()) {
    refuse(refusal_);  // the broker refused this client's handshake: nothing gets through
    return;
  }
  PoolFrames kept = share(c.frames);
  bool sent = false;
  try {
    sent = send_frames(broker_, c.frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    log_error(zmq_failure("pool client send", e));
  }
  if (!sent) {
    // Past the socket's high-water mark (the broker has been away for long): refuse now rather
    // than hold every caller.
    refuse(make_error(ErrorCategory::kUnavailable, "pool.client_backlog",
                      "too many requests wait for the broker in this client"));
    return;
  }
  Pending& p = pending_[c.id];
  p.deadline_unix_ms = c.deadline_unix_ms;
  p.submitted_unix_ms = now_unix_ms();
  p.frames = std::move(kept);
  p.sent_while_down = !monitor_.connected();
  p.sent_outage = outages_;
  p.by_deadline = deadlines_.emplace(c.deadline_unix_ms, c.id);
  add(p);
}

std::int64_t PoolClient::Impl::next_wake(std::int64_t now) const {
  std::int64_t at = now + 1000;
  if (!deadlines_.empty()) at = std::min(at, deadlines_.begin()->first);
  if (!stats_waiters_.empty()) at = std::min(at, stats_waiters_.front().deadline_unix_ms);
  if (unreachable_check_unix_ms_ > 0) at = std::min(at, unreachable_check_unix_ms_);
  return at;
}

void PoolClient::Impl::io_loop() {
  std::vector<Ready> ready;
  std::deque<Command> commands;
  zmq::pollitem_t items[] = {{broker_.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, wake_.fd(), ZMQ_POLLIN, 0},
                             {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
  const int watched = monitor_.handle() ? 3 : 2;
  for (;;) {
    bool closing = false;
    try {
      // The connection's news first: a re-send or a refusal changes what the requests meet.
      watch_connection(ready);
      take_in(ready);
      {
        Lock lock(mutex_);
        commands.swap(inbox_);
        closing = closed_;
      }
      for (Command& c : commands) handle(c, ready);
      commands.clear();
      const std::int64_t now = now_unix_ms();
      expire(now, ready);
      run(ready);
      if (closing) break;
      zmq::poll(
          items, watched,
          std::chrono::milliseconds(std::max<std::int64_t>(next_wake(now_unix_ms()) - now, 0)));
      if (items[1].revents & ZMQ_POLLIN) wake_.drain();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      if (e.num() != EINTR) log_error(zmq_failure("pool client loop", e));
    }
  }
  fail_all(closed_error(), ready);
  run(ready);
}

void PoolClient::Impl::take_in(std::vector<Ready>& ready) {
  std::size_t dropped = 0;
  try {
    while (recv_multipart(broker_, parts_, 2, dropped)) on_reply(parts_, dropped, ready);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) log_error(zmq_failure("pool client receive", e));
  }
}

void PoolClient::Impl::on_reply(std::vector<zmq::message_t>& parts, std::size_t dropped,
                                std::vector<Ready>& ready) {
  DecodeLimits limits;
  limits.max_bytes = static_cast<std::size_t>(options_.max_envelope_bytes);
  auto frame = decode_pool_frame(view(parts[0]), limits);
  PoolMessage* m = frame ? &frame->message : nullptr;
  if (m && std::holds_alternative<PoolStats>(*m)) {
    // Without a waiter: the answer to a request whose waiter gave up (or was failed); dropped.
    if (stats_waiters_.empty()) return;
    ready.push_back(Ready{.stats_done = std::move(stats_waiters_.front().done),
                          .stats = std::get<PoolStats>(std::move(*m))});
    stats_waiters_.pop_front();
    return;
  }
  auto* reply = m ? std::get_if<PoolReply>(m) : nullptr;
  if (!reply) {
    log_warn("pool reply rejected",
             {{"broker", options_.broker_endpoint},
              {"error", m ? "unexpected message" : frame.error().to_string()}});
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
  } else if (auto payload = payload_of(parts, 0, dropped, *frame)) {
    outcome.result = Expected<std::string>(std::in_place, std::string(*payload));
  } else {
    outcome.result = make_error(ErrorCategory::kInternal, "wire.malformed",
                                "reply without a payload of payloadBytes bytes");
  }
  complete(id, std::move(outcome), ready);
}

void PoolClient::Impl::complete(const std::string& id, PoolOutcome outcome,
                                std::vector<Ready>& ready) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  deadlines_.erase(p.by_deadline);
  for (auto& waiter : p.waiters)
    ready.push_back(Ready{.waiter = std::move(waiter), .outcome = outcome});
  for (std::size_t i = 0; i < p.done.size(); ++i) {
    ready.push_back(Ready{.done = std::move(p.done[i]),
                          .outcome = i + 1 < p.done.size() ? outcome : std::move(outcome)});
  }
}

void PoolClient::Impl::expire(std::int64_t now, std::vector<Ready>& ready) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    std::string id = deadlines_.begin()->second;
    const std::string why = monitor_.connected()
                                ? std::string()
                                : "; broker at " + options_.broker_endpoint +
                                      " not answering (no connection for " +
                                      std::to_string(now - lost_since_unix_ms_) + " ms)";
    complete(id, PoolOutcome{RequestId{id}, deadline_error(id, why), 0, WorkerId{}}, ready);
  }
  while (!stats_waiters_.empty() && stats_waiters_.front().deadline_unix_ms <= now) {
    ready.push_back(Ready{.stats_done = std::move(stats_waiters_.front().done),
                          .stats = make_error(ErrorCategory::kTimeout, "pool.stats_timeout",
                                              "no stats before the timeout")});
    stats_waiters_.pop_front();
  }
  fail_unreachable(now, ready);
}

void PoolClient::Impl::fail_all(const Error& error, std::vector<Ready>& ready) {
  while (!pending_.empty()) {
    std::string id = pending_.begin()->first;
    complete(id, PoolOutcome{RequestId{id}, error, 0, WorkerId{}}, ready);
  }
  for (auto& w : stats_waiters_)
    ready.push_back(Ready{.stats_done = std::move(w.done), .stats = error});
  stats_waiters_.clear();
}

PoolFrames PoolClient::Impl::share(PoolFrames& frames) {
  PoolFrames out{share_frame(frames.envelope), std::nullopt};
  if (frames.payload) out.payload = share_frame(*frames.payload);
  return out;
}

void PoolClient::Impl::watch_connection(std::vector<Ready>& ready) {
  for (;;) {
    switch (monitor_.next()) {
      case ConnectionMonitor::Change::kNone: return;
      case ConnectionMonitor::Change::kUp:
        unreachable_check_unix_ms_ = 0;
        if (outages_ > 0) resend_pending();
        break;
      case ConnectionMonitor::Change::kDown:
        ++outages_;
        lost_since_unix_ms_ = now_unix_ms();
        log_warn("pool broker connection lost; waiting requests go again when it is back",
                 {{"broker", options_.broker_endpoint},
                  {"waiting", std::to_string(pending_.size())},
                  {"give_up_after_ms", std::to_string(options_.reconnect_timeout_ms)}});
        break;
      case ConnectionMonitor::Change::kRefused:
        refusal_ = monitor_.refusal();
        log_error(refusal_, {{"waiting", std::to_string(pending_.size())}});
        fail_all(refusal_, ready);
        try {
          // ZeroMQ gives up after a refusal it understands; this stops the retries after one
          // it does not (a connection closed mid-handshake).
          broker_.disconnect(options_.broker_endpoint);
        } catch (const zmq::error_t&) {
        }
        return;
    }
  }
}

void PoolClient::Impl::resend_pending() {
  std::size_t resent = 0;
  for (auto& [id, p] : pending_) {
    if (p.sent_while_down && p.sent_outage == outages_) continue;  // in the socket already
    PoolFrames frames = share(p.frames);
    bool sent = false;
    try {
      sent = send_frames(broker_, frames, zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      log_error(zmq_failure("pool client re-send", e));
    }
    if (!sent) break;  // the socket is full: the rest end at their deadline or reconnect timeout
    p.sent_while_down = false;
    p.sent_outage = outages_;
    ++resent;
  }
  log_info("pool broker connected again; waiting requests re-sent",
           {{"broker", options_.broker_endpoint},
            {"waiting", std::to_string(pending_.size())},
            {"re_sent", std::to_string(resent)}});
}

void PoolClient::Impl::fail_unreachable(std::int64_t now, std::vector<Ready>& ready) {
  unreachable_check_unix_ms_ = 0;
  if (monitor_.connected() || !refusal_.code.empty() || pending_.empty()) return;
  const std::int64_t give_up = options_.reconnect_timeout_ms;
  if (now < lost_since_unix_ms_ + give_up) {
    unreachable_check_unix_ms_ = lost_since_unix_ms_ + give_up;
    return;
  }
  std::vector<std::string> gone;
  for (const auto& [id, p] : pending_) {
    const std::int64_t at = std::max(p.submitted_unix_ms, lost_since_unix_ms_) + give_up;
    if (at <= now) {
      gone.push_back(id);
    } else if (unreachable_check_unix_ms_ == 0 || at < unreachable_check_unix_ms_) {
      unreachable_check_unix_ms_ = at;
    }
  }
  if (gone.empty()) return;
  const Error error = make_error(ErrorCategory::kUnavailable, "pool.broker_unreachable",
                                 "broker at " + options_.broker_endpoint +
                                     " not answering: no connection to it for " +
                                     std::to_string(now - lost_since_unix_ms_) +
                                     " ms (reconnect_timeout_ms " + std::to_string(give_up) + ")");
  log_warn("pool requests given up: the broker stays away",
           {{"broker", options_.broker_endpoint}, {"requests", std::to_string(gone.size())}});
  for (const std::string& id : gone) complete(id, PoolOutcome{RequestId{id}, error, 0, {}}, ready);
}

std::uint64_t PoolClient::Impl::late_replies() {
  // Replies nobody waits for are counted when the io thread takes them in: let it read the
  // socket once more first.
  auto waiter = std::make_shared<CallWaiter>();
  if (hand_over(Command{.kind = Command::Kind::kSync, .waiter = waiter})) {
    (void)wait(waiter, now_unix_ms() + 5000);
  }
  return late_replies_.load();
}

void PoolClient::Impl::close_client() {
  {
    Lock lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  wake_.notify();
  if (thread_.joinable()) thread_.join();
  // Callers still inside wait() (their outcome is in: the io thread failed every pending call)
  // must leave it before the members go.
  Lock lock(mutex_);
  answered_.notify_all();
  idle_.wait(lock, [&] { return blocked_ == 0; });
}

Expected<std::unique_ptr<PoolClient>> PoolClient::connect(const PoolClientOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<PoolClient>(new PoolClient(std::move(impl)));
}

PoolClient::PoolClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PoolClient::~PoolClient() { impl_->close_client(); }

namespace {

Error refusal(const PoolRequest& request, std::int64_t max_payload_bytes) {
  if (request.header.request_id.value().empty() || request.header.deadline_unix_ms <= 0) {
    return make_error(ErrorCategory::kInvalidInput, "pool.bad_request",
                      "a request needs a request id and a deadline (deadline_unix_ms > 0)");
  }
  if (request.payload.size() > static_cast<std::size_t>(max_payload_bytes)) {
    return make_error(
        ErrorCategory::kInvalidInput, "wire.too_large",
        "payload of " + std::to_string(request.payload.size()) + " bytes exceeds the limit");
  }
  return Error{};
}

}  // namespace

void PoolClient::call_async(PoolRequest request, PoolCallback done) {
  Error refused = refusal(request, impl_->options_.max_payload_bytes);
  if (!refused.code.empty()) {
    done(PoolOutcome{request.header.request_id, refused, 0, WorkerId{}});
    return;
  }
  std::string id = request.header.request_id.value();
  const std::int64_t deadline = request.header.deadline_unix_ms;
  PoolSubmit submit{std::move(request.header), std::move(request.tags), request.payload.size()};
  impl_->submit(std::move(id), deadline,
                pool_frames(encode_pool(submit), std::move(request.payload)), std::move(done),
                nullptr);
}

PoolOutcome PoolClient::call_with_details(PoolRequest request) {
  Error refused = refusal(request, impl_->options_.max_payload_bytes);
  if (!refused.code.empty()) return PoolOutcome{request.header.request_id, refused, 0, WorkerId{}};
  const RequestId id = request.header.request_id;
  const std::int64_t deadline = request.header.deadline_unix_ms;
  auto waiter = std::make_shared<CallWaiter>();
  PoolSubmit submit{std::move(request.header), std::move(request.tags), request.payload.size()};
  impl_->submit(id.value(), deadline, pool_frames(encode_pool(submit), std::move(request.payload)),
                nullptr, waiter);
  // The watch answers by the deadline; the extra second only covers a stalled one.
  if (!impl_->wait(waiter, std::max(deadline, now_unix_ms()) + 1000)) {
    return PoolOutcome{id, deadline_error(id.value()), 0, WorkerId{}};
  }
  return std::move(waiter->outcome);
}

Expected<std::string> PoolClient::call(PoolRequest request) {
  return call_with_details(std::move(request)).result;
}

Expected<PoolStats> PoolClient::stats(std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<Expected<PoolStats>>>();
  auto future = promise->get_future();
  impl_->submit_stats(now_unix_ms() + timeout.count(),
                      [promise](Expected<PoolStats> s) { promise->set_value(std::move(s)); });
  if (future.wait_for(timeout + std::chrono::seconds(1)) != std::future_status::ready) {
    return make_error(ErrorCategory::kTimeout, "pool.stats_timeout", "no stats before the timeout");
  }
  return future.get();
}

std::uint64_t PoolClient::late_replies() const { return impl_->late_replies(); }

}  // namespace cuda_agent
