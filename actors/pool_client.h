// A work-pool client: submits requests to a WorkPoolBroker (work_pool_broker.h) and waits for
// their outcomes, each until the request's own deadline.
//
//   auto client = PoolClient::connect({.broker_endpoint = broker->client_endpoint()});
//   RequestHeader h{.request_id = RequestId{"r-1"}, .run_id = RunId{"run"},
//                   .deadline_unix_ms = now_unix_ms() + 30'000};
//   Expected<std::string> out = (*client)->call({h, {"cpu"}, payload});
//
// Every request needs a request id (the idempotency key: sending the same id again, from any
// client, returns the same outcome without running it twice) and a deadline. No wait outlives
// the deadline: at the deadline the caller gets "pool.deadline_expired" (category timeout), and a
// reply arriving later is discarded (late_replies()).
//
// Under faults (the connection is watched through ZeroMQ's socket monitor and ZMTP heartbeats,
// which the broker's ZeroMQ answers by itself):
//  - a broker that dies or restarts is noticed at once when its host closes the connection, and
//    within heartbeat_timeout_ms when it goes silent; when a broker is connected again, every
//    request still waiting is sent again with its request id (the broker's idempotency key: one
//    that reached the old broker and finished is answered from the new one's run, one the broker
//    still holds is not run twice), so a request in flight survives a broker restart;
//  - while no broker is connected, requests wait in the socket, deadline permitting, but at most
//    reconnect_timeout_ms (counted from the later of the request's submission and the loss of
//    the connection): then they fail with "pool.broker_unreachable" ("broker at ENDPOINT not
//    answering", category unavailable) instead of waiting out their deadline;
//  - a broker host that does not resolve fails connect() at once with "pool.host_unresolvable"
//    ("cannot resolve host HOST in ENDPOINT"), not every request after reconnect_timeout_ms;
//  - a broker that refuses the handshake (a CURVE key it does not allow, a wrong server key, one
//    side without CURVE) fails every waiting and later request at once with "pool.auth_failed"
//    ("authentication failed for ENDPOINT: ...", category unavailable). ZeroMQ does not retry a
//    refused handshake: make a new client with the right keys;
//  - past the socket's high-water mark (500 requests) a new request is refused at once with
//    "pool.client_backlog" (category unavailable) instead of blocking.
//
// Threading: one io thread owns the DEALER socket and its connection monitor and waits in
// zmq::poll; callers hand requests to it (a queue and an eventfd) and a blocked caller waits for
// its outcome on a condition variable. call(), call_async(), stats() and late_replies() are safe
// from any thread. A callback runs once, on the io thread (or on the calling thread when a request
// is refused before it is handed over, or the client is closed); it must not block for long, as
// other replies wait behind it. The destructor completes every pending call with
// "pool.client_closed".
#pragma once

#include <chrono>
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
#include "messages/pool_codec.h"

namespace cuda_agent {

/// One request for a pool.
struct PoolRequest {
  RequestHeader header;           ///< request_id and deadline_unix_ms are required
  std::vector<std::string> tags;  ///< capabilities the worker must have; empty: any worker
  std::string payload;            ///< opaque to the pool (a compile or bench request)
};

/// The outcome of one request.
struct PoolOutcome {
  RequestId request_id;
  /// The worker's result payload, or a typed error (from the worker's handler, the broker or
  /// this client: "pool.deadline_expired", "pool.busy", "pool.attempts_exhausted", ...).
  Expected<std::string> result = Error{};
  std::uint32_t attempts = 0;  ///< deliveries to workers (0: none, e.g. refused or expired)
  WorkerId worker_id;          ///< who produced the result; empty when no worker did
};

using PoolCallback = std::function<void(PoolOutcome)>;

struct PoolClientOptions {
  /// The broker's client endpoint, e.g. "tcp://coordinator:5551". Required.
  std::string broker_endpoint;
  /// Largest envelope and payload accepted in a reply; larger requests are refused before
  /// sending. Default: 64 KiB, 64 MiB.
  std::int64_t max_envelope_bytes = 64 << 10;
  std::int64_t max_payload_bytes = 64ll << 20;
  /// CURVE keys when the broker is secured; nullopt: plain TCP. Wrong keys fail requests with
  /// "pool.auth_failed" as soon as the broker refuses the handshake.
  std::optional<CurveClientKeys> curve;
  /// ZMTP heartbeats on the connection (ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TIMEOUT): a ping every
  /// interval, and a broker silent for the timeout counts as gone (the connection is dropped and
  /// re-made). They cost one small frame per interval and catch a broker whose host vanished
  /// without closing the connection. Default: 1000 ms, 3000 ms.
  std::int64_t heartbeat_interval_ms = 1000;
  std::int64_t heartbeat_timeout_ms = 3000;
  /// How long a request waits while no broker is connected before it fails with
  /// "pool.broker_unreachable": long enough to ride out a broker restart, short against a
  /// compile's deadline. Default: 15000 ms.
  std::int64_t reconnect_timeout_ms = 15'000;
  /// How long connect() waits for the resolver to find the broker's host (no lookup for an IP
  /// address or localhost: actors/endpoint.h). A host that does not resolve, or no answer in
  /// time, fails connect() with "pool.host_unresolvable" ("cannot resolve host HOST in
  /// ENDPOINT"), instead of requests that wait reconnect_timeout_ms for a broker the socket can
  /// never reach. Default: 5000 ms.
  std::int64_t resolve_timeout_ms = 5'000;
};

class PoolClient {
 public:
  /// Creates the socket and io thread and connects (asynchronously: it does not wait for the
  /// broker). Fails on bad options (an empty endpoint, a duration < 1 ms, malformed keys) and on
  /// a broker host that does not resolve ("pool.host_unresolvable").
  static Expected<std::unique_ptr<PoolClient>> connect(const PoolClientOptions& options);
  ~PoolClient();
  PoolClient(const PoolClient&) = delete;
  PoolClient& operator=(const PoolClient&) = delete;

  /// Sends `request` and blocks until its outcome or its deadline.
  Expected<std::string> call(PoolRequest request);
  /// The same, with attempts and worker id.
  PoolOutcome call_with_details(PoolRequest request);
  /// Sends `request`; `done` gets its outcome once, by the deadline at the latest. A second call
  /// with an id still pending on this client shares the first one's outcome.
  void call_async(PoolRequest request, PoolCallback done);

  /// The broker's stats, or a timeout error after `timeout`.
  Expected<PoolStats> stats(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// Replies discarded because no call was waiting (its deadline had passed). Takes in the
  /// replies waiting in the socket first (nobody watches it while no call waits).
  std::uint64_t late_replies() const;

  class Impl;

 private:
  explicit PoolClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
