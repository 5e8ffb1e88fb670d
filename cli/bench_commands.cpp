// `cuda-agent bench --task FILE --solution DIR`: the whole evaluation path on one machine, the way
// the reward sees it. Builds DIR (DESIGN.md section 4 layout) with an embedded compile farm, runs
// the GPU bench harness on the local GPU (gpu_bench/bench_service.h) and prints the report
// (gpu_bench/bench_report.h).
//
// `cuda-agent serve bench-pool` (the broker) and `cuda-agent serve bench-worker --gpu N` (one per
// GPU, tagged with its model) run the same evaluation for remote clients (gpu_bench/bench_pool.h).
// A bench worker whose key the pool refuses prints "authentication failed for ADDR: ..." and exits
// 3 (not restarted by a supervisor).
//
// Exit codes: 0 the solution is correct (reward tier +1 or better); 1 it failed a check or a
// policy rule, or the evaluation could not run (no GPU, a crash, a timeout); 2 bad input or a
// solution that does not compile.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "actors/endpoint.h"
#include "cli/command.h"
#include "cli/solution_files.h"
#include "cli/stop_signals.h"
#include "cluster/manifest.h"
#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/content_hash.h"
#include "core/log.h"
#include "gpu_bench/bench_pool.h"
#include "gpu_bench/bench_report.h"
#include "gpu_bench/bench_service.h"
#include "gpu_bench/bench_store.h"
#include "gpu_bench/device_probe.h"

namespace cuda_agent::cli {
namespace {
namespace fs = std::filesystem;

struct BenchArgs {
  std::string task;
  std::string solution;
  std::string mode = "benchmark";
  std::string arch;
  std::string policy;
  std::string manifest;
  std::string tolerance;
  std::string harness_dir;
  std::string store;
  std::int64_t gpu = 0;
  std::int64_t trials = 0;
  std::int64_t seeds = 0;
  std::int64_t timeout_ms = 600'000;
  bool json = false;
  bool keep_job = false;
};

BenchMode mode_of(const std::string& m) {
  if (m == "verify") return BenchMode::kVerify;
  if (m == "profile") return BenchMode::kProfile;
  return BenchMode::kBenchmark;
}

/// The task's id for reports: "<parent dir>/<file stem>" ("level1/19_ReLU").
std::string task_id_of(const fs::path& task) {
  std::string parent = task.parent_path().filename().string();
  return (parent.empty() ? "" : parent + "/") + task.stem().string();
}

int fail(const BenchArgs& a, const Error& e) {
  if (a.json) std::printf("%s\n", bench_error_json(e).c_str());
  return report(e);
}

int run_bench(const BenchArgs& a) {
  Manifest manifest;
  if (!a.manifest.empty()) {
    auto m = load_manifest(a.manifest);
    if (!m) return fail(a, m.error());
    manifest = std::move(*m);
  }
  auto model_py = read_text(a.task);
  if (!model_py) return fail(a, model_py.error());
  auto files = read_solution(a.solution);
  if (!files) return fail(a, files.error());
  auto model_new = std::find_if(files->begin(), files->end(),
                                [](const SourceFile& f) { return f.path == "model_new.py"; });
  if (model_new == files->end())
    return fail(a, make_error(ErrorCategory::kInvalidInput, "cli.solution",
                              "'" + a.solution + "' has no model_new.py (DESIGN.md section 4)"));

  // No GPU: say so before spending time on the build.
  DeviceList devices = list_devices();
  if (devices.devices.empty())
    return fail(a, make_error(ErrorCategory::kUnavailable, "bench.no_gpu",
                              "no GPU on this machine (" + devices.no_gpu_reason +
                                  "); `cuda-agent bench` runs the solution on a local GPU. "
                                  "`cuda-agent compile " +
                                  a.solution + "` checks and builds it without one."));
  if (a.gpu < 0 || a.gpu >= static_cast<std::int64_t>(devices.devices.size()))
    return fail(a, make_error(ErrorCategory::kInvalidInput, "bench.no_gpu",
                              "--gpu " + std::to_string(a.gpu) + ": this machine has " +
                                  std::to_string(devices.devices.size()) + " GPU(s)"));

  CompileRequest request;
  request.header.request_id = RequestId{"bench-" + std::to_string(now_unix_ms()) + "-" +
                                        content_hash(a.solution).substr(0, 8)};
  request.header.run_id = RunId{"cli"};
  request.header.deadline_unix_ms = now_unix_ms() + a.timeout_ms;
  request.files = *files;
  request.target_arch = a.arch.empty() ? manifest.compile.target_arch : a.arch;
  const std::string policy = a.policy.empty() ? manifest.compile.library_policy : a.policy;
  auto library_policy = parse_library_policy(policy);
  if (!library_policy) return fail(a, library_policy.error());
  request.library_policy = *library_policy;
  CompileServiceOptions so;
  so.compile = manifest.compile;
  auto farm = EmbeddedCompileFarm::start(so, 1);
  if (!farm) return fail(a, farm.error());
  auto client = CompileClient::connect({.broker_endpoint = (*farm)->client_endpoint()});
  if (!client) return fail(a, client.error());
  Expected<CompileResult> built = (*client)->call(std::move(request));
  if (!built) {
    if (a.json) std::printf("%s\n", bench_error_json(built.error()).c_str());
    std::fprintf(stderr, "cuda-agent bench: the solution did not build\n");
    const int rc = report(built.error());
    return built.error().category == ErrorCategory::kInvalidInput ? 2 : rc;
  }

  BenchServiceOptions bo;
  bo.bench = manifest.bench;
  bo.device = static_cast<int>(a.gpu);
  bo.harness_dir = a.harness_dir;
  bo.keep_jobs = a.keep_job;
  bo.worker_id = WorkerId{"cli"};
  auto service = BenchService::create(bo);
  if (!service) return fail(a, service.error());
  const std::string task_id = task_id_of(a.task);
  BenchJob job{.request = bench_request(mode_of(a.mode), task_id, std::move(*model_py), *built,
                                        model_new->content)};
  BenchRunOptions& o = job.request.options;
  o.tolerance_profile = a.tolerance;
  o.timed_trials = static_cast<std::uint32_t>(std::max<std::int64_t>(0, a.trials));
  o.verify_input_sets = static_cast<std::uint32_t>(std::max<std::int64_t>(0, a.seeds));
  job.request.header.deadline_unix_ms = now_unix_ms() + a.timeout_ms;
  Expected<BenchEvaluation> e = (*service)->evaluate(job);
  if (!e) return fail(a, e.error());
  if (a.keep_job) std::fprintf(stderr, "job directories kept under the bench work root\n");
  BenchReportContext ctx;
  ctx.task_id = task_id;
  ctx.mode = a.mode;
  ctx.kernels = built->kernels;
  ctx.faster_threshold = bo.bench.faster_threshold;
  ctx.compile_seconds = built->total_seconds;
  ctx.compile_cache_hit = built->cache_hit;
  std::printf("%s", a.json ? (bench_report_json(*e, ctx) + "\n").c_str()
                           : bench_report_text(*e, ctx).c_str());
  if (!a.store.empty()) {
    StoreOptions so;
    so.dir = a.store;
    auto store = RunStore::open(so, StoreMode::kWrite);
    if (!store) return report(store.error());
    StoreWrite w =
        evaluation_write(*e, {EvaluationId{task_id + "/" + built->artifact_hash.substr(0, 16) +
                                           "/" + std::to_string(e->result.audit.measured_unix_ms)},
                              RunId{"cli"}, TaskId{task_id}, EpisodeId{}});
    w.artifacts.push_back({built->artifact_hash, TaskId{task_id}, "cuda-shared-object",
                           built->artifact, built->log, now_unix_ms()});
    if (Status s = (*store)->write(std::move(w), std::chrono::seconds(30)); !s)
      return report(s.error());
  }
  return e->passed ? 0 : 1;
}

}  // namespace

void add_bench_commands(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Evaluate one solution the way the reward sees it: build it (embedded compile farm), verify "
      "it against the task's reference on the local GPU, time it against eager and torch.compile, "
      "and print the report (DESIGN.md section 5).");
  bench->add_option("--task", args->task, "the task's model.py (KernelBench format)")->required();
  bench->add_option("--solution", args->solution, "the solution directory (kernels/, model_new.py)")
      ->required();
  bench->add_option("--mode", args->mode, "verify, benchmark or profile")
      ->check(CLI::IsMember({"verify", "benchmark", "profile"}))
      ->capture_default_str();
  bench->add_option("--arch", args->arch, "nvcc -arch (default: [compile] target_arch)");
  bench->add_option("--policy", args->policy, "library policy: default or pure")
      ->check(CLI::IsMember({"default", "pure"}));
  bench->add_option("--gpu", args->gpu, "CUDA device index")
      ->capture_default_str()
      ->check(CLI::Range(0, std::numeric_limits<std::int32_t>::max()));
  bench->add_option("--tolerance", args->tolerance, "tolerance profile: cuda-agent or strict")
      ->check(CLI::IsMember({"cuda-agent", "strict"}));
  bench->add_option("--trials", args->trials, "timed trials per contender (default: [bench])")
      ->check(CLI::Range(0, std::numeric_limits<std::int32_t>::max()));
  bench->add_option("--seeds", args->seeds, "correctness input sets (default: [bench])")
      ->check(CLI::Range(0, std::numeric_limits<std::int32_t>::max()));
  bench->add_option("--manifest", args->manifest, "read [compile] and [bench] from this manifest");
  bench->add_option("--harness-dir", args->harness_dir,
                    "directory of harness.py (default: installed, else the source tree)");
  bench->add_option("--timeout-ms", args->timeout_ms, "give up after this long")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<std::int32_t>::max()));
  bench->add_option("--store", args->store,
                    "also keep the evaluation, its audit record, the artifact and the measured "
                    "baselines in this run store");
  bench->add_flag("--keep-job", args->keep_job, "keep the harness job directory (debugging)");
  bench->add_flag("--json", args->json, "print the report as JSON");
  bench->callback([args, &result, &app] {
    if (app.get_option("--log-level")->count() == 0)
      (void)setup_logging(
          {.level = "warn", .format = app.get_option("--log-format")->as<std::string>()});
    result.exit_code = run_bench(*args);
  });

  // `serve` is made by add_compile_commands.
  CLI::App* serve = app.get_subcommand("serve");
  add_broker_command(*serve, BrokerRole::kBenchPool, result);

  struct WorkerArgs {
    std::string connect;
    std::int64_t gpu = 0;
    std::string manifest;
    std::string id;
  };
  auto worker_args = std::make_shared<WorkerArgs>();
  CLI::App* worker = serve->add_subcommand(
      "bench-worker",
      "One GPU bench worker: owns one GPU, joins a bench pool tagged with the GPU's model, and "
      "verifies, times and profiles solutions sent to it.");
  worker
      ->add_option("--connect", worker_args->connect,
                   "the pool's worker endpoint, e.g. tcp://pool:5562")
      ->required()
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kConnect); });
  worker->add_option("--gpu", worker_args->gpu, "CUDA device index this worker owns")
      ->capture_default_str();
  worker->add_option("--manifest", worker_args->manifest, "read [bench] options from it");
  worker->add_option("--id", worker_args->id, "worker id (default: <host>-<pid>-gpu<N>)");
  worker->callback([worker_args, &result] {
    StopSignals signals;
    StopOnRefusal refused;  // outlives the worker below
    BenchServiceOptions bo;
    auto m = load_manifest_or_default(worker_args->manifest);
    auto curve = m ? client_curve(*m) : Expected<std::optional<CurveClientKeys>>(m.error());
    if (!curve) {
      result.exit_code = report(curve.error());
      return;
    }
    if (!worker_args->manifest.empty()) bo.bench = m->bench;
    DeviceList devices = list_devices();
    auto device = std::find_if(devices.devices.begin(), devices.devices.end(),
                               [&](const DeviceInfo& d) { return d.index == worker_args->gpu; });
    if (device == devices.devices.end()) {
      result.exit_code = report(make_error(
          ErrorCategory::kUnavailable, "bench.no_gpu",
          "no GPU " + std::to_string(worker_args->gpu) + " on this machine" +
              (devices.no_gpu_reason.empty() ? "" : " (" + devices.no_gpu_reason + ")")));
      return;
    }
    bo.device = static_cast<int>(worker_args->gpu);
    std::string id = worker_args->id;
    if (id.empty()) {
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      id = std::string(host) + "-" + std::to_string(::getpid()) + "-gpu" +
           std::to_string(worker_args->gpu);
    }
    bo.worker_id = WorkerId{id};
    auto service = BenchService::create(bo);
    if (!service) {
      result.exit_code = report(service.error());
      return;
    }
    PoolWorkerOptions wo;
    wo.broker_endpoint = worker_args->connect;
    wo.worker_id = WorkerId{id};
    wo.tags = bench_worker_tags(*device);
    wo.curve = *curve;
    wo.slots = 1;  // the GPU is owned exclusively
    wo.on_refusal = refused.callback();
    auto w = PoolWorker::start(wo, bench_handler(std::move(*service)));
    if (!w) {
      result.exit_code = report(w.error());
      return;
    }
    std::printf("bench worker %s: GPU %lld (%s), connected to %s\n",
                (*w)->worker_id().value().c_str(), static_cast<long long>(worker_args->gpu),
                device->name.c_str(), wo.broker_endpoint.c_str());
    std::fflush(stdout);
    const int sig = signals.wait();
    const Error refusal = refused.refusal();
    if (refusal.code.empty()) log_info("bench worker stopping", {{"signal", std::to_string(sig)}});
    (*w)->stop();
    if (!refusal.code.empty()) {
      // "authentication failed for ENDPOINT: ...": the same key is refused after a restart too.
      (void)report(refusal);
      result.exit_code = kFinalExitCode;
    }
  });
}

}  // namespace cuda_agent::cli
