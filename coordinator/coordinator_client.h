// The coordinator seen from another process (no CAF): a rollout worker asks it for work and
// submits trajectories, a status tool asks for its counters, and the learner attaches and
// answers its train and checkpoint requests. The other end is the coordinator's gateway
// (coordinator/coordinator_gateway.h); the wire is one CoordinatorFrame per ZeroMQ message
// (messages/coordinator_codec.h).
//
//   auto client = CoordinatorClient::connect({.endpoint = "tcp://coord:5550",
//                                             .run = RunId{"run-1"},
//                                             .member = WorkerId{"rollout-3"}});
//   if (!client) return report(client.error());
//   Expected<WorkReply> work = (*client)->request_work();
//   if (work && work->assigned) { ... (*client)->submit({member, attempt, record}); }
//
//   // the learner process:
//   std::atomic<bool> stop{false};
//   Status s = serve_learner(options, my_handler, stop);   // returns once stop is set
//
// Deadlines and errors: each call gets a fresh request id and waits up to request_timeout. A
// call whose request could not be handed to a connected coordinator by then fails with
// "coordinator.unreachable" (category unavailable: the coordinator is down or not yet up); one
// that went out but got no answer fails with "coordinator.timeout" (category timeout); one the
// coordinator could not answer gets its CoordinatorFailure's error ("coordinator.unavailable"
// while it restarts, "coordinator.wrong_run", ...). Nothing is queued for a coordinator that is
// not connected (ZMQ_IMMEDIATE), so a request never reaches it after its caller gave up; but a
// request that did go out may still be carried out after a timeout (a work request's episode then
// stays with this member until the coordinator takes the member for lost: members that stop
// asking should stop heartbeating too). ZeroMQ keeps reconnecting, so a restarted coordinator is
// picked up by the next call, with the same routing id (the gateway hands the connection over).
//
// Heartbeats: the client sends Heartbeat{member, role} every heartbeat_interval while it lives,
// from its io thread, also while callers wait. serve_learner's client sends AttachLearner{member}
// first, then heartbeats with role kLearner, which keep the attachment alive and attach the
// learner again to a gateway that restarted (coordinator_gateway.h).
//
// Threading: one io thread owns the DEALER socket; callers queue their frame and wake it through
// an eventfd, then wait for their reply on a condition variable. request_work(), submit() and
// status() are safe from any number of threads at once. The destructor fails calls still waiting
// with "coordinator.client_closed". serve_learner runs the handler on the calling thread, one
// request at a time, while the io thread keeps heartbeating.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "actors/pool_transport.h"
#include "core/error.h"
#include "core/ids.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

struct CoordinatorClientOptions {
  /// The coordinator's endpoint, e.g. "tcp://coord:5550" (cluster/launch_plan.h
  /// coordinator_endpoint gives the run's). Required.
  std::string endpoint;
  /// The run; the gateway refuses frames of another. Required.
  RunId run;
  /// This member's id (the worker id in its requests and heartbeats). Required.
  WorkerId member;
  /// The role heartbeats report. serve_learner sets kLearner.
  MemberRole role = MemberRole::kRolloutWorker;
  /// How long one call waits for its answer. Default: 30 s.
  std::chrono::milliseconds request_timeout{30'000};
  /// Between two heartbeats ([run] heartbeat_interval_ms). Default: 2 s.
  std::chrono::milliseconds heartbeat_interval{2'000};
  /// CURVE keys when the coordinator is secured (cluster/launch_plan.h client_curve); nullopt:
  /// plain TCP.
  std::optional<CurveClientKeys> curve;
  /// False: a status-only client (`train status`), which sends no heartbeats and so never joins
  /// the run's membership (it asks status() only). Default: true.
  bool heartbeats = true;
};

class CoordinatorClient {
 public:
  /// Creates the socket and io thread and connects (asynchronously: it does not wait for the
  /// coordinator). Fails on bad options ("coordinator.client_options").
  static Expected<std::unique_ptr<CoordinatorClient>> connect(CoordinatorClientOptions options);
  ~CoordinatorClient();
  CoordinatorClient(const CoordinatorClient&) = delete;
  CoordinatorClient& operator=(const CoordinatorClient&) = delete;

  /// Asks for an episode to run (WorkRequest{member}).
  Expected<WorkReply> request_work();
  /// Ends every request_work() waiting now, and every later one, at once with
  /// "coordinator.work_cancelled" (a worker that is stopping asks for no more work; its
  /// submissions and status calls go on). A request that already went out may still be carried
  /// out by the coordinator; its episode is then lost with this worker and rerun.
  void cancel_work_requests();
  /// What this member's heartbeats say from now on of its own degradation (a node agent: the
  /// processes it gave up); empty: healthy. Safe from any thread.
  void set_degraded(std::string why);
  /// Submits a finished episode; the reply says whether it is durably stored.
  Expected<SubmitReply> submit(TrajectorySubmission submission);
  /// The coordinator's counters.
  Expected<CoordinatorStatus> status();

  class Impl;

 private:
  explicit CoordinatorClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// What the learner process does with the coordinator's requests.
class LearnerHandler {
 public:
  virtual ~LearnerHandler() = default;
  virtual Expected<StepDone> train(const TrainStep& step) = 0;
  virtual Expected<CheckpointDone> checkpoint(const CheckpointRequest& request) = 0;
};

/// Attaches as the run's learner (options.member is the learner's id) and answers train and
/// checkpoint requests with `handler` until `stop` is set (checked at least every 100 ms and
/// after each request); an error the handler returns (or an exception it throws) is sent back as
/// CoordinatorFailure, and the coordinator offers the batch again. Heartbeats continue while a
/// handler runs; after the coordinator restarts the next keep-alive attaches again. Errors: bad
/// options only.
Status serve_learner(const CoordinatorClientOptions& options, LearnerHandler& handler,
                     const std::atomic<bool>& stop);

}  // namespace cuda_agent
