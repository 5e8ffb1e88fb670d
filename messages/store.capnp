# Values of the run store (storage/run_store.h). Every value in the store is one of the structs
# below, Cap'n Proto packed, behind a 12-byte prefix: magic "CARS", the store format version
# (UInt16, big-endian), the record kind (UInt8, the ordinal of RecordKind), flags (UInt8, 0) and
# the unpacked size of the message in 8-byte words (UInt32, big-endian). docs/formats/store.md has
# the key layout and the column family of each struct.
#
# Add-only once released: new fields get new ordinals at the end; nothing is renamed, renumbered
# or removed. A change that readers must know about raises storeFormatVersion.
@0xb894c89bae13dba8;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire::store");

# The version written into every value's prefix. A reader refuses values with a larger one.
const storeFormatVersion :UInt16 = 1;

# Which struct a value holds; its ordinal is the prefix's kind byte.
enum RecordKind {
  unknown @0;         # never written
  storeHeader @1;     # StoreHeader
  task @2;            # Task
  baseline @3;        # Baseline
  artifact @4;        # Artifact
  evaluation @5;      # Evaluation
  episode @6;         # Episode
  episodeSummary @7;  # EpisodeSummary (the values of the episode indexes)
  run @8;             # Run
  checkpoint @9;      # Checkpoint
  metric @10;         # Metric
  episodeAttempt @11; # EpisodeAttempt
}

# Key "store_header" of the default column family: marks a directory as a cuda-agent run store.
struct StoreHeader {
  magic @0 :Text;             # "cuda-agent run store"
  formatVersion @1 :UInt16;   # storeFormatVersion of the build that created the store
  createdUnixMs @2 :Int64;    # when the store was created, ms since the Unix epoch (UTC)
  createdBy @3 :Text;         # "cuda-agent <version> (<commit>)" of the creating build
}

# How an episode ended.
enum EpisodeStatus {
  completed @0;  # the agent called finish (or ran out of work) and the final evaluation ran
  aborted @1;    # stopped from outside (run stopped, worker lost) before it ended
  truncated @2;  # hit a budget (turns, context tokens, wall time)
  failed @3;     # an infrastructure error ended it
}

# The fixed-size facts about one episode: what queries filter and sort on. Stored alone as the
# value of every episode index entry so queries never read trajectories.
struct EpisodeSummary {
  episodeId @0 :Text;          # unique within the store
  runId @1 :Text;              # the run that produced it
  taskId @2 :Text;             # the task it worked on
  stage @3 :UInt8;             # 0 evaluation, 1 single-turn warm-up, 2 agent warm-up, 3 agentic PPO
  policyVersion @4 :UInt64;    # policy version of the episode's first turn
  status @5 :EpisodeStatus;    # how it ended
  finalReward @6 :Float64;     # reward of the final fresh evaluation
  turns @7 :UInt32;            # model turns taken
  invalidToolCalls @8 :UInt32; # tool calls that did not parse or named no tool
  wastedLoops @9 :UInt32;      # repeated identical actions with no progress
  totalTokens @10 :UInt64;     # prompt + sampled tokens of the whole episode
  createdUnixMs @11 :Int64;    # when the episode ended, ms since the Unix epoch (UTC)
  trajectorySize @12 :UInt64;  # size in bytes of the episode's trajectory
}

# Column family "episodes": one episode with its trajectory.
struct Episode {
  summary @0 :EpisodeSummary;  # the summary fields
  trajectory @1 :Data;         # the encoded trajectory message (messages/trajectory.capnp), opaque
}

# Column family "tasks": one task of a task set.
struct Task {
  taskId @0 :Text;          # unique within the store
  suite @1 :Text;           # task set it came from, e.g. "kernelbench/level2"
  contentHash @2 :Text;     # hash of the task's files (lowercase hex)
  body @3 :Data;            # the encoded task (tasks/ format), opaque to the store
  createdUnixMs @4 :Int64;  # when it was stored, ms since the Unix epoch (UTC)
}

# Column family "baselines": eager and torch.compile timings of one task on one device setup.
struct Baseline {
  taskId @0 :Text;          # the task
  device @1 :Text;          # GPU name, e.g. "NVIDIA H200"
  torchVersion @2 :Text;    # torch version that ran the baselines
  precision @3 :Text;       # precision flags, e.g. "tf32=off"
  eagerMs @4 :Float64;      # median time of eager Model, ms
  compileMs @5 :Float64;    # median time of torch.compile(Model), ms
  recordedUnixMs @6 :Int64; # when measured, ms since the Unix epoch (UTC)
}

# Column family "artifacts": one compile output, content-addressed by its hash.
struct Artifact {
  hash @0 :Text;            # content hash (lowercase hex); also the key
  taskId @1 :Text;          # task it was built for (informational)
  kind @2 :Text;            # e.g. "shared_object"
  bytes @3 :Data;           # the artifact itself
  buildLog @4 :Text;        # compiler output
  createdUnixMs @5 :Int64;  # when it was stored, ms since the Unix epoch (UTC)
}

# Column family "evaluations": one bench outcome with its audit record.
struct Evaluation {
  evaluationId @0 :Text;        # unique within the store
  runId @1 :Text;               # run that asked for it
  taskId @2 :Text;              # task evaluated
  episodeId @3 :Text;           # episode whose solution it was; empty for a stand-alone bench
  artifactHash @4 :Text;        # artifact evaluated
  reward @5 :Float64;           # reward given
  verified @6 :Bool;            # passed every correctness check
  speedupVsEager @7 :Float64;   # eager median / candidate median
  speedupVsCompile @8 :Float64; # torch.compile median / candidate median
  audit @9 :Data;               # the encoded audit record (bench schema), opaque to the store
  createdUnixMs @10 :Int64;     # when it was stored, ms since the Unix epoch (UTC)
}

# Column family "runs": metadata of one run.
struct Run {
  runId @0 :Text;           # the run
  createdUnixMs @1 :Int64;  # when it started, ms since the Unix epoch (UTC)
  updatedUnixMs @2 :Int64;  # last update of this record
  state @3 :Text;           # e.g. "running", "finished", "failed"
  stage @4 :UInt8;          # current stage (same numbering as EpisodeSummary.stage)
  policyVersion @5 :UInt64; # latest published policy version
  manifest @6 :Text;        # the run's manifest (TOML text)
  coordinatorState @7 :CoordinatorState;  # the coordinator's state after its latest step (unset
                                          # before the first; coordinator/coordinator_state.h)
}

# Column family "checkpoints": one checkpoint of a run.
struct Checkpoint {
  runId @0 :Text;           # the run
  step @1 :UInt64;          # learner step; also in the key
  policyVersion @2 :UInt64; # policy version it holds
  stage @3 :UInt8;          # stage it was taken in
  path @4 :Text;            # where the checkpoint files are
  sizeBytes @5 :UInt64;     # total size of its files
  checksum @6 :Text;        # checksum of its files (lowercase hex)
  createdUnixMs @7 :Int64;  # when it was written, ms since the Unix epoch (UTC)
  coordinatorState @8 :CoordinatorState;  # the coordinator's state at this checkpoint, written in
                                          # the same record (unset when no coordinator wrote it)
}

# Column family "metrics": one scalar of a run at one step; dropped after metrics_ttl_days.
struct Metric {
  runId @0 :Text;           # the run
  name @1 :Text;            # e.g. "reward/mean"
  step @2 :UInt64;          # learner step; also in the key
  value @3 :Float64;        # the value
  unixMs @4 :Int64;         # when recorded, ms since the Unix epoch (UTC); the TTL is counted from it
}

# Where one attempt at an episode stands. An attempt is written `running` before its episode
# starts, and `committed` in the same atomic write as the episode record; recovery marks the
# `running` attempts of a lost worker `aborted`.
enum AttemptState {
  running @0;    # started, not yet acknowledged: in flight (or its worker was lost)
  committed @1;  # its episode record was written in the same batch
  aborted @2;    # its worker was lost, or was stopped (note "stopped: ...", which does not
                 # count against the episode's attempts), before the episode was acknowledged;
                 # nothing was kept
}

# Column family "attempts": one attempt of a rollout worker at one episode, keyed by run,
# episode and attempt number. Overwritten as the attempt moves on (running -> committed or
# aborted); never rewrites the episode record itself.
struct EpisodeAttempt {
  runId @0 :Text;           # the run
  episodeId @1 :Text;       # the episode attempted
  attempt @2 :UInt32;       # 1 for the first attempt, counting up; also in the key
  taskId @3 :Text;          # the task of the episode
  workerId @4 :Text;        # the rollout worker that ran it
  state @5 :AttemptState;   # where it stands
  startedUnixMs @6 :Int64;  # when the attempt started, ms since the Unix epoch (UTC)
  updatedUnixMs @7 :Int64;  # last change of this record
  note @8 :Text;            # why it was aborted (or empty)
}


# One episode the coordinator dispatched and has not seen trained (CoordinatorState.episodes).
struct LedgerEpisode {
  episodeId @0 :Text;           # the episode
  taskId @1 :Text;              # its task
  seq @2 :UInt64;               # the coordinator's mint number (the episode id is made from it)
  attempt @3 :UInt32;           # the attempt dispatched last (1 for the first)
  workerId @4 :Text;            # the worker of that attempt; empty while queued for a rerun
  dispatchedVersion @5 :UInt64; # policy version at that dispatch
  phase @6 :UInt8;              # 0 queued for a rerun, 1 in flight, 2 acknowledged (awaits a batch)
  stage @7 :UInt8;              # stage of the episode (same numbering as EpisodeSummary.stage)
  ackSeq @8 :UInt64;            # order of acknowledgement (phase 2 only)
}

# The coordinator's state (coordinator/coordinator_state.h): step, stage, version, sampler position,
# staleness counters and the episodes not yet trained. Held by Run (after each step) and by
# Checkpoint (at the checkpoint), each written in one atomic write with what it describes.
struct CoordinatorState {
  step @0 :UInt64;              # learner steps completed in the run
  stageIndex @1 :UInt32;        # position in the run's stage plan
  stageSteps @2 :UInt64;        # steps completed in that stage
  policyVersion @3 :UInt64;     # latest published policy version
  samplerEpoch @4 :UInt64;      # task sampler position: epoch ...
  samplerIndex @5 :UInt64;      # ... and index in that epoch's permutation
  nextEpisodeSeq @6 :UInt64;    # mint number of the next new episode
  accepted @7 :UInt64;          # staleness counters (AReaL): acknowledged and counted
  running @8 :UInt64;           # in flight
  rejected @9 :UInt64;          # dropped (stale, orphaned)
  trained @10 :UInt64;          # episodes trained, in total
  stale @11 :UInt64;            # episodes past the bound when their batch was formed
  orphaned @12 :UInt64;         # episodes of versions off the run's lineage
  nextAckSeq @13 :UInt64;       # order number of the next acknowledgement
  episodes @14 :List(LedgerEpisode);  # in flight, queued for a rerun, or acknowledged
  lastStepEpisodes @15 :List(Text);   # the episodes trained by step `step`
  stepsSinceCheckpoint @16 :List(RecordedStep);  # the batches of the steps after the run's latest
                                # recorded checkpoint, oldest first: a learner restarted from
                                # that checkpoint trains them again before the next step
}

# One learner step as the coordinator sent it: which episodes, from which version.
struct RecordedStep {
  step @0 :UInt64;              # 0 for the run's first step
  stage @1 :UInt8;              # same numbering as EpisodeSummary.stage
  version @2 :UInt64;           # the weights the step started from
  episodes @3 :List(Text);      # episode ids, in the order the learner trained them
}
