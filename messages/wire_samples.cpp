#include "messages/wire_samples.h"

#include <cstring>
#include <random>

namespace cuda_agent::wire_samples {
namespace {

template <class T, class Decode>
Decoder decoder(std::string name, Decode decode) {
  return Decoder{std::move(name), [decode](std::string_view bytes) -> Status {
                   Expected<T> r = decode(bytes, DecodeLimits{});
                   if (r) return Status::ok();
                   return r.error();
                 }};
}

std::uint64_t read_u64(const std::string& s, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, s.data() + at, sizeof v);  // the wire is little-endian, as is x86-64
  return v;
}

// Start of the struct a near struct pointer at byte `at` points to.
std::size_t follow_struct_pointer(const std::string& s, std::size_t at) {
  const std::int32_t offset_words = static_cast<std::int32_t>(read_u64(s, at) & 0xffffffffu) >> 2;
  return at + 8 + static_cast<std::size_t>(static_cast<std::int64_t>(offset_words) * 8);
}

}  // namespace

RequestHeader header(std::string request_id) {
  RequestHeader h;
  h.request_id = RequestId{std::move(request_id)};
  h.run_id = RunId{"run-2026-12-02-ppo"};
  h.policy_version = PolicyVersion{42};
  h.deadline_unix_ms = 1'796'000'000'000;
  return h;
}

CompileRequest compile_request() {
  CompileRequest r;
  r.header = header("compile-7f3a");
  r.files = {{"kernels/scale_relu.cu",
              "#include <cuda_runtime.h>\n__global__ void scale_relu(const float* x, float* y, "
              "long long n) {\n  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
              "  if (i < n) y[i] = fmaxf(2.f * x[i], 0.f);\n}\nextern \"C\" void "
              "scale_relu_launch(const float* x, float* y, long long n, cudaStream_t s) {\n"
              "  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);\n}\n"},
             {"model_new.py",
              "import torch, torch.nn as nn\nimport kernels\nclass ModelNew(nn.Module):\n"
              "    def forward(self, x):\n        y = torch.empty_like(x)\n"
              "        kernels.scale_relu_launch(x, y, x.numel())\n        return y\n"}};
  r.target_arch = "sm_90";
  r.library_policy = LibraryPolicy::kPure;
  r.extra_flags = {"-O3", "--use_fast_math"};
  return r;
}

CompileResult compile_result() {
  CompileResult r;
  r.artifact_hash = "9f2c4e0a5b1d7c3e9f2c4e0a5b1d7c3e9f2c4e0a5b1d7c3e9f2c4e0a5b1d7c3e";
  r.artifact_size_bytes = 912'384;
  r.prototypes = {{"scale_relu_launch",
                   {{"x", "const float*", ParamKind::kPointer},
                    {"y", "float*", ParamKind::kPointer},
                    {"n", "long long", ParamKind::kInteger},
                    {"s", "cudaStream_t", ParamKind::kStream}}},
                  {"set_alpha", {{"alpha", "float", ParamKind::kFloating}}}};
  r.kernels = {
      {"_Z10scale_reluPKfPfx", "scale_relu(float const*, float*, long long)", 10, 0, 0, 0, 0},
      {"_Z4gemmPK6__halfS1_PS_iii",
       "gemm(__half const*, __half const*, __half*, int, "
       "int, int)",
       168, 49'152, 16, 8, 8}};
  r.warnings = {"kernels/scale_relu.cu(3): warning #177-D: variable \"unused\" was declared"};
  r.log = "ptxas info    : Compiling entry function '_Z10scale_reluPKfPfx' for 'sm_90'\n";
  r.file_timings = {{"kernels/scale_relu.cu", 1.92}, {"kernels/gemm.cu", 3.5}};
  r.total_seconds = 6.03;
  r.cache_hit = false;
  return r;
}

AuditRecord audit_record() {
  AuditRecord a;
  a.task_hash = "5e884898da28047151d0e56f8dc62927";
  a.artifact_hash = "9f2c4e0a5b1d7c3e";
  a.toolchain = "nvcc 13.0.48; g++ 13.3.0";
  a.torch_version = "2.11.0+cu130";
  a.driver_version = "580.95.05";
  a.gpu_name = "NVIDIA H200";
  a.sm_clock_mhz = 1980;
  a.mem_clock_mhz = 3201;
  a.precision_flags = {"torch.backends.cuda.matmul.allow_tf32=False",
                       "torch.backends.cudnn.allow_tf32=False"};
  a.checks_run = {"shape", "dtype", "tolerance[seed=0]", "inputs_unchanged", "recheck"};
  a.worker_id = WorkerId{"bench-worker-gpu6"};
  a.measured_unix_ms = 1'796'000'123'456;
  return a;
}

BenchRequest bench_request() {
  BenchRequest r;
  r.header = header("bench-91c0");
  r.task = {"level1/19_ReLU", "5e884898da28047151d0e56f8dc62927"};
  r.artifact = {"9f2c4e0a5b1d7c3e"};
  r.mode = BenchMode::kBenchmark;
  r.seeds = {11, 12, 13, 14, 15};
  r.options.tolerance_profile = "strict";
  r.options.verify_input_sets = 5;
  r.options.warmup_trials = 10;
  r.options.timed_trials = 100;
  r.options.input_sets = 8;
  r.options.remeasure_baselines = true;
  r.options.checked_trial_fraction = 0.1;
  r.options.allow_tf32 = true;
  return r;
}

BenchResult bench_result() {
  BenchResult r;
  r.checks = {{"shape", true, 0, 0, -1, ""},
              {"tolerance[seed=11]", true, 3.1e-6, 2.0e-5, -1, ""},
              {"tolerance[seed=12]", false, 0.5, 1.0, 1'048'577, "element 1048577: 0.5 vs 0"}};
  for (int i = 0; i < 100; ++i) {
    r.candidate_trial_us.push_back(55.0 + 0.01 * i);
    r.eager_trial_us.push_back(72.0 + 0.02 * i);
    r.compile_trial_us.push_back(57.0 + 0.015 * i);
  }
  r.speedup_vs_eager = 1.309;
  r.speedup_vs_compile = 1.036;
  r.reward = {-1, 0.27};
  r.audit = audit_record();
  r.violations = {{"implausible_speedup", "61x over eager exceeds the configured 50x"}};
  r.profile_report = "";
  r.harness_seconds = 1.53;
  r.phases_s = {{"startup", 0.01}, {"checks", 0.4}, {"trials", 0.77}};
  return r;
}

Episode episode(int turns, int tokens, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Episode e;
  e.episode_id = EpisodeId{"ep-000123"};
  e.run_id = RunId{"run-2026-12-02-ppo"};
  e.task_id = TaskId{"kernelbench/level2/19"};
  e.stage = EpisodeStage::kAgenticPpo;
  e.status = EpisodeStatus::kTruncated;
  e.final_reward = 2.0;
  e.ended_unix_ms = 1'796'000'999'000;
  std::uint64_t total = 0;
  for (int t = 0; t < turns; ++t) {
    Turn turn;
    turn.role = t == 0   ? TurnRole::kSystem
                : t == 1 ? TurnRole::kUser
                         : (t % 2 == 0 ? TurnRole::kAssistant : TurnRole::kTool);
    const int n = tokens / turns + (t < tokens % turns ? 1 : 0);
    const bool sampled = turn.role == TurnRole::kAssistant;
    for (int i = 0; i < n; ++i) {
      turn.token_ids.push_back(static_cast<std::uint32_t>(rng() % 151'936));
      turn.loss_mask.push_back(sampled ? 1 : 0);
      if (sampled) turn.logprobs.push_back(-static_cast<float>(rng() % 10'000) / 1000.f);
    }
    if (sampled) {
      turn.tool_calls = {{"call-" + std::to_string(t), "compile", "{\"arch\": \"sm_90\"}"},
                         {"call-" + std::to_string(t) + "b", "write_file", "{\"path\": oops"}};
    } else if (turn.role == TurnRole::kTool) {
      turn.tool_results = {{"call-" + std::to_string(t - 1), "compiled in 1.9 s", false},
                           {"call-" + std::to_string(t - 1) + "b", "invalid JSON", true}};
    }
    turn.policy_version = PolicyVersion{40 + static_cast<std::uint64_t>(t) / 2};
    turn.wall_ms = 1500 + t;
    total += turn.token_ids.size();
    e.turns.push_back(std::move(turn));
  }
  e.counters = {static_cast<std::uint32_t>(turns / 2), 1, total, 0};
  return e;
}

WeightManifest weight_manifest() {
  WeightManifest m;
  m.run_id = RunId{"run-2026-12-02-ppo"};
  m.version = PolicyVersion{43};
  m.base_version = PolicyVersion{42};
  m.full_snapshot = false;
  m.buckets = {
      {0,
       {{"model.embed_tokens.weight", TensorDType::kBFloat16, {151'936, 1024}, 0, 311'164'928},
        {"model.norm.weight", TensorDType::kFloat32, {1024}, 311'164'928, 4096}},
       311'169'024,
       0x9ae16a3b2f90404fULL,
       "xxh64"},
      {1,
       {{"lm_head.scale", TensorDType::kFloat32, {}, 0, 4},
        {"model.layers.0.mlp.step", TensorDType::kInt64, {1}, 8, 8}},
       16,
       0xc949d7c7509e6557ULL,
       "xxh64"}};
  m.total_bytes = 311'169'040;
  return m;
}

WeightBucket weight_bucket(std::size_t size_bytes) {
  WeightBucket b;
  b.version = PolicyVersion{43};
  b.index = 1;
  b.data.resize(size_bytes);
  for (std::size_t i = 0; i < size_bytes; ++i) b.data[i] = static_cast<char>(i * 31 + 7);
  return b;
}

VersionAnnouncement version_announcement() {
  VersionAnnouncement a;
  a.run_id = RunId{"run-2026-12-02-ppo"};
  a.version = PolicyVersion{43};
  a.base_version = PolicyVersion{42};
  a.total_bytes = 311'169'040;
  a.bucket_count = 2;
  a.published_unix_ms = 1'796'000'500'000;
  return a;
}

ClusterRegister cluster_register() {
  ClusterRegister r;
  r.header = header("register-bench-worker-gpu6");
  r.process = {WorkerId{"bench-worker-gpu6"},
               ProcessRole::kBenchWorker,
               "gpu-node-03",
               41'807,
               {"gpu:NVIDIA H200", "arch:sm_90"},
               "NVIDIA H200"};
  return r;
}

ClusterHeartbeat cluster_heartbeat() { return {WorkerId{"rollout-gpu2"}, 1'204, 48, 0.93}; }

ClusterMembership cluster_membership() {
  ClusterMembership m;
  m.run_id = RunId{"run-2026-12-02-ppo"};
  m.epoch = 17;
  m.members = {
      {cluster_register().process, MemberState::kAlive},
      {{WorkerId{"compile-worker-1"}, ProcessRole::kCompileWorker, "cpu-node-01", 2'211, {}, ""},
       MemberState::kSuspect},
      {{WorkerId{"learner-rank0-gpu0"},
        ProcessRole::kLearner,
        "gpu-node-01",
        901,
        {"rank:0"},
        "NVIDIA H200"},
       MemberState::kDraining}};
  return m;
}

ClusterCommand cluster_command() {
  ClusterCommand c;
  c.header = header("cmd-checkpoint-17");
  c.kind = CommandKind::kCheckpoint;
  c.target = WorkerId{"learner-rank0-gpu0"};
  c.arguments = {{"path", "/ckpt/run/step-1200"}, {"reason", "schedule"}};
  return c;
}

std::vector<CoordinatorFrame> coordinator_frames() {
  const RunId run{"run-2026-12-02-ppo"};
  const auto frame = [&](std::string request_id, CoordinatorBody body) {
    return CoordinatorFrame{std::move(request_id), run, std::move(body)};
  };
  EpisodeRecord record;
  record.episode_id = EpisodeId{"run-2026-12-02-ppo/ep00000417"};
  record.run_id = run;
  record.task_id = TaskId{"kernelbench/level2/19"};
  record.stage = EpisodeStage::kAgenticPpo;
  record.policy_version = PolicyVersion{41};
  record.status = EpisodeStatus::kTruncated;
  record.final_reward = 1.75;
  record.turns = 9;
  record.invalid_tool_calls = 2;
  record.wasted_loops = 1;
  record.total_tokens = 18'432;
  record.created_unix_ms = 1'796'000'000'123;
  record.trajectory_bytes = encode_episode(episode(4, 40));
  record.trajectory_size = record.trajectory_bytes.size();  // the store's encoder sets it so
  TrajectorySubmission submission{WorkerId{"rollout-gpu2"}, 3, record};
  EvaluationRecord evaluation;
  evaluation.evaluation_id = EvaluationId{record.episode_id.value()};
  evaluation.run_id = run;
  evaluation.task_id = record.task_id;
  evaluation.episode_id = record.episode_id;
  evaluation.artifact_hash = "3f0c9a";
  evaluation.reward = 1.75;
  evaluation.verified = true;
  evaluation.speedup_vs_eager = 2.4;
  evaluation.speedup_vs_compile = 1.3;
  evaluation.audit = "audit-bytes";
  evaluation.created_unix_ms = 1'796'000'000'456;
  submission.evaluations.push_back(evaluation);
  BaselineRecord baseline;
  baseline.task_id = TaskId{"task-hash"};
  baseline.device = "NVIDIA H200";
  baseline.torch_version = "2.11.0";
  baseline.precision = "tf32=off";
  baseline.eager_ms = 0.81;
  baseline.compile_ms = 0.52;
  baseline.recorded_unix_ms = 1'796'000'000'457;
  submission.baselines.push_back(baseline);
  CoordinatorStatus status;
  status.step = 120;
  status.version = PolicyVersion{121};
  status.stage = EpisodeStage::kAgentWarmup;
  status.finished = true;
  status.trained = 7'680;
  status.stale = 33;
  status.orphaned = 5;
  status.waiting = 12;
  status.in_flight = 48;
  status.queued = 3;
  status.accepted = 7'800;
  status.running = 48;
  status.rejected = 911;
  status.members = 9;
  status.checkpoints = 6;
  status.degraded = {
      "node-agent/node-b (node_agent): gave up compile-worker-3 (exit 1, 5 restarts "
      "in 10 min)"};
  return {
      frame("w-1", WorkRequest{WorkerId{"rollout-gpu2"}}),
      frame("w-2", WorkReply{true,
                             Assignment{EpisodeId{"run-2026-12-02-ppo/ep00000417"},
                                        TaskId{"kernelbench/level2/19"}, 3, PolicyVersion{41},
                                        EpisodeStage::kAgenticPpo},
                             2'500, "staleness bound"}),
      frame("s-1", submission),
      frame("s-2", SubmitReply{EpisodeId{"run-2026-12-02-ppo/ep00000417"},
                               SubmitStatus::kStoreFailed, "store write failed: disk full"}),
      frame("h-1", Heartbeat{WorkerId{"learner-rank0-gpu0"}, MemberRole::kBenchWorker}),
      frame("h-2", Heartbeat{WorkerId{"node-agent/node-b"}, MemberRole::kNodeAgent,
                             "gave up compile-worker-3"}),
      frame("q-1", StatusRequest{}),
      frame("q-2", status),
      frame("l-1", AttachLearner{WorkerId{"learner-rank0-gpu0"}}),
      frame("t-1", TrainStep{120,
                             EpisodeStage::kAgenticPpo,
                             PolicyVersion{121},
                             {EpisodeId{"run-2026-12-02-ppo/ep00000400"},
                              EpisodeId{"run-2026-12-02-ppo/ep00000417"}},
                             {RecordedStep{119,
                                           EpisodeStage::kAgenticPpo,
                                           PolicyVersion{120},
                                           {EpisodeId{"run-2026-12-02-ppo/ep00000398"}}}}}),
      frame("t-2", StepDone{120,
                            PolicyVersion{122},
                            {{"loss/policy", 0.125}, {"loss/value", -3.5e-3}, {"kl", 1e-300}}}),
      frame("c-1", CheckpointRequest{120, PolicyVersion{122}}),
      frame("c-2", CheckpointDone{120, "/ckpt/run-2026-12-02-ppo/step-120", 15'032'385'536,
                                  "9f86d081884c7d659a2feaa0c55ad015"}),
      frame("v-1", VersionPublished{PolicyVersion{122}, 120, EpisodeStage::kSingleTurnWarmup}),
      frame("t-3", CoordinatorFailure{make_error(ErrorCategory::kUnavailable, "learner.step_failed",
                                                 "rank 3: CUDA out of memory")}),
      // Beyond one of each kind (DefaultBodiesAndExtremeValuesRoundTrip takes the first of each):
      frame("h-2", Heartbeat{WorkerId{"node-agent/node-b"}, MemberRole::kNodeAgent,
                             "gave up compile-worker-3"}),
  };
}

std::vector<Decoder> all_decoders() {
  return {decoder<Error>("Error", decode_error),
          decoder<RequestHeader>("RequestHeader", decode_request_header),
          decoder<CompileRequest>("CompileRequest", decode_compile_request),
          decoder<CompileReply>("CompileReply", decode_compile_reply),
          decoder<BenchRequest>("BenchRequest", decode_bench_request),
          decoder<BenchReply>("BenchReply", decode_bench_reply),
          decoder<AuditRecord>("AuditRecord", decode_audit_record),
          decoder<Episode>("Episode", decode_episode),
          decoder<WeightManifest>("WeightManifest", decode_weight_manifest),
          decoder<WeightBucket>("WeightBucket", decode_weight_bucket),
          decoder<VersionAnnouncement>("VersionAnnouncement", decode_version_announcement),
          decoder<ClusterRegister>("ClusterRegister", decode_cluster_register),
          decoder<ClusterHeartbeat>("ClusterHeartbeat", decode_cluster_heartbeat),
          decoder<ClusterMembership>("ClusterMembership", decode_cluster_membership),
          decoder<ClusterCommand>("ClusterCommand", decode_cluster_command),
          decoder<CoordinatorFrame>("CoordinatorFrame", decode_coordinator_frame)};
}

std::vector<Frame> sample_frames() {
  CompileReply compile_ok{RequestId{"compile-7f3a"}, compile_result()};
  CompileReply compile_failed{RequestId{"compile-7f3b"},
                              make_error(ErrorCategory::kInvalidInput, "compile.failed",
                                         "kernels/x.cu(3): error: identifier \"foo\" undefined")};
  BenchReply bench_ok{RequestId{"bench-91c0"}, bench_result()};
  BenchReply bench_failed{RequestId{"bench-91c1"},
                          make_error(ErrorCategory::kTimeout, "bench.deadline", "late")};
  std::vector<Frame> frames = {
      {"Error", encode_error(make_error(ErrorCategory::kTimeout, "broker.deadline", "late"))},
      {"RequestHeader", encode_request_header(header("r-1"))},
      {"CompileRequest", encode_compile_request(compile_request())},
      {"CompileReply", encode_compile_reply(compile_ok)},
      {"CompileReply", encode_compile_reply(compile_failed)},
      {"BenchRequest", encode_bench_request(bench_request())},
      {"BenchReply", encode_bench_reply(bench_ok)},
      {"BenchReply", encode_bench_reply(bench_failed)},
      {"AuditRecord", encode_audit_record(audit_record())},
      {"Episode", encode_episode(episode(4, 40))},
      {"WeightManifest", encode_weight_manifest(weight_manifest())},
      {"WeightBucket", encode_weight_bucket(weight_bucket(64))},
      {"VersionAnnouncement", encode_version_announcement(version_announcement())},
      {"ClusterRegister", encode_cluster_register(cluster_register())},
      {"ClusterHeartbeat", encode_cluster_heartbeat(cluster_heartbeat())},
      {"ClusterMembership", encode_cluster_membership(cluster_membership())},
      {"ClusterCommand", encode_cluster_command(cluster_command())}};
  for (const CoordinatorFrame& f : coordinator_frames()) {
    frames.push_back({"CoordinatorFrame", encode_coordinator_frame(f)});
  }
  return frames;
}

namespace {

// Byte offset of the root struct's pointer 0 (a request's header pointer).
std::size_t root_pointer0_offset(const std::string& frame) {
  const std::uint32_t segments = static_cast<std::uint32_t>(read_u64(frame, 0)) + 1;
  const std::size_t segment0 = (4 + 4 * segments + 7) / 8 * 8;
  const std::size_t data_words = (read_u64(frame, segment0) >> 32) & 0xffff;
  return follow_struct_pointer(frame, segment0) + data_words * 8;
}

}  // namespace

std::size_t format_version_offset(const std::string& frame, bool request) {
  if (request) return follow_struct_pointer(frame, root_pointer0_offset(frame));
  const std::uint32_t segments = static_cast<std::uint32_t>(read_u64(frame, 0)) + 1;
  const std::size_t segment0 = (4 + 4 * segments + 7) / 8 * 8;
  return follow_struct_pointer(frame, segment0) + 8;  // data word 1: schemaId is word 0
}

std::string without_request_header(std::string frame) {
  const std::size_t at = root_pointer0_offset(frame);
  for (std::size_t i = 0; i < 8; ++i) frame[at + i] = 0;
  return frame;
}

std::string with_format_version(std::string frame, bool request, std::uint16_t version) {
  const std::size_t at = format_version_offset(frame, request);
  frame[at] = static_cast<char>(version & 0xff);
  frame[at + 1] = static_cast<char>(version >> 8);
  return frame;
}

}  // namespace cuda_agent::wire_samples
