# The coordinator's protocol: rollout workers, the learner and status clients reach the run's
# coordinator through their process's gateway over ZeroMQ (DESIGN.md sections 2 and 3). One
# CoordinatorFrame per message; a reply echoes its request's requestId.
# Add-only once released: new fields and new union members get new ordinals at the end; nothing is
# renamed, renumbered or removed. A new enumerant needs formatVersion raised: a reader refuses an
# enumerant it does not know (it could not act on it). Codec: messages/coordinator_codec.h; the
# plain C++ types: messages/coordinator_protocol.h.
@0x850ea7f2c47172b7;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

using Common = import "common.capnp";

# Stages are numbers, as in the run store (store.capnp EpisodeSummary.stage): 0 evaluation,
# 1 single-turn warm-up, 2 agent warm-up, 3 agentic PPO; a number this build does not name is
# carried through unchanged.

# What a member of the run does (coordinator/membership.h).
enum MemberRole {
  rolloutWorker @0;  # runs episodes
  learner @1;        # trains steps, writes checkpoints
  engine @2;         # a policy engine serving rollout workers
  compileWorker @3;  # a compile farm worker
  benchWorker @4;    # a GPU bench worker
  nodeAgent @5;      # a node agent: keeps one node's processes running (cluster/node_agent.h)
}

# What became of a submitted trajectory.
enum SubmitStatus {
  acknowledged @0;  # durably stored (now or before: a repeat gets the same answer)
  superseded @1;    # not the attempt in flight: drop it
  unknown @2;       # not an episode this run dispatched (or not matching it): drop it
  storeFailed @3;   # not stored: keep it and submit again
}

# Worker -> coordinator: give me an episode to run. Answered by WorkReply.
struct WorkRequest {
  worker @0 :Text;  # the asking worker's id, unique within the run
}

# What a rollout worker is told to run.
struct Assignment {
  episodeId @0 :Text;        # "<run>/ep<seq>"; a rerun keeps it
  taskId @1 :Text;           # the task to run, e.g. "kernelbench/level2/19"
  attempt @2 :UInt32;        # 1 for the first attempt; a rerun counts up
  policyVersion @3 :UInt64;  # the version in force at dispatch
  stage @4 :UInt8;           # the episode's stage (numbering above)
}

# Coordinator -> worker: an episode, or "none now" with when to ask again.
struct WorkReply {
  assigned @0 :Bool;          # true: assignment is set
  assignment @1 :Assignment;  # when assigned
  retryAfterMs @2 :Int64;     # when not: ask again after this long
  reason @3 :Text;            # when not: "staleness bound", "run finished", ...
}

# Worker -> coordinator: a finished episode. Answered by SubmitReply.
struct TrajectorySubmission {
  worker @0 :Text;     # the submitting worker's id
  attempt @1 :UInt32;  # Assignment.attempt it ran
  episode @2 :Data;    # the run store's encoded EpisodeRecord (messages/store_codec.h), stored as
                       # it came
  evaluations @3 :List(Data);  # encoded EvaluationRecords of the episode's final evaluation (at
                               # most one; with the bench's audit record), stored with the episode
  baselines @4 :List(Data);    # encoded BaselineRecords that evaluation measured
}

# Coordinator -> worker: the answer to a TrajectorySubmission.
struct SubmitReply {
  episodeId @0 :Text;        # the episode submitted
  status @1 :SubmitStatus;   # what became of it
  message @2 :Text;          # for people: why, when not acknowledged
}

# Any member -> coordinator, every heartbeat interval. No reply.
struct Heartbeat {
  member @0 :Text;       # the member's id
  role @1 :MemberRole;   # what it is
  degraded @2 :Text;     # why the member works below its plan (a node agent: the processes it
                         # gave up); empty: healthy
}

# Client -> coordinator: send me a CoordinatorStatus. Empty; a struct so it can grow.
struct StatusRequest {
}

# Coordinator -> client: where the run stands.
struct CoordinatorStatus {
  step @0 :UInt64;           # steps completed
  version @1 :UInt64;        # the published policy version
  stage @2 :UInt8;           # the current stage (numbering above)
  finished @3 :Bool;         # every stage of the plan is done
  trained @4 :UInt64;        # episodes trained, over the run
  stale @5 :UInt64;          # episodes dropped past the staleness bound, over the run
  orphaned @6 :UInt64;       # episodes off the lineage after a rollback, over the run
  waiting @7 :UInt64;        # acknowledged episodes waiting for a batch
  inFlight @8 :UInt64;       # episodes dispatched and not yet acknowledged
  queued @9 :UInt64;         # episodes of lost workers waiting for a rerun
  accepted @10 :UInt64;      # the staleness controller's accepted count
  running @11 :UInt64;       # the staleness controller's running count
  rejected @12 :UInt64;      # work requests refused by the staleness bound
  members @13 :UInt64;       # members the coordinator has heard from and not lost
  checkpoints @14 :UInt64;   # checkpoints written, over the run
  aborted @15 :UInt64;       # episodes stored aborted since this coordinator started
  failure @16 :Text;         # why the run cannot go on; empty while it can
  degraded @17 :List(Text);  # "<member> (<role>): <why>" for each live member reporting itself
                             # degraded
}

# Learner -> coordinator: this process offers itself as the run's learner. No reply; the
# coordinator then sends it TrainStep and CheckpointRequest.
struct AttachLearner {
  learner @0 :Text;  # the learner process's id
}

# Coordinator -> learner: train one step on these episodes. Answered by StepDone.
struct TrainStep {
  step @0 :UInt64;            # 0 for the run's first step
  stage @1 :UInt8;            # decides the loss (numbering above)
  version @2 :UInt64;         # the weights the step starts from
  episodes @3 :List(Text);    # episode ids, oldest first; the learner reads them from the store
  replay @4 :List(TrainStep); # the steps since the run's latest recorded checkpoint, before this
                              # one, oldest first (each with an empty replay): a learner holding
                              # older weights trains them again on the same episodes first
}

# One named figure of a step.
struct Metric {
  name @0 :Text;      # e.g. "loss/policy"
  value @1 :Float64;  # its value at this step
}

# Learner -> coordinator: a finished step.
struct StepDone {
  step @0 :UInt64;            # TrainStep.step
  newVersion @1 :UInt64;      # the weights the step produced
  metrics @2 :List(Metric);   # sorted by name, names unique; stored per step
}

# Coordinator -> learner: write a checkpoint. Answered by CheckpointDone.
struct CheckpointRequest {
  step @0 :UInt64;     # steps completed: the checkpoint's key in the store
  version @1 :UInt64;  # the version the learner must hold
}

# Learner -> coordinator: the checkpoint is written.
struct CheckpointDone {
  step @0 :UInt64;       # CheckpointRequest.step
  path @1 :Text;         # written atomically (write, fsync, rename)
  sizeBytes @2 :UInt64;  # size of its files
  checksum @3 :Text;     # of its files, lowercase hex
}

# Coordinator -> subscribers, once a version is durable. Unsolicited.
struct VersionPublished {
  version @0 :UInt64;  # the new policy version
  step @1 :UInt64;     # the step that produced it
  stage @2 :UInt8;     # that step's stage (numbering above)
}

# One message on the coordinator's socket.
struct CoordinatorFrame {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  requestId @2 :Text;        # pairs a reply with its request (the reply echoes it)
  runId @3 :Text;            # the run; a gateway refuses another run's frame
  body :union {              # exactly one; a member unknown to the reader is refused by name
    workRequest @4 :WorkRequest;                    # worker -> coordinator
    workReply @5 :WorkReply;                        # coordinator -> worker
    trajectorySubmission @6 :TrajectorySubmission;  # worker -> coordinator
    submitReply @7 :SubmitReply;                    # coordinator -> worker
    heartbeat @8 :Heartbeat;                        # any member -> coordinator
    statusRequest @9 :StatusRequest;                # client -> coordinator
    coordinatorStatus @10 :CoordinatorStatus;       # coordinator -> client
    attachLearner @11 :AttachLearner;               # learner -> coordinator
    trainStep @12 :TrainStep;                       # coordinator -> learner
    stepDone @13 :StepDone;                         # learner -> coordinator
    checkpointRequest @14 :CheckpointRequest;       # coordinator -> learner
    checkpointDone @15 :CheckpointDone;             # learner -> coordinator
    versionPublished @16 :VersionPublished;         # coordinator -> subscribers
    coordinatorFailure @17 :Common.Error;           # any reply: the request could not be answered
  }
}
