#include "actors/pool_dispatch.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/log.h"

namespace cuda_agent {
namespace {

constexpr std::size_t kLatencySamples = 1024;
constexpr std::size_t kExpiredRemembered = 4096;

// A result payload for the cache to keep (see on_result): a frame of its own, copied, where
// the payload came in its own (received) frame.
zmq::message_t keep_frame(zmq::message_t& payload) {
  if (payload.size() <= kPoolInlinePayloadBytes) return share_frame(payload);
  return zmq::message_t(payload.data(), payload.size());
}

Error deadline_error(const std::string& id, const char* where) {
  return make_error(ErrorCategory::kTimeout, "pool.deadline_expired",
                    "request " + id + " passed its deadline " + where);
}

// A ROUTER routing id as describe_peer (pool_transport.h) writes it: "id=0080000001".
std::string routing_id_hex(const std::string& routing_id) {
  std::string out = "id=";
  for (std::size_t i = 0; i < routing_id.size() && i < 32; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(routing_id[i]));
    out += hex;
  }
  return out;
}

std::uint64_t percentile(std::vector<std::uint32_t> samples, double q) {
  if (samples.empty()) return 0;
  auto k = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(k),
                   samples.end());
  return samples[k];
}

}  // namespace

PoolDispatcher::PoolDispatcher(const WorkPoolBrokerOptions& options, PoolOutbox& outbox)
    : options_(options), outbox_(outbox) {}

void PoolDispatcher::refuse(const std::string& client, const RequestId& request_id,
                            const Error& error) {
  PoolReply reply;
  reply.request_id = request_id;
  reply.error = error;
  outbox_.to_client(client, encode_pool(reply), nullptr);
}

void PoolDispatcher::on_submit(const std::string& client, PoolSubmit submit, zmq::message_t payload,
                               const PoolNow& now) {
  const std::string id = submit.header.request_id.value();
  ++stats_.submitted;
  if (auto c = cache_.find(id); c != cache_.end()) {
    ++stats_.cache_hits;
    Cached& hit = c->second;
    cache_lru_.splice(cache_lru_.end(), cache_lru_, hit.lru);  // most recently used now
    PoolReply reply{RequestId{id}, hit.error, hit.payload.size(), hit.attempts, hit.worker};
    outbox_.to_client(client, encode_pool(reply), hit.error ? nullptr : &hit.payload);
    return;
  }
  if (auto r = requests_.find(id); r != requests_.end()) {
    ++stats_.attached;
    auto& waiters = r->second.waiters;
    if (std::find(waiters.begin(), waiters.end(), client) == waiters.end()) {
      waiters.push_back(client);
    }
    return;
  }
  if (submit.header.deadline_unix_ms <= now.unix_ms) {
    ++stats_.expired;
    refuse(client, submit.header.request_id, deadline_error(id, "before it reached the broker"));
    return;
  }
  auto worker = pick_worker(submit.tags);
  if (worker == workers_.end()) {
    // The client's own bound first: a flooding client learns that it is its share that is full,
    // and its flood leaves the rest of the queue to the others.
    auto own = queues_.find(client);
    const std::size_t own_queued = own == queues_.end() ? 0 : own->second.ids.size();
    if (own != queues_.end() &&
        own_queued >= static_cast<std::size_t>(options_.max_queued_per_client)) {
      ++stats_.rejected_busy;
      if (!own->second.refusal_logged) {  // once until its queue empties
        own->second.refusal_logged = true;
        log_warn("pool client over its queue share", {{"pool", options_.name},
                                                      {"client", routing_id_hex(client)},
                                                      {"queued", std::to_string(own_queued)}});
      }
      refuse(client, submit.header.request_id,
             make_error(ErrorCategory::kUnavailable, "pool.client_busy",
                        options_.name + ": this client has " + std::to_string(own_queued) +
                            " requests waiting already, its limit (max_queued_per_client " +
                            std::to_string(options_.max_queued_per_client) + "); retry later"));
      return;
    }
    if (queued_ >= static_cast<std::size_t>(options_.max_queued_requests)) {
      ++stats_.rejected_busy;
      refuse(client, submit.header.request_id,
             make_error(ErrorCategory::kUnavailable, "pool.busy",
                        options_.name + ": " + std::to_string(queued_) +
                            " requests are waiting already; retry later"));
      return;
    }
  }
  Request& request = requests_[id];
  request.header = std::move(submit.header);
  request.tags = std::move(submit.tags);
  request.payload = std::move(payload);
  request.waiters.push_back(client);
  request.owner = client;
  if (worker != workers_.end()) {
    if (turns_.empty()) round_served_.clear();  // no queue: every client's turn is now
    round_served_.insert(client);
    dispatch(id, request, worker->first, worker->second, now);
  } else {
    enqueue(id, request, false);
  }
}

void PoolDispatcher::enqueue(const std::string& request_id, Request& request, bool front) {
  auto [q, joined] = queues_.try_emplace(request.owner);
  if (front) {
    q->second.ids.push_front(request_id);
    if (!joined) leave_turns(std::find(turns_.begin(), turns_.end(), request.owner));
    turns_.push_front(request.owner);  // next, whether or not it was served in this round
  } else {
    q->second.ids.push_back(request_id);
    if (joined) join_turns(request.owner);
  }
  request.queued = true;
  queued_peak_ = std::max(queued_peak_, ++queued_);
}

void PoolDispatcher::join_turns(const std::string& client) {
  if (round_served_.count(client)) {
    turns_.push_back(client);
    ++served_in_turns_;
  } else {
    turns_.insert(turns_.end() - static_cast<std::ptrdiff_t>(served_in_turns_), client);
  }
}

void PoolDispatcher::leave_turns(std::deque<std::string>::iterator turn) {
  const auto unserved = static_cast<std::ptrdiff_t>(turns_.size() - served_in_turns_);
  if (turn - turns_.begin() >= unserved) --served_in_turns_;
  turns_.erase(turn);
}

void PoolDispatcher::unqueue(const std::string& request_id, Request& request) {
  request.queued = false;
  auto q = queues_.find(request.owner);
  if (q == queues_.end()) return;
  auto& ids = q->second.ids;
  if (auto it = std::find(ids.begin(), ids.end(), request_id); it != ids.end()) {
    ids.erase(it);
    --queued_;
  }
  if (ids.empty()) {
    leave_turns(std::find(turns_.begin(), turns_.end(), request.owner));
    queues_.erase(q);
  }
}

bool PoolDispatcher::matches(const Worker& w, const std::vector<std::string>& tags) {
  for (const auto& tag : tags) {
    if (!std::binary_search(w.tags.begin(), w.tags.end(), tag)) return false;
  }
  return true;
}

PoolDispatcher::WorkerMap::iterator PoolDispatcher::pick_worker(
    const std::vector<std::string>& tags) {
  auto best = workers_.end();
  for (auto it = workers_.begin(); it != workers_.end(); ++it) {
    const Worker& w = it->second;
    if (w.running.size() >= w.slots || !matches(w, tags)) continue;
    if (best == workers_.end() || w.last_assigned < best->second.last_assigned) best = it;
  }
  return best;
}

void PoolDispatcher::dispatch(const std::string& request_id, Request& request,
                              const std::string& worker_peer, Worker& worker, const PoolNow& now) {
  ++request.attempts;
  request.queued = false;
  request.worker = worker_peer;
  request.dispatched_at = now.steady;
  worker.running.insert(request_id);
  worker.last_assigned = ++assign_seq_;
  PoolWork work{request.header, request.payload.size(), request.attempts};
  outbox_.to_worker(worker_peer, encode_pool(work), &request.payload);
}

template <class WorkerFor>
bool PoolDispatcher::dispatch_next(WorkerFor&& worker_for, const PoolNow& now) {
  // A client whose queued requests no free worker can run (tags) keeps its place in the turns.
  for (auto turn = turns_.begin(); turn != turns_.end(); ++turn) {
    auto& ids = queues_.at(*turn).ids;
    for (auto it = ids.begin(); it != ids.end(); ++it) {
      Request& request = requests_.at(*it);
      auto worker = worker_for(request);
      if (worker == workers_.end()) continue;
      const std::string id = std::move(*it);
      ids.erase(it);
      --queued_;
      if (served_in_turns_ == turns_.size()) {  // every client had its turn: a new round
        round_served_.clear();
        served_in_turns_ = 0;
      }
      std::string client = *turn;
      leave_turns(turn);
      round_served_.insert(client);
      if (ids.empty()) {
        queues_.erase(client);
      } else {
        turns_.push_back(std::move(client));  // its next turn is in the next round
        ++served_in_turns_;
      }
      dispatch(id, request, worker->first, worker->second, now);
      return true;
    }
  }
  return false;
}

void PoolDispatcher::fill(const std::string& worker_peer, const PoolNow& now) {
  auto w = workers_.find(worker_peer);
  if (w == workers_.end()) return;
  auto this_worker = [&](const Request& request) {
    return matches(w->second, request.tags) ? w : workers_.end();
  };
  while (w->second.running.size() < w->second.slots && dispatch_next(this_worker, now)) {
  }
}

void PoolDispatcher::dispatch_queue(const PoolNow& now) {
  auto any_worker = [&](const Request& request) { return pick_worker(request.tags); };
  while (dispatch_next(any_worker, now)) {
  }
}

void PoolDispatcher::on_ready(const std::string& peer, const PoolReady& ready, const PoolNow& now) {
  const std::string& id = ready.worker_id.value();
  if (auto old = peer_of_worker_id_.find(id);
      old != peer_of_worker_id_.end() && old->second != peer) {
    lose_worker(std::string(old->second), "replaced by a new connection", false, now);
  }
  auto [it, inserted] = workers_.try_emplace(peer);
  Worker& w = it->second;
  if (inserted) w.registered_at = now.steady;
  w.id = ready.worker_id;
  w.tags = ready.tags;
  std::sort(w.tags.begin(), w.tags.end());
  w.slots = ready.slots;
  // Requests it still holds from before (a restarted broker, a new connection) occupy slots
  // until their results come; if this broker knows them, they run there already.
  for (const auto& id : ready.running) w.running.insert(id);
  w.last_heard = now.steady;
  peer_of_worker_id_[id] = peer;
  if (inserted) {
    log_info("pool worker joined", {{"pool", options_.name},
                                    {"worker", id},
                                    {"slots", std::to_string(w.slots)},
                                    {"workers", std::to_string(workers_.size())}});
  }
  fill(peer, now);
}

void PoolDispatcher::on_heartbeat(const std::string& peer, const PoolHeartbeat& heartbeat,
                                  const PoolNow& now) {
  auto it = workers_.find(peer);
  if (it == workers_.end()) {
    outbox_.to_worker(peer, encode_pool(PoolReregister{}), nullptr);
    return;
  }
  it->second.last_heard = now.steady;
  it->second.heartbeat_seen = true;
  outbox_.to_worker(peer, encode_pool(PoolHeartbeat{WorkerId{}, heartbeat.seq}), nullptr);
}

void PoolDispatcher::on_result(const std::string& peer, const PoolResult& result,
                               zmq::message_t payload, const PoolNow& now) {
  const std::string& id = result.request_id.value();
  auto w = workers_.find(peer);
  bool was_running = false;
  if (w == workers_.end()) {
    // Dropped earlier or the broker restarted; its result still counts if the request waits.
    outbox_.to_worker(peer, encode_pool(PoolReregister{}), nullptr);
  } else {
    w->second.last_heard = now.steady;
    was_running = w->second.running.erase(id) > 0;
  }
  auto r = requests_.find(id);
  if (r == requests_.end()) {
    if (expired_ids_.count(id)) {
      ++stats_.late_results;
    } else {
      ++stats_.unknown_results;
    }
  } else if (now.unix_ms >= r->second.header.deadline_unix_ms) {
    ++stats_.late_results;
    expire(id, "on a worker");
  } else {
    WorkerId by;
    if (w != workers_.end()) {
      by = w->second.id;
      ++w->second.completed;
      if (result.error) ++w->second.failed;
      if (was_running) record_latency(w->second, r->second.dispatched_at, now);
    }
    ++stats_.completed;
    // The request may also be running on another worker (re-queued after this one was
    // dropped): the first result wins; the other worker's slot frees when its result comes.
    const std::uint32_t attempts = r->second.attempts;
    finish(id, result.error, result.error ? nullptr : &payload, by);
    // The reply is on its way (sent, sharing `payload`); the cache then keeps its own copy of a
    // payload that had its own frame. Kept as a shared frame, it pinned its receive buffer until
    // evicted, so every large receive wrote memory last touched a whole cache ago (1 MiB:
    // ~100 us on the reply's path); the copy costs the broker thread that write after the
    // reply has left. An inline payload's frame is already the broker's own (take_payload).
    remember(id, Cached{result.error, keep_frame(payload), attempts, by, {}});
  }
  if (was_running) fill(peer, now);
}

void PoolDispatcher::on_disconnect(const std::string& peer, const PoolNow& now) {
  lose_worker(peer, "left", true, now);
}

void PoolDispatcher::lose_worker(const std::string& peer, const char* reason, bool refund,
                                 const PoolNow& now) {
  auto it = workers_.find(peer);
  if (it == workers_.end()) return;
  Worker lost = std::move(it->second);
  workers_.erase(it);
  if (auto p = peer_of_worker_id_.find(lost.id.value());
      p != peer_of_worker_id_.end() && p->second == peer) {
    peer_of_worker_id_.erase(p);
  }
  ++stats_.workers_lost;
  // A worker that says goodbye (refund) is news; one that vanished is a warning.
  auto log = refund ? log_info : log_warn;
  log("pool worker gone", {{"pool", options_.name},
                           {"worker", lost.id.value()},
                           {"reason", reason},
                           {"requests", std::to_string(lost.running.size())}});
  std::vector<std::string> requeue;
  for (const std::string& id : lost.running) {
    auto r = requests_.find(id);
    if (r == requests_.end() || r->second.queued || r->second.worker != peer) continue;
    Request& request = r->second;
    if (refund) --request.attempts;
    if (request.attempts >= static_cast<std::uint64_t>(options_.max_attempts)) {
      ++stats_.attempts_exhausted;
      finish(id,
             make_error(ErrorCategory::kUnavailable, "pool.attempts_exhausted",
                        "request " + id + " was given to " + std::to_string(request.attempts) +
                            " workers and each was lost (last: " + lost.id.value() + ", " + reason +
                            ")"),
             nullptr, lost.id);
      continue;
    }
    request.worker.clear();
    requeue.push_back(id);
    ++stats_.requeued;
  }
  for (auto id = requeue.rbegin(); id != requeue.rend(); ++id) {
    enqueue(*id, requests_.at(*id), true);
  }
  dispatch_queue(now);
}

void PoolDispatcher::finish(const std::string& request_id, const std::optional<Error>& error,
                            zmq::message_t* payload, const WorkerId& worker) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  if (it->second.queued) unqueue(request_id, it->second);
  Request request = std::move(it->second);
  requests_.erase(it);
  PoolReply reply{RequestId{request_id}, error, payload ? payload->size() : 0, request.attempts,
                  worker};
  const std::string envelope = encode_pool(reply);
  for (const std::string& client : request.waiters) {
    outbox_.to_client(client, envelope, error ? nullptr : payload);
  }
}

void PoolDispatcher::expire(const std::string& request_id, const char* where) {
  ++stats_.expired;
  finish(request_id, deadline_error(request_id, where), nullptr, WorkerId{});
  remember_expired(request_id);
}

void PoolDispatcher::housekeeping(const PoolNow& now) {
  std::vector<std::string> silent;
  for (const auto& [peer, w] : workers_) {
    SteadyTime due = w.last_heard + std::chrono::milliseconds(options_.heartbeat_timeout_ms);
    if (!w.heartbeat_seen) {
      due = std::max(
          due, w.registered_at + std::chrono::milliseconds(options_.first_heartbeat_grace_ms));
    }
    if (now.steady >= due) silent.push_back(peer);
  }
  for (const auto& peer : silent) lose_worker(peer, "missed heartbeats", false, now);

  std::vector<std::pair<std::string, bool>> late;  // request id, was queued
  for (const auto& [id, request] : requests_) {
    if (request.header.deadline_unix_ms <= now.unix_ms) late.emplace_back(id, request.queued);
  }
  if (late.empty()) return;
  // One pass over each client's queue instead of one erase per expired request.
  for (auto q = queues_.begin(); q != queues_.end();) {
    auto& ids = q->second.ids;
    ids.erase(std::remove_if(ids.begin(), ids.end(),
                             [&](const std::string& id) {
                               Request& request = requests_.at(id);
                               if (request.header.deadline_unix_ms > now.unix_ms) return false;
                               request.queued = false;
                               --queued_;
                               return true;
                             }),
              ids.end());
    if (!ids.empty()) {
      ++q;
      continue;
    }
    leave_turns(std::find(turns_.begin(), turns_.end(), q->first));
    q = queues_.erase(q);
  }
  for (const auto& [id, queued] : late) expire(id, queued ? "in the queue" : "on a worker");
}

std::optional<std::size_t> PoolDispatcher::shrink_if_drained() {
  if (queued_ != 0 || queued_peak_ < kReleaseAfterQueued) return std::nullopt;
  const std::size_t peak = std::exchange(queued_peak_, 0);
  // Emptied containers keep what they grew to: the tables' bucket arrays, the deque's map.
  StringMap<ClientQueue>().swap(queues_);
  std::deque<std::string>().swap(turns_);
  StringSet().swap(round_served_);
  served_in_turns_ = 0;
  StringMap<Request> in_flight;  // what is left: at most the workers' slots
  in_flight.reserve(requests_.size());
  while (!requests_.empty()) in_flight.insert(requests_.extract(requests_.begin()));
  requests_.swap(in_flight);
  return peak;
}

void PoolDispatcher::record_latency(Worker& worker, SteadyTime dispatched_at, const PoolNow& now) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.steady - dispatched_at);
  auto sample = static_cast<std::uint32_t>(std::min<std::int64_t>(us.count(), UINT32_MAX));
  if (worker.latencies_us.size() < kLatencySamples) {
    worker.latencies_us.push_back(sample);
  } else {
    worker.latencies_us[worker.latency_next] = sample;
    worker.latency_next = (worker.latency_next + 1) % kLatencySamples;
  }
}

void PoolDispatcher::remember(const std::string& request_id, Cached cached) {
  const std::uint64_t bytes = cached.payload.size();
  if (options_.result_cache_entries <= 0 ||
      bytes > static_cast<std::uint64_t>(options_.result_cache_bytes)) {
    return;
  }
  auto [it, inserted] = cache_.emplace(request_id, std::move(cached));
  if (!inserted) return;
  it->second.lru = cache_lru_.insert(cache_lru_.end(), request_id);
  cache_bytes_ += bytes;
  while (cache_lru_.size() > static_cast<std::size_t>(options_.result_cache_entries) ||
         cache_bytes_ > static_cast<std::uint64_t>(options_.result_cache_bytes)) {
    auto oldest = cache_.find(cache_lru_.front());
    cache_bytes_ -= oldest->second.payload.size();
    cache_.erase(oldest);
    cache_lru_.pop_front();
  }
}

void PoolDispatcher::remember_expired(const std::string& request_id) {
  if (!expired_ids_.insert(request_id).second) return;
  expired_order_.push_back(request_id);
  if (expired_order_.size() > kExpiredRemembered) {
    expired_ids_.erase(expired_order_.front());
    expired_order_.pop_front();
  }
}

PoolStats PoolDispatcher::stats() const {
  PoolStats s = stats_;
  s.queue_depth = queued_;
  s.in_flight = requests_.size() - queued_;
  for (const auto& [peer, w] : workers_) {
    s.workers.push_back(PoolWorkerStats{
        w.id, w.tags, w.slots, static_cast<std::uint32_t>(w.running.size()), w.completed, w.failed,
        percentile(w.latencies_us, 0.5), percentile(w.latencies_us, 0.99)});
  }
  return s;
}

}  // namespace cuda_agent
