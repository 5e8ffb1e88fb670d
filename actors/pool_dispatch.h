// The work-pool broker's routing state: workers, the queue, requests in flight, the result cache,
// deadlines and heartbeats. No sockets: the broker thread (work_pool_broker.cpp) decodes frames,
// calls the on_* methods and sends what they hand to its PoolOutbox. Internal to actors/.
//
// The queue is one queue per client (the submitter's ROUTER routing id: one PoolClient
// connection), served in rounds: each dispatch takes the oldest request the worker can run from
// the next client in turn, and each round gives every client with queued work one turn. A client
// whose queue was empty joins the current round, unless it was served in it already (then the
// next), so a client sending one request at a time is served next but cannot take two turns of a
// round. A request thus waits behind the running ones and at most one request of each other
// client, however many they queued (issue 27 item 7: 20,000 requests from one client delayed
// another's by 41.5 s). A client is a connection, not a person: one that opens many connections
// gets many turns; max_queued_per_client bounds each connection's share of the queue.
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
  /// Once the queue is empty after holding kReleaseAfterQueued requests or more since the last
  /// release: rebuilds the queue's tables at their present size and returns the most requests
  /// that were queued, for the caller to give freed memory back (release_free_memory(),
  /// core/malloc_tuning.h). Otherwise nullopt. Called on each housekeeping tick.
  std::optional<std::size_t> shrink_if_drained();
  /// The queue depth from which a drain gives memory back. Below it the memory is kept for the
  /// next burst, as core/malloc_tuning.h keeps freed memory for the next large message.
  static constexpr std::size_t kReleaseAfterQueued = 1024;
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
    std::string owner;   // routing id of the first submitter: the client whose queue it waits in
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

  /// One client's queued requests: oldest first, refunds in front.
  struct ClientQueue {
    std::deque<std::string> ids;
    bool refusal_logged = false;  // its first refusal past max_queued_per_client was logged
  };

  using WorkerMap = StringMap<Worker>;  // by routing id

  static bool matches(const Worker& w, const std::vector<std::string>& tags);
  /// The least-recently-used worker with a free slot and every tag, or end().
  WorkerMap::iterator pick_worker(const std::vector<std::string>& tags);
  void dispatch(const std::string& request_id, Request& request, const std::string& worker_peer,
                Worker& worker, const PoolNow& now);
  /// Queues `request` in its owner's queue: at the back, or (`front`) at the front with its
  /// owner's turn next.
  void enqueue(const std::string& request_id, Request& request, bool front);
  /// Takes a queued request out of its owner's queue (finished while it waited).
  void unqueue(const std::string& request_id, Request& request);
  /// Puts `client` (not in turns_) into the turns: behind the clients served in this round when
  /// it was served in it too, else before them.
  void join_turns(const std::string& client);
  void leave_turns(std::deque<std::string>::iterator turn);
  /// Dispatches the first queued request, taking clients in turn, for which `worker_for` gives a
  /// worker (WorkerMap::iterator; end(): none); false when there is none.
  template <class WorkerFor>
  bool dispatch_next(WorkerFor&& worker_for, const PoolNow& now);
  /// Gives `worker_peer` queued requests while it has free slots.
  void fill(const std::string& worker_peer, const PoolNow& now);
  /// Gives queued requests to any free worker that can run them.
  void dispatch_queue(const PoolNow& now);
  /// Drops a worker; its requests go back to the front of their clients' queues, those clients'
  /// turns next (`refund`: without costing an attempt), or fail once they have had max_attempts
  /// deliveries.
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
  StringMap<ClientQueue> queues_;  // by client routing id; only clients with queued requests
  // The clients in queues_ in the order they are served: those still to be served in this round,
  // then the last served_in_turns_ ones, served in it already.
  std::deque<std::string> turns_;
  std::size_t served_in_turns_ = 0;
  StringSet round_served_;       // the clients served in this round, queued or not
  std::size_t queued_ = 0;       // requests in all of queues_
  std::size_t queued_peak_ = 0;  // most queued since memory was last given back
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
