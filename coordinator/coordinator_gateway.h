// The coordinator process's gateway (DESIGN.md section 3): the one owner of its ZeroMQ socket, a
// ROUTER bound at the run's coordinator endpoint (cluster/launch_plan.h coordinator_endpoint).
// Rollout workers, the learner and status clients reach the coordinator actor through it with
// CoordinatorFrames (messages/coordinator_codec.h); coordinator/coordinator_client.h is the other
// end.
//
//   auto sup = spawn_coordinator_supervisor(sys, options, *store);
//   auto gw = CoordinatorGateway::start(sys, {.endpoint = "tcp://*:5550", .run = run}, sup);
//   if (!gw) { log_error(gw.error()); return 2; }
//   ... (*gw)->endpoint() ...        // the endpoint bound ("tcp://0.0.0.0:5550")
//
// Requests and what the gateway does with them (each reply echoes the request's request_id):
//   WorkRequest           -> work_atom to the coordinator      -> WorkReply
//   TrajectorySubmission  -> submit_atom                       -> SubmitReply
//   StatusRequest         -> status_atom                       -> CoordinatorStatus
//   Heartbeat             -> heartbeat_atom                    (no reply)
//   AttachLearner         -> a learner proxy for that peer, attached with attach_learner_atom
//   StepDone, CheckpointDone, CoordinatorFailure from the attached learner -> its proxy
// A request the coordinator does not answer within request_timeout, or answers with an error
// (it is restarting, it is gone), gets a CoordinatorFailure with the error. A frame of another
// run, or a kind the coordinator's socket does not take, gets a CoordinatorFailure
// ("coordinator.wrong_run", "coordinator.unexpected_message"); bytes that do not decode are
// logged (rate-limited, with the peer's address) and counted, and get no answer since they carry
// no request id that can be trusted. The gateway keeps serving after any of these.
//
// The learner proxy: a typed actor implementing learner_peer for one remote learner. A
// train_step or checkpoint request from the coordinator becomes a TrainStep / CheckpointRequest
// frame to that peer (request id "<proxy>-<n>"), and the peer's StepDone / CheckpointDone /
// CoordinatorFailure with that id completes the CAF response promise. The proxy exits, failing
// what it holds, when the learner falls silent past learner_silence_timeout (every frame of the
// peer counts: serve_learner heartbeats while its handler runs), or when another AttachLearner
// (another learner, or the same one on a new connection) replaces it. The coordinator monitors
// its learner, so it sees the proxy go and offers the batch again. A Heartbeat with role kLearner
// while no learner is attached attaches its sender (a learner that outlived a gateway restart);
// while one is attached, another learner's heartbeats do not take the attachment away.
//
// Target: a coordinator_supervisor (the process's normal case: the gateway follows each
// coordinator the supervisor starts, and attaches learners through the supervisor, which
// re-attaches them to a restarted coordinator) or one coordinator_actor (tests, tools).
//
// Threading: start() binds on the calling thread; then one io thread owns the socket (receives,
// decodes, sends) and a gateway actor on the CAF scheduler owns the routing state (requests to
// the coordinator, learner proxies). The io thread hands each decoded frame to the actor as a
// message; the actor and the proxies hand frames to send to the io thread through a queue and an
// eventfd wake-up. Nothing blocks the CAF scheduler. stop() and the destructor may be called from
// any one thread; both are idempotent.
#pragma once

#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "actors/pool_transport.h"
#include "coordinator/coordinator_supervisor.h"
#include "core/error.h"
#include "core/ids.h"

namespace cuda_agent {

struct CoordinatorGatewayOptions {
  /// The endpoint to bind, e.g. "tcp://*:5550"; port 0 picks a free port (see endpoint()).
  /// Default: "tcp://127.0.0.1:0".
  std::string endpoint = "tcp://127.0.0.1:0";
  /// The run this coordinator owns; frames naming another run are refused. Required.
  RunId run;
  /// How long the gateway waits for the coordinator's answer to one request before it answers
  /// CoordinatorFailure (category timeout). Should be below the clients' own request timeout
  /// (CoordinatorClientOptions::request_timeout, 30 s by default) so that they see why.
  /// Default: 25 s.
  std::chrono::milliseconds request_timeout{25'000};
  /// Silence of the attached learner after which its proxy exits and the coordinator offers the
  /// batch again ([run] heartbeat_timeout_ms). Default: 10 s.
  std::chrono::milliseconds learner_silence_timeout{10'000};
  /// Largest frame accepted (a trajectory submission carries the whole episode); larger ones are
  /// cut off by ZeroMQ (ZMQ_MAXMSGSIZE), which drops that connection. Default: 256 MiB.
  std::int64_t max_frame_bytes = 256ll << 20;
  /// Log lines about bad frames allowed per second; the rest are counted. Default: 10.
  std::int64_t bad_frame_logs_per_second = 10;
  /// CURVE with a ZAP allow-list of client keys (as the brokers: cluster/launch_plan.h
  /// broker_options); nullopt: plain TCP.
  std::optional<CurveServerKeys> curve;
};

/// What the gateway has seen, for tests and the metrics endpoint.
struct CoordinatorGatewayCounters {
  std::uint64_t frames_in = 0;   ///< decoded frames taken in
  std::uint64_t refused = 0;     ///< frames answered or dropped as bad (undecodable, wrong run)
  std::uint64_t frames_out = 0;  ///< frames sent
  std::uint64_t learners_attached = 0;  ///< learner proxies spawned
  std::uint64_t learners_detached = 0;  ///< learner proxies ended (silent, replaced, stopped)
};

class CoordinatorGateway {
 public:
  /// Binds the socket, spawns the gateway actor and starts the io thread; the gateway follows
  /// the coordinator `supervisor` runs. Fails on bad options or a bind error.
  static Expected<std::unique_ptr<CoordinatorGateway>> start(caf::actor_system& system,
                                                             CoordinatorGatewayOptions options,
                                                             coordinator_supervisor supervisor);
  /// The same in front of one coordinator (no restarts).
  static Expected<std::unique_ptr<CoordinatorGateway>> start(caf::actor_system& system,
                                                             CoordinatorGatewayOptions options,
                                                             coordinator_actor coordinator);
  ~CoordinatorGateway();
  CoordinatorGateway(const CoordinatorGateway&) = delete;
  CoordinatorGateway& operator=(const CoordinatorGateway&) = delete;

  /// The endpoint actually bound ("tcp://127.0.0.1:40123" when port 0 was asked for).
  const std::string& endpoint() const;
  CoordinatorGatewayCounters counters() const;

  /// Stops the io thread, closes the socket and ends the gateway actor and its learner proxy
  /// (the coordinator then sees its learner go). Idempotent.
  void stop();

  class Impl;

 private:
  explicit CoordinatorGateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
