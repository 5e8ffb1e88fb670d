#include "actors/pool_client.h"

#include <sys/eventfd.h>
#include <unistd.h>

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

// A callback and its argument, run after the mutex is released.
struct Ready {
  PoolCallback done;
  StatsCallback stats_done;
  PoolOutcome outcome;
  Expected<PoolStats> stats = Error{};
};

}  // namespace

// Leader/follower on one DEALER under mutex_: a caller sends its request on its own thread (no
// hand-off); a thread blocked in call() watches the socket itself while nobody else does, so its
// reply wakes it directly; the io thread watches only while async calls or stats wait and no
// caller does. Watching = polling the socket's ZMQ_FD without the mutex; every thread that
// uses the socket takes in what is readable before it lets the mutex go (ZMQ_FD is
// edge-triggered and a send may swallow the edge). The leader also reads the connection monitor
// (ConnectionMonitor, pool_transport.h): a lost connection starts the reconnect clock, a new one
// re-sends what waits, a refused handshake fails everything. Nobody reads it while nothing waits;
// its events (state changes only) then wait for the next leader, who replays them in order.
class PoolClient::Impl {
 public:
  explicit Impl(const PoolClientOptions& options) : options_(options) {}
  ~Impl() {
    if (wake_fd_ >= 0) close(wake_fd_);
  }
  Status start();
  void close_client();
  /// Sends a request; `done` or `waiter` gets the outcome.
  void submit(std::string id, std::int64_t deadline_unix_ms, PoolFrames frames, PoolCallback done,
              std::shared_ptr<CallWaiter> waiter);
  void submit_stats(std::int64_t deadline_unix_ms, StatsCallback done);
  /// Blocks until `waiter` is done or `give_up_at`.
  bool wait(const std::shared_ptr<CallWaiter>& waiter, std::int64_t give_up_at_unix_ms);
  std::uint64_t late_replies();

  const PoolClientOptions options_;

 private:
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
  /// One turn as the leader: poll until something arrives, a deadline or a wake, take it in,
  /// expire. Called and returns with the lock held.
  void lead_once(Lock& lock, std::vector<Ready>& ready, std::int64_t until_unix_ms);
  /// Reads the socket to EAGAIN; returns how many messages it took.
  std::size_t take_in(std::vector<Ready>& ready);
  /// After a send (mutex held): reads the socket now if a leader waits on it, else leaves that to
  /// the next leader (`unread_`).
  void read_after_send(std::vector<Ready>& ready);
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
  /// The frames of `p`, shared, for one more send.
  static PoolFrames share(PoolFrames& frames);
  /// Hands the watch on after a turn: to a blocked caller, else to the io thread if async work
  /// waits.
  void hand_on();
  void wake_leader();
  static void run(std::vector<Ready>& ready);
  bool io_has_work() const { return async_waiting_ > 0 || !stats_waiters_.empty() || closed_; }

  int wake_fd_ = -1;
  zmq::context_t context_{1};
  std::mutex mutex_;  // the socket and everything below
  zmq::socket_t broker_{context_, zmq::socket_type::dealer};
  std::condition_variable callers_cv_;  // blocked callers not leading
  std::condition_variable io_cv_;       // the io thread when not leading
  std::condition_variable idle_cv_;     // close_client() waiting for blocked callers to leave
  bool closed_ = false;
  bool leader_active_ = false;
  // Sent on since the socket was last read to EAGAIN: a send may process the socket's commands
  // and spend its ZMQ_FD edge, so the next leader reads the socket before it waits. A sender
  // reads it at once only while a leader is blocked on the descriptor (no extra system call per
  // request otherwise).
  bool unread_ = false;
  std::int64_t leader_wakes_at_ = 0;  // unix ms the leader's poll ends at the latest
  std::size_t blocked_ = 0;           // callers in wait() whose outcome is not in yet
  std::size_t async_waiting_ = 0;     // callbacks in pending_
  std::uint64_t late_replies_ = 0;
  StringMap<Pending> pending_;
  std::multimap<std::int64_t, std::string> deadlines_;
  std::deque<StatsWaiter> stats_waiters_;
  std::vector<zmq::message_t> parts_;
  ConnectionMonitor monitor_;  // after broker_: closed before it
  Error refusal_;              // the broker refused the handshake: every request fails with it
  std::uint64_t outages_ = 0;  // connections lost so far
  std::int64_t lost_since_unix_ms_ = 0;         // when the last one was lost (or the client began)
  std::int64_t unreachable_check_unix_ms_ = 0;  // next fail_unreachable() due; 0: none
  std::thread thread_;
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
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
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

void PoolClient::Impl::wake_leader() {
  const std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void PoolClient::Impl::run(std::vector<Ready>& ready) {
  for (Ready& r : ready) {
    if (r.done) r.done(std::move(r.outcome));
    if (r.stats_done) r.stats_done(std::move(r.stats));
  }
  ready.clear();
}

void PoolClient::Impl::submit(std::string id, std::int64_t deadline_unix_ms, PoolFrames frames,
                              PoolCallback done, std::shared_ptr<CallWaiter> waiter) {
  std::vector<Ready> ready;
  {
    Lock lock(mutex_);
    if (closed_) {
      Error e = make_error(ErrorCategory::kUnavailable, "pool.client_closed", "client is closed");
      PoolOutcome o{RequestId{id}, e, 0, WorkerId{}};
      if (waiter) {
        waiter->outcome = std::move(o);
        waiter->done = true;
        return;
      }
      lock.unlock();
      done(std::move(o));
      return;
    }
    auto add = [&](Pending& p) {
      if (waiter) {
        p.waiters.push_back(std::move(waiter));
      } else {
        p.done.push_back(std::move(done));
        ++async_waiting_;
      }
    };
    auto refuse = [&](Error error) {
      PoolOutcome o{RequestId{id}, std::move(error), 0, WorkerId{}};
      if (waiter) {
        waiter->outcome = std::move(o);
        waiter->done = true;
      } else {
        ready.push_back(Ready{std::move(done), {}, std::move(o)});
      }
    };
    if (auto it = pending_.find(id); it != pending_.end()) {
      add(it->second);  // same id in flight: share its outcome
    } else if (!refusal_.code.empty()) {
      refuse(refusal_);  // the broker refused this client's handshake: nothing gets through
    } else {
      PoolFrames kept = share(frames);
      bool sent = false;
      try {
        sent = send_frames(broker_, frames, zmq::send_flags::dontwait);
      } catch (const zmq::error_t& e) {
        log_error(zmq_failure("pool client send", e));
      }
      if (!sent) {
        // Past the socket's high-water mark (the broker has been away for long): refuse now
        // rather than block every caller.
        refuse(make_error(ErrorCategory::kUnavailable, "pool.client_backlog",
                          "too many requests wait for the broker in this client"));
      } else {
        Pending& p = pending_[id];
        p.deadline_unix_ms = deadline_unix_ms;
        p.submitted_unix_ms = now_unix_ms();
        p.frames = std::move(kept);
        p.sent_while_down = !monitor_.connected();
        p.sent_outage = outages_;
        p.by_deadline = deadlines_.emplace(deadline_unix_ms, id);
        add(p);
        // A new deadline, or a first request waiting for a broker that is away: the leader's
        // poll must end in time for it.
        if (leader_active_ && (deadline_unix_ms < leader_wakes_at_ || !monitor_.connected())) {
          wake_leader();
        }
      }
    }
    read_after_send(ready);
    if (!leader_active_ && async_waiting_ > 0) io_cv_.notify_one();
  }
  run(ready);
}

void PoolClient::Impl::submit_stats(std::int64_t deadline_unix_ms, StatsCallback done) {
  {
    Lock lock(mutex_);
    if (!closed_ && !refusal_.code.empty()) {
      Error refused = refusal_;
      lock.unlock();
      done(std::move(refused));
      return;
    }
    if (!closed_) {
      std::vector<Ready> ready;
      stats_waiters_.push_back(StatsWaiter{deadline_unix_ms, std::move(done)});
      try {
        (void)broker_.send(take_frame(encode_pool(PoolStatsRequest{})), zmq::send_flags::dontwait);
      } catch (const zmq::error_t& e) {
        log_error(zmq_failure("pool client send", e));
      }
      read_after_send(ready);
      if (leader_active_) {
        wake_leader();  // a new deadline to watch
      } else {
        io_cv_.notify_one();
      }
      lock.unlock();
      run(ready);
      return;
    }
  }
  done(make_error(ErrorCategory::kUnavailable, "pool.client_closed", "client is closed"));
}

bool PoolClient::Impl::wait(const std::shared_ptr<CallWaiter>& waiter,
                            std::int64_t give_up_at_unix_ms) {
  std::vector<Ready> ready;
  Lock lock(mutex_);
  ++blocked_;
  while (!waiter->done && now_unix_ms() < give_up_at_unix_ms) {
    if (!leader_active_) {
      lead_once(lock, ready, give_up_at_unix_ms);
      if (!ready.empty()) {
        lock.unlock();
        run(ready);
        lock.lock();
      }
      continue;
    }
    callers_cv_.wait_until(
        lock, std::chrono::system_clock::time_point(std::chrono::milliseconds(give_up_at_unix_ms)));
  }
  --blocked_;
  if (closed_ && blocked_ == 0) idle_cv_.notify_all();  // the destructor may go on
  return waiter->done;
}

void PoolClient::Impl::lead_once(Lock& lock, std::vector<Ready>& ready,
                                 std::int64_t until_unix_ms) {
  leader_active_ = true;
  try {
    // The connection's news first: a re-send or a refusal changes what this turn waits for.
    watch_connection(ready);
    fail_unreachable(now_unix_ms(), ready);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) log_error(zmq_failure("pool client monitor", e));
  }
  const std::int64_t now = now_unix_ms();
  std::int64_t wakes_at = std::min(until_unix_ms, now + 1000);
  if (!deadlines_.empty()) wakes_at = std::min(wakes_at, deadlines_.begin()->first);
  if (!stats_waiters_.empty()) {
    wakes_at = std::min(wakes_at, stats_waiters_.front().deadline_unix_ms);
  }
  if (unreachable_check_unix_ms_ > 0) wakes_at = std::min(wakes_at, unreachable_check_unix_ms_);
  leader_wakes_at_ = wakes_at;
  try {
    // What a send left unread first; when that brings anything in, this turn ends without a wait.
    if (!(unread_ && take_in(ready) > 0)) {
      const int fd = broker_.get(zmq::sockopt::fd);
      const int monitor_fd = monitor_.fd();
      lock.unlock();
      zmq::pollitem_t items[] = {{nullptr, fd, ZMQ_POLLIN, 0},
                                 {nullptr, wake_fd_, ZMQ_POLLIN, 0},
                                 {nullptr, monitor_fd, ZMQ_POLLIN, 0}};
      zmq::poll(items, monitor_fd >= 0 ? 3 : 2,
                std::chrono::milliseconds(std::max<std::int64_t>(wakes_at - now, 0)));
      if (items[1].revents & ZMQ_POLLIN) {
        std::uint64_t count = 0;
        (void)!read(wake_fd_, &count, sizeof count);
      }
      lock.lock();
      take_in(ready);
      watch_connection(ready);
    }
  } catch (const zmq::error_t& e) {
    if (!lock.owns_lock()) lock.lock();
    if (e.num() != EINTR) log_error(zmq_failure("pool client loop", e));
  }
  expire(now_unix_ms(), ready);
  leader_active_ = false;
  hand_on();
}

void PoolClient::Impl::hand_on() {
  if (blocked_ > 0) callers_cv_.notify_all();  // outcomes in, or one of them leads next
  if (io_has_work()) io_cv_.notify_one();
}

void PoolClient::Impl::io_loop() {
  std::vector<Ready> ready;
  Lock lock(mutex_);
  while (!closed_) {
    if (!leader_active_ && io_has_work()) {
      lead_once(lock, ready, now_unix_ms() + 1000);
      if (!ready.empty()) {
        lock.unlock();
        run(ready);
        lock.lock();
      }
      continue;
    }
    io_cv_.wait(lock);
  }
  fail_all(make_error(ErrorCategory::kUnavailable, "pool.client_closed", "client is closed"),
           ready);
  if (blocked_ > 0) callers_cv_.notify_all();
  lock.unlock();
  run(ready);
}

void PoolClient::Impl::read_after_send(std::vector<Ready>& ready) {
  if (leader_active_) {
    take_in(ready);
  } else {
    unread_ = true;
  }
}

std::size_t PoolClient::Impl::take_in(std::vector<Ready>& ready) {
  std::size_t dropped = 0, taken = 0;
  try {
    // Until EAGAIN, which processes the socket's pending commands as ZMQ_EVENTS would: asking
    // ZMQ_EVENTS before each message cost a system call per message.
    while (recv_multipart(broker_, parts_, 2, dropped)) {
      on_reply(parts_, dropped, ready);
      ++taken;
    }
    unread_ = false;
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) log_error(zmq_failure("pool client receive", e));
  }
  return taken;
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
    ready.push_back(
        Ready{{}, std::move(stats_waiters_.front().done), {}, std::get<PoolStats>(std::move(*m))});
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
  async_waiting_ -= p.done.size();
  for (auto& waiter : p.waiters) {
    waiter->outcome = outcome;
    waiter->done = true;
  }
  for (std::size_t i = 0; i < p.done.size(); ++i) {
    ready.push_back(
        Ready{std::move(p.done[i]), {}, i + 1 < p.done.size() ? outcome : std::move(outcome)});
  }
  if (!p.waiters.empty()) callers_cv_.notify_all();
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
    ready.push_back(Ready{
        {},
        std::move(stats_waiters_.front().done),
        {},
        make_error(ErrorCategory::kTimeout, "pool.stats_timeout", "no stats before the timeout")});
    stats_waiters_.pop_front();
  }
  fail_unreachable(now, ready);
}

void PoolClient::Impl::fail_all(const Error& error, std::vector<Ready>& ready) {
  while (!pending_.empty()) {
    std::string id = pending_.begin()->first;
    complete(id, PoolOutcome{RequestId{id}, error, 0, WorkerId{}}, ready);
  }
  for (auto& w : stats_waiters_) ready.push_back(Ready{{}, std::move(w.done), {}, error});
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
  unread_ = true;  // the sends may have spent the socket's edge
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
  // Replies nobody waits for are taken in by whoever next uses the socket: take them in now.
  std::vector<Ready> ready;
  std::uint64_t late = 0;
  {
    Lock lock(mutex_);
    if (!closed_) take_in(ready);
    late = late_replies_;
  }
  run(ready);
  return late;
}

void PoolClient::Impl::close_client() {
  {
    Lock lock(mutex_);
    if (closed_) return;
    closed_ = true;
    io_cv_.notify_one();
    if (leader_active_) wake_leader();
  }
  if (thread_.joinable()) thread_.join();
  // Callers still inside wait() (their outcome is in: the io thread failed every pending call)
  // must leave it before the socket and the mutex go.
  Lock lock(mutex_);
  callers_cv_.notify_all();
  idle_cv_.wait(lock, [&] { return blocked_ == 0; });
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
