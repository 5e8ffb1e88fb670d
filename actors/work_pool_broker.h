// The work-pool broker: the one the compile farm and the GPU bench pool run (DESIGN.md section 3).
// Clients (pool_client.h) submit requests on one ROUTER socket; workers (pool_worker.h) announce
// themselves, heartbeat and return results on another. Wire format: messages/pool.capnp and
// docs/formats/pool.md.
//
//   auto broker = WorkPoolBroker::start({.client_endpoint = "tcp://*:5551",
//                                        .worker_endpoint = "tcp://*:5552"});
//   if (!broker) { log_error(broker.error()); return 2; }
//   ... (*broker)->stats(std::chrono::seconds(1)) ...
//
// What it guarantees:
//  - a request goes to the least-recently-used worker with a free slot whose tags include all of
//    the request's tags; none free: it waits in its client's queue, and queued requests are
//    dispatched one client at a time in turn, so one client's flood does not delay the others'
//    requests by more than one request each (pool_dispatch.h). Bounded per client
//    ("pool.client_busy" at once past max_queued_per_client) and in all ("pool.busy" past
//    max_queued_requests);
//  - once the queue drains after holding 1024 requests or more, its tables are rebuilt small and
//    the freed heap is given back to the kernel (malloc_trim: release_free_memory());
//  - a worker silent past its heartbeat timeout (a longer grace before its first heartbeat) is
//    dropped; its unfinished requests are re-queued at the front of their clients' queues (those
//    clients served next), up to max_attempts deliveries, then the waiting clients get
//    "pool.attempts_exhausted";
//  - deadlines (RequestHeader.deadline_unix_ms, required) are enforced on arrival, in the queue
//    and on the worker: the clients get a typed timeout ("pool.deadline_expired"), and a worker
//    result arriving after the deadline is dropped and counted (stats.late_results);
//  - a request id is an idempotency key: a repeat of a finished request gets the stored outcome
//    (bounded result cache) and a repeat of a pending one waits for the same run; each request
//    is answered to each waiting client once;
//  - a bad frame (truncated, garbage, wrong type, wrong format version, oversized) is logged with
//    the peer's address (rate-limited), counted, answered with a typed error where the sender is
//    a client, and the broker keeps serving.
//
// Threading: start() binds the sockets on the calling thread, then one broker thread owns them
// and every piece of routing state (no locks on the hot path). stats() and stop() may be called
// from any thread; they talk to the broker thread over an inproc control socket. The destructor
// stops the broker. Not copyable or movable.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "actors/pool_transport.h"
#include "core/error.h"
#include "messages/pool_codec.h"

namespace cuda_agent {

struct WorkPoolBrokerOptions {
  /// Where clients connect: a ZeroMQ endpoint to bind. Port 0 picks a free port (see
  /// client_endpoint()). Default: "tcp://127.0.0.1:0".
  std::string client_endpoint = "tcp://127.0.0.1:0";
  /// Where workers connect. Default: "tcp://127.0.0.1:0".
  std::string worker_endpoint = "tcp://127.0.0.1:0";
  /// Silence after which a worker counts as lost and its requests are re-queued; should be a few
  /// worker heartbeat intervals. Default: 10000 ms (RunOptions.heartbeat_timeout_ms).
  std::int64_t heartbeat_timeout_ms = 10'000;
  /// Silence allowed between a worker's Ready and its first heartbeat (model loading, CUDA start).
  /// Default: 300000 ms (RunOptions.first_heartbeat_grace_ms).
  std::int64_t first_heartbeat_grace_ms = 300'000;
  /// Deliveries of one request before it fails with "pool.attempts_exhausted"; each lost worker
  /// costs one. Default: 3.
  std::int64_t max_attempts = 3;
  /// Requests waiting for a worker before new ones are refused with "pool.busy". Default: 10000.
  std::int64_t max_queued_requests = 10'000;
  /// Requests one client (one connection) may have waiting before its new ones are refused with
  /// "pool.client_busy" (counted in stats.rejected_busy), while other clients' are still queued:
  /// one client's flood then leaves the rest of max_queued_requests to the others, who would
  /// otherwise get "pool.busy". Waiting requests are dispatched one per client in turn, so the
  /// share bounds memory, not latency. Default: 5000 (half of max_queued_requests' default); at
  /// or above max_queued_requests only the total bound applies.
  std::int64_t max_queued_per_client = 5'000;
  /// Finished outcomes kept for repeated request ids, by count and by payload bytes (least
  /// recently stored or repeated go first). Only worker outcomes are kept; broker refusals (busy,
  /// timeout) are not. A result larger than an inline payload is kept as a copy, made by the
  /// broker thread after the reply is sent (about 100 us per MiB; docs/BENCHMARKS.md "Wire"),
  /// and the cache holds up to result_cache_bytes of them: lower it where results are large and
  /// repeats rare. 0 entries: no cache. Default: 10000 entries, 256 MiB.
  std::int64_t result_cache_entries = 10'000;
  std::int64_t result_cache_bytes = 256ll << 20;
  /// Largest envelope frame accepted (the Cap'n Proto part). Default: 64 KiB.
  std::int64_t max_envelope_bytes = 64 << 10;
  /// Largest payload accepted; larger ones are refused with "wire.too_large". Frames past twice
  /// this are cut off by ZeroMQ itself (ZMQ_MAXMSGSIZE), which drops the connection without a
  /// reply. Default: 64 MiB.
  std::int64_t max_payload_bytes = 64ll << 20;
  /// Most slots one worker may announce. Default: 1024.
  std::int64_t max_slots_per_worker = 1024;
  /// ZeroMQ I/O threads of the broker's context (TCP reads and writes, framing). With 2 or more,
  /// client connections use the first and worker connections the others (ZMQ_AFFINITY), so
  /// neither side's traffic queues behind the other's. Default: 2.
  std::int64_t io_threads = 2;
  /// How often deadlines and heartbeats are checked: the precision of both. Default: 10 ms.
  std::int64_t housekeeping_interval_ms = 10;
  /// Log lines about bad frames allowed per second; the rest are counted. Default: 10.
  std::int64_t bad_frame_logs_per_second = 10;
  /// CURVE on both sockets with a ZAP allow-list of client keys; nullopt: plain TCP.
  std::optional<CurveServerKeys> curve;
  /// Names this pool in logs ("compile-farm", "bench-pool"). Default: "pool".
  std::string name = "pool";
};

/// Checks ranges and that CURVE, when given, has a non-empty allow-list.
Status validate(const WorkPoolBrokerOptions& options);

class WorkPoolBroker {
 public:
  /// Binds both sockets and starts the broker thread. Fails on bad options or a bind error.
  static Expected<std::unique_ptr<WorkPoolBroker>> start(const WorkPoolBrokerOptions& options);
  ~WorkPoolBroker();
  WorkPoolBroker(const WorkPoolBroker&) = delete;
  WorkPoolBroker& operator=(const WorkPoolBroker&) = delete;

  /// The endpoints actually bound ("tcp://127.0.0.1:40123" when port 0 was asked for).
  const std::string& client_endpoint() const;
  const std::string& worker_endpoint() const;

  /// A snapshot from the broker thread; fails with a timeout if it does not answer in `timeout`.
  Expected<PoolStats> stats(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// Stops the broker thread and closes the sockets (pending requests are not answered).
  /// Idempotent.
  void stop();

  class Impl;

 private:
  explicit WorkPoolBroker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
