// A work-pool worker: connects to a WorkPoolBroker (work_pool_broker.h), announces its tags and
// slots, heartbeats, and runs a handler for each request the broker gives it.
//
//   auto worker = PoolWorker::start(
//       {.broker_endpoint = broker->worker_endpoint(), .tags = {"cpu"}, .slots = 4},
//       [](const WorkItem& item) -> Expected<std::string> { return compile(item.payload); });
//
// Behaviour: work whose deadline has passed is answered with "pool.deadline_expired" without
// running the handler; a handler that throws is answered with "pool.handler_threw" (the
// exception is translated here, once). When the broker goes silent for broker_timeout_ms (it died
// or restarted) the worker re-creates its socket and announces itself again; when a restarted
// broker does not know it, the broker asks it to re-announce, which it does at once; a new
// connection after a lost one (the socket monitor sees both) is announced on at once too.
// A broker that refuses the worker's handshake (its CURVE key is not on the allow-list, a wrong
// server key, one side without CURVE) is logged at once, once, as "authentication failed for
// ENDPOINT: ..." (refusal() returns it, on_refusal hears of it), instead of a "broker silent"
// line every broker_timeout_ms; the worker keeps trying quietly with a new socket every
// broker_timeout_ms. A broker host that does not resolve fails start() with
// "pool.host_unresolvable" ("cannot resolve host HOST in ENDPOINT").
//
// Threading: one io thread owns the DEALER socket (it waits in zmq::poll, takes in work, sends
// heartbeats and results, reconnects), so a long handler never delays a heartbeat; `slots`
// handler threads run the handlers, at most `slots` at once, concurrently with each other, and
// hand each result back to the io thread. start(), stop() and the accessors may be called from
// any thread. stop() and the destructor wait for running handlers to return: a handler should
// honour the item's deadline.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/pool_transport.h"
#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"

namespace cuda_agent {

/// One request as a worker's handler sees it.
struct WorkItem {
  RequestHeader header;  ///< request id, run, policy version, deadline
  /// The client's payload bytes, as submitted: read in place where ZeroMQ received them (view(),
  /// or a std::string_view by conversion), no copy.
  PoolBytes payload;
  std::uint32_t attempt = 1;  ///< 1 on first delivery; higher after a worker was lost
};

/// Runs one request; returns the result payload or a typed error for the client. A handler may
/// return a std::string (or an Expected<std::string>); one that returns the payload it got, moved
/// out of the item, sends it back without a copy. A handler taking `const WorkItem&` works too.
using PoolHandler = std::function<Expected<PoolBytes>(WorkItem&)>;

struct PoolWorkerOptions {
  /// The broker's worker endpoint, e.g. "tcp://coordinator:5552". Required.
  std::string broker_endpoint;
  /// Unique within the pool. Default (empty): "<hostname>-<pid>-<n>".
  WorkerId worker_id;
  /// Capabilities offered, e.g. {"gpu:NVIDIA H200"}; a request runs here only if all its tags are
  /// among these. Default: none (takes only untagged requests).
  std::vector<std::string> tags;
  /// Requests run at once, each on its own handler thread. Default: 1.
  std::int64_t slots = 1;
  /// Requests the broker may queue here beyond `slots` (the worker announces slots + prefetch).
  /// Hides the broker round trip between short requests (more throughput); a queued request
  /// waits here even when another worker is idle, so keep 0 for long requests (compiles,
  /// benchmarks). Default: 0.
  std::int64_t prefetch = 0;
  /// How often a heartbeat goes to the broker. Default: 1000 ms (RunOptions).
  std::int64_t heartbeat_interval_ms = 1000;
  /// Silence from the broker (which echoes every heartbeat) after which the worker re-creates its
  /// socket and announces itself again. Default: 10000 ms.
  std::int64_t broker_timeout_ms = 10'000;
  /// Largest envelope and payload accepted from the broker. Default: 64 KiB, 64 MiB.
  std::int64_t max_envelope_bytes = 64 << 10;
  std::int64_t max_payload_bytes = 64ll << 20;
  /// CURVE keys when the broker is secured; nullopt: plain TCP.
  std::optional<CurveClientKeys> curve;
  /// How long start() waits for the resolver to find the broker's host (no lookup for an IP
  /// address or localhost: actors/endpoint.h). Default: 5000 ms.
  std::int64_t resolve_timeout_ms = 5'000;
  /// Called when the broker refuses the worker's handshake, once per streak of refusals (the
  /// error refusal() returns: "pool.auth_failed", or "pool.handshake_failed"), on the worker's
  /// leader thread with the worker's lock held: it must return quickly and must not call into
  /// the worker. A worker process ends itself from here (`cuda-agent serve compile-worker` exits
  /// 3: a restart with the same key is refused again). Default: none (the worker keeps trying).
  std::function<void(const Error&)> on_refusal;
};

class PoolWorker {
 public:
  /// Starts the socket and handler threads and announces the worker. Fails on bad options and on
  /// a broker host that does not resolve.
  static Expected<std::unique_ptr<PoolWorker>> start(const PoolWorkerOptions& options,
                                                     PoolHandler handler);
  ~PoolWorker();
  PoolWorker(const PoolWorker&) = delete;
  PoolWorker& operator=(const PoolWorker&) = delete;

  /// Stops taking work: requests not yet started are dropped (the broker re-queues them when it
  /// gets the Disconnect), running ones finish and their results are sent, then the worker
  /// leaves. Idempotent.
  void stop();

  const WorkerId& worker_id() const;
  /// Times the worker announced itself (1 after start; more after broker restarts).
  std::uint64_t announcements() const;
  /// Handler calls that have returned.
  std::uint64_t handled() const;
  /// Work for a request it held already, not run again (its held copy's result answers it).
  std::uint64_t duplicates() const;
  /// Why the broker refused the last handshake: "pool.auth_failed" naming the endpoint (or
  /// "pool.handshake_failed"); an empty code while none was refused since the last connection.
  Error refusal() const;

  class Impl;

 private:
  explicit PoolWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
