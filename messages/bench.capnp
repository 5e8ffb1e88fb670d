# The bench protocol: a client asks a GPU bench worker to verify, time or profile a built solution
# against its task's reference (DESIGN.md section 5); the worker replies with the checks, timings,
# reward and an audit record.
# Add-only once released: new fields get new ordinals at the end; nothing is renamed, renumbered or
# removed. Codec: messages/bench_codec.h.
@0xd7ceae554f1e7ba8;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

using Common = import "common.capnp";
using Compile = import "compile.capnp";

# What the worker is asked to do.
enum BenchMode {
  unknown @0;    # unset, or a mode newer than this build; a worker refuses it
  verify @1;     # correctness checks only
  benchmark @2;  # correctness checks, then timing against eager and torch.compile
  profile @3;    # correctness checks, then one profiled run (ncu)
}

# The task a solution is evaluated against.
struct TaskRef {
  taskId @0 :Text;       # the task's name in its task set, e.g. "level2/19_conv_relu"
  contentHash @1 :Text;  # lower-case hex hash of the task's model.py; a mismatch is an error
}

# A built solution in the artifact store (shared object, launcher prototypes, model_new.py).
struct ArtifactRef {
  hash @0 :Text;  # CompileResult.artifactHash
}

# Evaluation settings (manifest [bench]); zero or empty means the worker's configured default.
struct BenchRunOptions {
  toleranceProfile @0 :Text;          # "cuda-agent" or "strict"
  verifyInputSets @1 :UInt32;         # fresh seeded input sets for correctness
  warmupTrials @2 :UInt32;            # untimed runs of each contender
  timedTrials @3 :UInt32;             # timed runs of each contender
  inputSets @4 :UInt32;               # pre-made input sets timed trials rotate through
  checkedTrialFraction @5 :Float64;   # fraction of timed trials whose outputs are checked
  allowTf32 @6 :Bool;                 # TF32 for matmul and cuDNN, same for all contenders
  remeasureBaselines @7 :Bool;        # final evaluation: time eager and torch.compile afresh
}

# The task and the built solution carried in the request, for a worker that evaluates without
# store access (gpu_bench/bench_pool.h).
struct BenchPayload {
  taskModelPy @0 :Text;                            # the task's model.py; TaskRef.contentHash is its hash
  sharedObject @1 :Data;                           # the built shared object (ArtifactRef.hash)
  prototypes @2 :List(Compile.LauncherPrototype);  # its extern "C" launchers
  modelNewPy @3 :Text;                             # the solution's model_new.py
  toolchain @4 :Text;                              # CompileResult.toolchain, for the audit record
}

# Request: evaluate one artifact on one task.
struct BenchRequest {
  schemaId @0 :UInt64;              # this struct's type id; a frame of another type is rejected
  header @1 :Common.RequestHeader;  # request id, run id, policy version, deadline, format
  task @2 :TaskRef;                 # the task to evaluate against
  artifact @3 :ArtifactRef;         # the built solution
  mode @4 :BenchMode;               # verify, benchmark or profile
  seeds @5 :List(UInt64);           # one per correctness input set; empty: the worker draws them
  options @6 :BenchRunOptions;      # evaluation settings
  payload @7 :BenchPayload;         # the task and solution inline; unset: look them up by ref
}

# One correctness check and its outcome.
struct BenchCheck {
  name @0 :Text;                  # e.g. "shape", "tolerance[seed=3]", "inputs_unchanged"
  passed @1 :Bool;                # the check held
  maxAbsError @2 :Float64;        # largest |candidate - reference|; 0 when not applicable
  maxRelError @3 :Float64;        # largest relative error; 0 when not applicable
  firstMismatchIndex @4 :Int64;   # flat index of the first element out of tolerance; -1 none
  message @5 :Text;               # for people: what failed, or empty
}

# The reward of this evaluation (DESIGN.md section 5).
struct BenchReward {
  tier @0 :Int8;           # -1 failed, +1 correct, +2 faster than eager, +3 than both baselines
  continuous @1 :Float64;  # continuous speedup reward (ablations); 0 when not computed
}

# What a later audit needs to trust or reproduce the numbers.
struct AuditRecord {
  taskHash @0 :Text;              # TaskRef.contentHash as measured by the worker
  artifactHash @1 :Text;          # hash of the artifact that ran
  toolchain @2 :Text;             # nvcc and host compiler versions of the build
  torchVersion @3 :Text;          # torch.__version__ of the harness
  driverVersion @4 :Text;         # NVIDIA driver version
  gpuName @5 :Text;               # e.g. "NVIDIA H200"
  smClockMhz @6 :UInt32;          # SM clock during the measurement
  memClockMhz @7 :UInt32;         # memory clock during the measurement
  precisionFlags @8 :List(Text);  # "name=value", e.g. "torch.backends.cuda.matmul.allow_tf32=False"
  checksRun @9 :List(Text);       # names of every check that ran, in order
  workerId @10 :Text;             # the bench worker that measured
  measuredUnixMs @11 :Int64;      # when the evaluation finished, ms since the Unix epoch (UTC)
}

# A rule of the evaluation protocol the solution broke, or a result flagged for audit.
struct PolicyViolation {
  rule @0 :Text;    # stable snake_case name, e.g. "forbidden_symbol", "implausible_speedup"
  detail @1 :Text;  # for people: what and where
}

# One phase of the harness's time (docs/formats/harness.md "breakdown_s").
struct BenchPhase {
  name @0 :Text;       # "startup", "checks", "compile_baseline_build", "baselines", "trials", ...
  seconds @1 :Float64;
}

# The outcome of an evaluation that ran. A candidate that fails checks is a result (reward tier -1),
# not an error.
struct BenchResult {
  checks @0 :List(BenchCheck);               # every check, in the order run
  candidateTrialsUs @1 :List(Float64);  # per timed trial, microseconds; empty in verify mode
  eagerTrialsUs @2 :List(Float64);      # eager Model, same trials
  compileTrialsUs @3 :List(Float64);    # torch.compile(Model), same trials
  speedupVsEager @4 :Float64;           # median eager / median candidate; 0 when not timed
  speedupVsCompile @5 :Float64;         # median torch.compile / median candidate; 0 when not timed
  reward @6 :BenchReward;               # the reward this evaluation earns
  audit @7 :AuditRecord;                # what an audit needs
  violations @8 :List(PolicyViolation); # rules broken and results flagged; empty if none
  profileReport @9 :Text;               # profile mode: the trimmed profiler report; else empty
  harnessSeconds @10 :Float64;          # the harness process, start to end; 0 when not known
  phases @11 :List(BenchPhase);         # where the harness's time went, by name
}

# Reply to a BenchRequest. An error means the evaluation could not run (missing artifact, GPU
# fault, deadline); it says nothing about the solution.
struct BenchReply {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  requestId @2 :Text;        # the request this answers
  union {
    result @3 :BenchResult;  # the evaluation ran (the candidate may still have failed)
    error @4 :Common.Error;  # it could not run
  }
}

# An AuditRecord on its own, as the run store keeps it (store.capnp, Evaluation.audit).
struct AuditRecordFrame {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  record @2 :AuditRecord;    # the record
}
