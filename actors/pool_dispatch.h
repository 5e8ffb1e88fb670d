// The work-pool broker's routing state: workers, the queue, requests in flight, the result cache,
// deadlines and heartbeats. No sockets: the broker thread (work_pool_broker.cpp) decodes frames,
// calls the on_* methods and sends what they hand to its PoolOutbox. Internal to actors/.
//
// Threading: owned by the broker thread; not thread-safe. Every method runs to completion and
// may call the outbox any number of times.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "actors/pool_transport.h"
#include "actors/work_pool_broker.h"
#include "messages/pool_codec.h"

namespace cuda_agent {

/// Where the dispatcher's messages go; peers are ROUTER routing ids. `payload` may be null; the
/// outbox shares (does not copy) it.
class PoolOutbox {
 public:
  virtual ~PoolOutbox() = default;
  virtual void to_client(const std::string& peer, std::string envelope,
                         zmq::message_t* payload) = 0;
  virtual void to_worker(const std::string& peer, std::string envelope,
                         zmq::message_t* payload) = 0;
};

/// The clocks of one step: steady time for heartbeats and latencies, wall time for deadlines.
struct PoolNow {
  SteadyTime steady;
  std::int64_t unix_ms = 0;
};

class PoolDispatcher {
 public:
  PoolDispatcher(const WorkPoolBrokerOptions& options, PoolOutbox& outbox);

  /// `submit` has a request id and a deadline (the broker thread checked).
  void on_submit(const std::string& client, PoolSubmit submit, zmq::message_t payload,
                 const PoolNow& now);
  /// `ready` has a worker id and 1..max_slots_per_worker slots (the broker thread checked).
  void on_ready(const std::string& worker, const PoolReady& ready, const PoolNow& now);
  void on_heartbeat(const std::string& worker, const PoolHeartbeat& heartbeat, const PoolNow& now);
  void on_result(const std::string& worker, const PoolResult& result, zmq::message_t payload,
                 const PoolNow& now);
  void on_disconnect(const std::string& worker, const PoolNow& now);
  /// Drops silent workers and answers requests past their deadline.
  void housekeeping(const PoolNow& now);

  /// Refuses a client frame: replies `error` for `request_id` (may be empty).
  void refuse(const std::string& client, const RequestId& request_id, const Error& error);
  /// Counts a frame rejected by the broker thread before it reached the dispatcher.
  void count_malformed() { ++stats_.malformed_frames; }
  /// A snapshot of the counters, queue, in-flight requests and workers.
  PoolStats stats() const;
  /// Whether a worker routing id is registered.
  bool knows_worker(const std::string& worker) const { return workers_.count(worker) != 0; }

 private:
  struct Request {
    RequestHeader header;
    std::vector<std::string> tags;
    zmq::message_t payload;
    std::vector<std::string> waiters;  // client routing ids, each answered once
    std::uint32_t attempts = 0;
    bool queued = false;
    std::string worker;  // routing id while on a worker
    SteadyTime dispatched_at;
  };
  struct Worker {
    WorkerId id;
    std::vector<std::string> tags;
    std::uint32_t slots = 1;
    StringSet running;  // request ids, expired ones until their result
    SteadyTime registered_at;
    SteadyTime last_heard;
    bool heartbeat_seen = false;
    std::uint64_t last_assigned = 0;  // LRU order: smaller was given work longer ago
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    std::vector<std::uint32_t> latencies_us;  // ring of the last kLatencySamples
    std::size_t latency_next = 0;
  };
  struct Cached {
    std::optional<Error> error;
    zmq::message_t payload;
    std::uint32_t attempts = 0;
    WorkerId worker;
    std::list<std::string>::iterator lru;  // its place in cache_lru_
  };

  using WorkerMap = StringMap<Worker>;  // by routing id

  static bool matches(const Worker& w, const std::vector<std::string>& tags);
  /// The least-recently-used worker with a free slot and every tag, or end().
  WorkerMap::iterator pick_worker(const std::vector<std::string>& tags);
  void dispatch(const std::string& request_id, Request& request, const std::string& worker_peer,
                Worker& worker, const PoolNow& now);
  void fill(const std::string& worker_peer, const PoolNow& now);
  void dispatch_queue(const PoolNow& now);
  /// Drops a worker; its requests go back to the front of the queue (`refund`: without costing
  /// an attempt) or fail once they have had max_attempts deliveries.
  void lose_worker(const std::string& worker_peer, const char* reason, bool refund,
                   const PoolNow& now);
  /// Answers every waiter of `request_id` and forgets the request.
  void finish(const std::string& request_id, const std::optional<Error>& error,
              zmq::message_t* payload, const WorkerId& worker);
  void record_latency(Worker& worker, SteadyTime dispatched_at, const PoolNow& now);
  void expire(const std::string& request_id, const char* where);
  void remember(const std::string& request_id, Cached cached);
  void remember_expired(const std::string& request_id);

  const WorkPoolBrokerOptions options_;
  PoolOutbox& outbox_;
  StringMap<Request> requests_;    // queued or in flight, by request id
  std::deque<std::string> queue_;  // ids of the queued requests, in dispatch order
  WorkerMap workers_;
  StringMap<std::string> peer_of_worker_id_;
  StringMap<Cached> cache_;
  std::list<std::string> cache_lru_;  // least recently used (or stored) first
  std::uint64_t cache_bytes_ = 0;
  StringSet expired_ids_;  // recently expired, to count late results
  std::deque<std::string> expired_order_;
  std::uint64_t assign_seq_ = 0;
  PoolStats stats_;
};

}  // namespace cuda_agent
