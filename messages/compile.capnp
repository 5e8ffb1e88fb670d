# The compile protocol: a rollout worker (or `cuda-agent bench`) asks the compile farm to check and
# build one solution (DESIGN.md section 4); the farm replies with the artifact and what it learned.
# Add-only once released: new fields get new ordinals at the end; nothing is renamed, renumbered or
# removed. Codec: messages/compile_codec.h.
@0xcab091b62c45f57e;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

using Common = import "common.capnp";

# Which libraries a solution may call (manifest [compile] library_policy).
enum LibraryPolicy {
  unknown @0;  # unset, or a policy newer than this build; a compile worker refuses it
  default @1;  # cuBLAS (GEMM) and cuDNN (convolution) allowed, as CUDA Agent did
  pure @2;     # no libraries beyond the CUDA runtime
}

# One file of the agent's workspace.
struct SourceFile {
  path @0 :Text;     # relative to the workspace root: "kernels/scale_relu.cu", "model_new.py"
  content @1 :Text;  # the file's bytes as written by the agent
}

# Request: check and build the solution.
struct CompileRequest {
  schemaId @0 :UInt64;                  # this struct's type id; a frame of another type is rejected
  header @1 :Common.RequestHeader;      # request id, run id, policy version, deadline, format
  files @2 :List(SourceFile);           # the whole workspace except the read-only model.py
  targetArch @3 :Text;                  # nvcc -arch value, e.g. "sm_90" or "sm_90a"
  libraryPolicy @4 :LibraryPolicy;      # which libraries the build may link
  extraFlags @5 :List(Text);            # extra nvcc flags the run allows, one argument each
}

# How a launcher parameter is passed from model_new.py (DESIGN.md section 4).
enum ParamKind {
  unknown @0;   # not classified, or a kind newer than this build
  pointer @1;   # a pointer: takes a CUDA tensor whose dtype matches the pointee
  integer @2;   # an integer scalar: takes a Python int
  floating @3;  # a floating-point scalar: takes a Python float
  stream @4;    # the trailing cudaStream_t, filled in by the harness
}

# One parameter of an extern "C" launcher.
struct LauncherParam {
  name @0 :Text;   # parameter name as written, e.g. "x"; may be empty
  cType @1 :Text;  # C type as written, normalised whitespace, e.g. "const float*"
  kind @2 :ParamKind;  # how model_new.py passes it
}

# One extern "C" launcher the artifact exports, in declaration order.
struct LauncherPrototype {
  name @0 :Text;                   # the exported symbol, e.g. "scale_relu_launch"
  params @1 :List(LauncherParam);  # in order
}

# What ptxas reported for one kernel (-Xptxas -v).
struct KernelResources {
  mangledName @0 :Text;       # entry symbol as ptxas names it
  demangledName @1 :Text;     # c++filt form, e.g. "scale_relu(float const*, float*, long long)"
  registers @2 :UInt32;       # registers per thread
  staticSmemBytes @3 :UInt32; # static shared memory per block (dynamic is not known at build)
  stackBytes @4 :UInt32;      # stack frame per thread
  spillStoreBytes @5 :UInt32; # bytes spilled to local memory by stores
  spillLoadBytes @6 :UInt32;  # bytes reloaded from local memory
}

# Time spent compiling one source file.
struct FileTiming {
  path @0 :Text;        # as in SourceFile.path
  seconds @1 :Float64;  # wall-clock seconds of the compiler process for this file
}

# A successful build.
struct CompileResult {
  artifactHash @0 :Text;                     # lower-case hex content hash of the artifact
  artifactSizeBytes @1 :UInt64;              # size of the built shared object
  prototypes @2 :List(LauncherPrototype);    # extern "C" launchers, in declaration order
  kernels @3 :List(KernelResources);         # one per __global__ function ptxas compiled
  warnings @4 :List(Text);                   # compiler and static-check warnings, one each
  log @5 :Text;                              # compiler output, trimmed to the farm's limit
  fileTimings @6 :List(FileTiming);          # one per compiled file
  totalSeconds @7 :Float64;                  # wall-clock seconds of the whole job, link included
  cacheHit @8 :Bool;                         # true: served from the artifact cache, nothing ran
  artifact @9 :Data;                         # the shared object itself (artifactSizeBytes long)
  toolchain @10 :Text;                       # nvcc and host compiler versions, one line each
  sandboxed @11 :Text;                       # how jobs were confined, e.g. "uid 61000, no network"
}

# Reply to a CompileRequest. A failed build (compile error, static-check violation) is an error:
# category invalidInput or policy, the compiler log in its message.
struct CompileReply {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  requestId @2 :Text;        # the request this answers
  union {
    result @3 :CompileResult;  # the build succeeded
    error @4 :Common.Error;    # it did not; nothing was cached
  }
}
