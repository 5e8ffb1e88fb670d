// The coordinator's protocol as plain C++ types: what crosses between the coordinator and the
// processes that reach it (rollout workers, the learner, status clients; DESIGN.md sections 2
// and 3). No CAF, no Cap'n Proto: the coordinator (coordinator/coordinator_actor.h,
// coordinator/learner_peer.h) adds its CAF `inspect` overloads and typed-actor protocol on top of
// these types, and messages/coordinator_codec.h puts them on the wire (messages/coordinator.capnp).
//
//   CoordinatorFrame frame{"r-7", RunId{"run-1"}, WorkRequest{WorkerId{"rollout-3"}}};
//   std::string bytes = encode_coordinator_frame(frame);          // coordinator_codec.h
//   Expected<CoordinatorFrame> back = decode_coordinator_frame(bytes);
//   if (back && std::holds_alternative<WorkRequest>(back->body)) ...
//
// Requests and their replies (the reply echoes the request's request_id):
//   WorkRequest          -> WorkReply
//   TrajectorySubmission -> SubmitReply
//   Heartbeat            (no reply)
//   StatusRequest        -> CoordinatorStatus
//   AttachLearner        (no reply; the coordinator then sends TrainStep / CheckpointRequest)
//   TrainStep            -> StepDone          (coordinator -> learner)
//   CheckpointRequest    -> CheckpointDone    (coordinator -> learner)
//   VersionPublished     (coordinator -> subscribers, unsolicited)
//   any request          -> CoordinatorFailure when it could not be answered
//
// Threading: plain values; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/store_codec.h"

namespace cuda_agent {

/// What a member of a run does; sent in its heartbeats.
enum class MemberRole : std::uint8_t {
  kRolloutWorker = 0,
  kLearner = 1,
  kEngine = 2,
  kCompileWorker = 3,
  kBenchWorker = 4,
  kNodeAgent = 5,  ///< cluster/node_agent.h: one node's processes, reported as one member
};

/// What a rollout worker is told to run.
struct Assignment {
  EpisodeId episode_id;
  TaskId task_id;
  std::uint32_t attempt = 1;
  PolicyVersion policy_version;  ///< the version in force at dispatch
  EpisodeStage stage = EpisodeStage::kEvaluation;
};

struct WorkRequest {
  WorkerId worker;
};
struct WorkReply {
  bool assigned = false;
  Assignment assignment;            ///< when assigned
  std::int64_t retry_after_ms = 0;  ///< when not: ask again after this long
  std::string reason;               ///< when not: "staleness bound", "run finished", ...
};

struct TrajectorySubmission {
  WorkerId worker;
  std::uint32_t attempt = 0;  ///< Assignment::attempt
  EpisodeRecord episode;      ///< as the store keeps it (summary + encoded trajectory)
  /// The episode's final evaluation when a bench ran it (at most one; artifact hash and encoded
  /// audit record), and the baselines it measured: stored in the episode's write. Each must name
  /// the episode, its run and its task.
  std::vector<EvaluationRecord> evaluations;
  std::vector<BaselineRecord> baselines;
};
enum class SubmitStatus : std::uint8_t {
  kAcknowledged = 0,  ///< durably stored (now or before: a repeat gets the same answer)
  kSuperseded = 1,    ///< not the attempt in flight: drop it
  kUnknown = 2,       ///< not an episode this run dispatched (or not matching it): drop it
  kStoreFailed = 3,   ///< not stored: keep it and submit again
};
struct SubmitReply {
  EpisodeId episode_id;
  SubmitStatus status = SubmitStatus::kAcknowledged;
  std::string message;
};

struct Heartbeat {
  WorkerId member;
  MemberRole role = MemberRole::kRolloutWorker;
  /// Why the member works below its plan (a node agent: the processes it gave up); empty: healthy.
  std::string degraded;
};

/// Sent to subscribers once a version is durable.
struct VersionPublished {
  PolicyVersion version;
  std::uint64_t step = 0;
  EpisodeStage stage = EpisodeStage::kEvaluation;
};

struct CoordinatorStatus {
  std::uint64_t step = 0;
  PolicyVersion version;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  bool finished = false;
  std::uint64_t trained = 0, stale = 0, orphaned = 0;
  std::uint64_t waiting = 0, in_flight = 0, queued = 0;
  std::uint64_t accepted = 0, running = 0, rejected = 0;
  std::uint64_t members = 0;
  std::uint64_t checkpoints = 0;
  /// Episodes stored aborted (no reward: the policy server or a tool failed) since this
  /// coordinator started; counted in `stale`, never trained.
  std::uint64_t aborted = 0;
  /// Why the run cannot go on (e.g. every recent episode aborted); empty while it can.
  std::string failure;
  /// "<member> (<role>): <why>" for each live member whose heartbeats report it degraded.
  std::vector<std::string> degraded;
};

/// One learner step: train on these episodes, starting from `version`.
struct TrainStep {
  std::uint64_t step = 0;                          ///< 0 for the run's first step
  EpisodeStage stage = EpisodeStage::kEvaluation;  ///< decides the loss (PPO, RFT + value, ...)
  PolicyVersion version;                           ///< the weights the step starts from
  std::vector<EpisodeId> episodes;                 ///< batch_episodes of them, in training order
  /// The steps since the run's latest recorded checkpoint, before this one, oldest first: a
  /// learner that holds older weights (restarted from that checkpoint, or one step ahead of a
  /// restarted coordinator) trains them again, on the same episodes, before this one.
  std::vector<RecordedStep> replay;
};

/// A finished step.
struct StepDone {
  std::uint64_t step = 0;
  PolicyVersion new_version;              ///< the weights the step produced
  std::map<std::string, double> metrics;  ///< e.g. "loss/policy" -> 0.12; stored per step
};

struct CheckpointRequest {
  std::uint64_t step = 0;  ///< steps completed: the checkpoint's key in the store
  PolicyVersion version;   ///< the version the learner must hold
};

struct CheckpointDone {
  std::uint64_t step = 0;
  std::string path;  ///< written atomically (write, fsync, rename)
  std::uint64_t size_bytes = 0;
  std::string checksum;  ///< of its files, lowercase hex
};

/// A learner process offers itself as the run's learner.
struct AttachLearner {
  WorkerId learner;
};

/// Asks for the coordinator's CoordinatorStatus.
struct StatusRequest {};

/// The reply when a request could not be answered (e.g. a step failed).
struct CoordinatorFailure {
  Error error;
};

using CoordinatorBody =
    std::variant<WorkRequest, WorkReply, TrajectorySubmission, SubmitReply, Heartbeat,
                 StatusRequest, CoordinatorStatus, AttachLearner, TrainStep, StepDone,
                 CheckpointRequest, CheckpointDone, VersionPublished, CoordinatorFailure>;

/// One message on the coordinator's socket. request_id pairs a reply with its request (the reply
/// echoes it); run_id names the run (the gateway refuses another run's frame).
struct CoordinatorFrame {
  std::string request_id;
  RunId run_id;
  CoordinatorBody body;
};

}  // namespace cuda_agent
