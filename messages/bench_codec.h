// The bench protocol (messages/bench.capnp) as plain C++ types, and its codec. A client sends a
// BenchRequest to the GPU bench pool; a bench worker answers with a BenchReply that holds either a
// BenchResult or a typed Error. A candidate that fails its checks is a result (reward tier -1); an
// error means the evaluation could not run (missing artifact, GPU fault, deadline).
//
//   std::string frame = encode_bench_request(request);
//   Expected<BenchRequest> back = decode_bench_request(frame);
//
// The audit record also travels alone: the run store keeps encode_audit_record()'s bytes as
// EvaluationRecord::audit (messages/store_codec.h).
//
// Decoding never trusts its input: truncated, garbage, oversized, another message type
// ("wire.wrong_type") or a newer format version ("wire.version") give an Error of category
// invalid_input, never an exception. A BenchMode from a newer peer decodes to kUnknown.
// Texts, lists and data must each hold fewer than 2^29 elements (a Cap'n Proto limit).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

/// What the bench worker is asked to do (DESIGN.md section 5).
enum class BenchMode : std::uint8_t {
  kUnknown = 0,    ///< unset, or a mode newer than this build: a worker refuses it
  kVerify = 1,     ///< correctness checks only
  kBenchmark = 2,  ///< checks, then timing against eager and torch.compile
  kProfile = 3,    ///< checks, then one profiled run
};
/// "verify", "benchmark", "profile" or "unknown".
std::string_view to_string(BenchMode mode);

/// The task a solution is evaluated against.
struct TaskRef {
  std::string task_id;       ///< name in its task set: "level2/19_conv_relu"
  std::string content_hash;  ///< lower-case hex hash of the task's model.py
};

/// A built solution in the artifact store.
struct ArtifactRef {
  std::string hash;  ///< CompileResult::artifact_hash
};

/// Evaluation settings (manifest [bench], gpu_bench/bench_options.h); zero or empty means the
/// worker's configured default.
struct BenchRunOptions {
  std::string tolerance_profile;        ///< "cuda-agent" or "strict"
  std::uint32_t verify_input_sets = 0;  ///< fresh seeded input sets for correctness
  std::uint32_t warmup_trials = 0;      ///< untimed runs of each contender
  std::uint32_t timed_trials = 0;       ///< timed runs of each contender
  std::uint32_t input_sets = 0;         ///< pre-made input sets timed trials rotate through
  double checked_trial_fraction = 0;    ///< fraction of timed trials whose outputs are checked
  bool allow_tf32 = false;              ///< TF32 for matmul and cuDNN, same for all contenders
  bool remeasure_baselines = false;     ///< final evaluation: no cached baseline is used
};

/// The task and the built solution, carried in the request (for workers without store access).
struct BenchPayload {
  std::string task_model_py;                  ///< the task's model.py
  std::string shared_object;                  ///< the built shared object's bytes
  std::vector<LauncherPrototype> prototypes;  ///< its extern "C" launchers
  std::string model_new_py;                   ///< the solution's model_new.py
  std::string toolchain;                      ///< CompileResult::toolchain
};

/// Evaluate one artifact on one task.
struct BenchRequest {
  RequestHeader header;  ///< request id, run id, policy version, deadline
  TaskRef task;          ///< the task to evaluate against
  ArtifactRef artifact;  ///< the built solution
  BenchMode mode = BenchMode::kVerify;
  std::vector<std::uint64_t> seeds;     ///< one per correctness input set; empty: worker draws them
  BenchRunOptions options;              ///< evaluation settings
  std::optional<BenchPayload> payload;  ///< set: evaluate from it; nullopt: look up by ref
};

/// One correctness check and its outcome.
struct BenchCheck {
  std::string name;          ///< "shape", "tolerance[seed=3]", "inputs_unchanged", ...
  bool passed = false;       ///< the check held
  double max_abs_error = 0;  ///< largest |candidate - reference|; 0 if not applicable
  double max_rel_error = 0;  ///< largest relative error; 0 if not applicable
  std::int64_t first_mismatch_index = -1;  ///< flat index of the first bad element; -1 none
  std::string message;                     ///< what failed, or empty
};

/// The reward of an evaluation.
struct BenchReward {
  std::int8_t tier = -1;  ///< -1 failed, +1 correct, +2 faster than eager, +3 than both baselines
  double continuous = 0;  ///< continuous speedup reward (ablations); 0 when not computed
};

/// What a later audit needs to trust or reproduce the numbers.
struct AuditRecord {
  std::string task_hash;                     ///< task content hash as measured by the worker
  std::string artifact_hash;                 ///< artifact that ran
  std::string toolchain;                     ///< nvcc and host compiler versions of the build
  std::string torch_version;                 ///< torch.__version__ of the harness
  std::string driver_version;                ///< NVIDIA driver version
  std::string gpu_name;                      ///< "NVIDIA H200"
  std::uint32_t sm_clock_mhz = 0;            ///< SM clock during the measurement
  std::uint32_t mem_clock_mhz = 0;           ///< memory clock during the measurement
  std::vector<std::string> precision_flags;  ///< "name=value"
  std::vector<std::string> checks_run;       ///< every check that ran, in order
  WorkerId worker_id;                        ///< the bench worker that measured
  std::int64_t measured_unix_ms = 0;         ///< when it finished, ms since the Unix epoch
};

/// A rule of the evaluation protocol the solution broke, or a result flagged for audit.
struct PolicyViolation {
  std::string rule;    ///< stable snake_case: "forbidden_symbol", "implausible_speedup", ...
  std::string detail;  ///< what and where
};

/// The harness's flag (and the passed check of the same name in AuditRecord::checks_run) for a
/// task whose output depends neither on its inputs nor on its weights (docs/formats/harness.md):
/// such an evaluation earns no speed credit (gpu_bench/reward.h).
inline constexpr std::string_view kConstantOutputTask = "constant_output_task";

/// The harness's flag for a solution that is right on the inputs of a task whose output ignores
/// them, but not when one input is moved (scaled or shifted) so that the reference's output
/// changes: a stored answer cannot be ruled out, so it earns no speed credit either.
inline constexpr std::string_view kOutputUnverified = "output_unverified";

/// The outcome of an evaluation that ran.
struct BenchResult {
  std::vector<BenchCheck> checks;           ///< in the order run
  std::vector<double> candidate_trial_us;   ///< per timed trial, microseconds; empty in verify mode
  std::vector<double> eager_trial_us;       ///< eager Model, same trials
  std::vector<double> compile_trial_us;     ///< torch.compile(Model), same trials
  double speedup_vs_eager = 0;              ///< median eager / median candidate; 0 if not timed
  double speedup_vs_compile = 0;            ///< median compile / median candidate; 0 if not timed
  BenchReward reward;                       ///< what this evaluation earns
  AuditRecord audit;                        ///< what an audit needs
  std::vector<PolicyViolation> violations;  ///< rules broken, results flagged; empty if none
  std::string profile_report;               ///< profile mode: the trimmed profiler report
  double harness_seconds = 0;               ///< the harness process, start to end; 0: unknown
  std::map<std::string, double> phases_s;   ///< the harness's time by phase ("trials", ...)
};

/// Answer to a BenchRequest.
struct BenchReply {
  RequestId request_id;  ///< the request this answers
  /// The evaluation, or why it could not run.
  Expected<BenchResult> outcome{BenchResult{}};
};

std::string encode_bench_request(const BenchRequest& request);
Expected<BenchRequest> decode_bench_request(std::string_view bytes,
                                            const DecodeLimits& limits = {});

std::string encode_bench_reply(const BenchReply& reply);
Expected<BenchReply> decode_bench_reply(std::string_view bytes, const DecodeLimits& limits = {});

/// An AuditRecord as a message of its own (the run store's EvaluationRecord::audit).
std::string encode_audit_record(const AuditRecord& record);
Expected<AuditRecord> decode_audit_record(std::string_view bytes, const DecodeLimits& limits = {});

}  // namespace cuda_agent
