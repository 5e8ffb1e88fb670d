// `cuda-agent compile DIR`, `cuda-agent serve compile-farm`, `cuda-agent serve compile-worker` and
// `cuda-agent artifacts get`: the compile farm (compile_farm/farm.h) from the command line.
//
// `compile` reads DIR/kernels/* (and DIR/model_new.py when present), sends them through a farm
// (--farm ADDR: a broker's client endpoint, reached with the CURVE keys of --manifest's
// [security] when it names them; default: an embedded farm in this process) and prints the
// report; with --store it also keeps the artifact in the run store, content-addressed. A farm
// that refuses the keys fails at once ("authentication failed for ADDR"), one that is not there
// after the client's reconnect timeout ("broker at ADDR not answering"), one whose host does not
// resolve at once ("cannot resolve host HOST in ADDR"). Exit codes: 0 built, 1 refused by policy
// or the farm failed, 2 the solution does not compile or the input is bad.
//
// `serve compile-worker` runs until SIGINT or SIGTERM (exit 0), or until the farm refuses its key:
// then it prints "authentication failed for ADDR: ..." and exits 3, which tells a supervisor not
// to restart it (cluster/local_processes.h).
#include <signal.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>

#include "actors/endpoint.h"
#include "cli/command.h"
#include "cli/solution_files.h"
#include "cli/stop_signals.h"
#include "cluster/manifest.h"
#include "compile_farm/compile_report.h"
#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/content_hash.h"
#include "core/log.h"
#include "storage/run_store.h"

namespace cuda_agent::cli {
namespace {
namespace fs = std::filesystem;

struct CompileArgs {
  std::string dir;
  std::string farm;
  std::string arch;
  std::string policy;
  std::vector<std::string> flags;
  std::string store;
  std::string manifest;
  std::int64_t timeout_ms = 300'000;
  bool json = false;
};

// What --manifest gives `compile`: [compile] options and the [security] client keys (nullopt:
// no --manifest, or a manifest without keys). Without --manifest, the built-in defaults.
struct CompileSettings {
  CompileOptions compile;
  std::optional<CurveClientKeys> curve;
};

Expected<CompileSettings> compile_settings(const std::string& manifest) {
  if (manifest.empty()) return CompileSettings{};
  ASSIGN_OR_RETURN(Manifest m, load_manifest(manifest));
  ASSIGN_OR_RETURN(auto curve, client_curve(m));
  return CompileSettings{m.compile, std::move(curve)};
}

int run_compile(const CompileArgs& a) {
  auto settings = compile_settings(a.manifest);
  if (!settings) return report(settings.error());
  const CompileOptions* options = &settings->compile;
  auto files = read_solution(a.dir);
  if (!files) return report(files.error());
  CompileRequest request;
  request.header.request_id =
      RequestId{"cli-" + std::to_string(now_unix_ms()) + "-" + content_hash(a.dir).substr(0, 8)};
  request.header.run_id = RunId{"cli"};
  request.header.deadline_unix_ms = now_unix_ms() + a.timeout_ms;
  request.files = std::move(*files);
  request.target_arch = a.arch.empty() ? options->target_arch : a.arch;
  auto library_policy = parse_library_policy(a.policy.empty() ? options->library_policy : a.policy);
  if (!library_policy) return report(library_policy.error());
  request.library_policy = *library_policy;
  request.extra_flags = a.flags;

  std::unique_ptr<EmbeddedCompileFarm> embedded;
  PoolClientOptions client_options{.broker_endpoint = a.farm};
  if (a.farm.empty()) {
    CompileServiceOptions so;
    so.compile = *options;
    auto farm = EmbeddedCompileFarm::start(so, 1);
    if (!farm) return report(farm.error());
    embedded = std::move(*farm);
    client_options.broker_endpoint = embedded->client_endpoint();  // loopback, no CURVE
  } else {
    client_options.curve = settings->curve;  // a secured run's farm takes the run's client key
  }
  auto client = CompileClient::connect(client_options);
  if (!client) return report(client.error());
  Expected<CompileResult> result = (*client)->call(std::move(request));
  if (!result) {
    if (a.json) std::printf("%s\n", compile_error_json(result.error()).c_str());
    return report(result.error());
  }
  if (!a.store.empty()) {
    StoreOptions so;
    so.dir = a.store;
    auto store = RunStore::open(so, StoreMode::kWrite);
    if (!store) return report(store.error());
    StoreWrite w;
    w.artifacts.push_back({result->artifact_hash, TaskId{}, "cuda-shared-object", result->artifact,
                           result->log, now_unix_ms()});
    if (Status s = (*store)->write(std::move(w), std::chrono::seconds(30)); !s)
      return report(s.error());
  }
  std::printf("%s", a.json ? (compile_report_json(*result) + "\n").c_str()
                           : compile_report_text(*result).c_str());
  return 0;
}

}  // namespace

void add_compile_commands(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* compile =
      app.add_subcommand("compile",
                         "Check and build one solution directory (kernels/*.cu, *.cpp) through the "
                         "compile farm and print the report; works without a GPU.");
  compile->add_option("DIR", args->dir, "the solution (workspace) directory")->required();
  compile
      ->add_option("--farm", args->farm,
                   "a compile farm's client endpoint, e.g. tcp://farm:5551 (default: an "
                   "embedded farm in this process)")
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kConnect); });
  compile->add_option("--arch", args->arch, "nvcc -arch (default: [compile] target_arch, sm_90)");
  compile->add_option("--policy", args->policy, "library policy: default or pure")
      ->check(CLI::IsMember({"default", "pure"}));
  compile->add_option("--flag", args->flags, "an extra nvcc flag the farm allows (repeatable)");
  compile->add_option("--store", args->store, "also keep the artifact in this run store");
  compile->add_option("--manifest", args->manifest,
                      "read [compile] options, and the CURVE keys for --farm from [security], from "
                      "this manifest");
  compile->add_option("--timeout-ms", args->timeout_ms, "give up after this long")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<std::int32_t>::max()));
  compile->add_flag("--json", args->json, "print the report as JSON");
  compile->callback([args, &result, &app] {
    // The embedded farm's start-up lines are noise here unless a log level was asked for.
    if (app.get_option("--log-level")->count() == 0)
      (void)setup_logging(
          {.level = "warn", .format = app.get_option("--log-format")->as<std::string>()});
    result.exit_code = run_compile(*args);
  });

  CLI::App* serve = app.add_subcommand("serve", "Run one long-lived role until SIGINT/SIGTERM.");
  serve->require_subcommand(1);

  add_broker_command(*serve, BrokerRole::kCompileFarm, result);

  struct WorkerArgs {
    std::string connect;
    std::int64_t jobs = 0;
    std::string cache_dir;
    std::string manifest;
    std::string id;
    std::int64_t heartbeat_ms = 1000;
  };
  auto worker_args = std::make_shared<WorkerArgs>();
  CLI::App* worker = serve->add_subcommand(
      "compile-worker", "One compile worker process: joins a farm and builds solutions.");
  worker
      ->add_option("--connect", worker_args->connect,
                   "the farm's worker endpoint, e.g. tcp://farm:5552")
      ->required()
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kConnect); });
  worker
      ->add_option("--jobs", worker_args->jobs,
                   "concurrent jobs (default: [compile] jobs_per_worker, 0 = one per core)")
      ->check(CLI::Range(0, std::numeric_limits<std::int32_t>::max()));
  worker->add_option("--cache-dir", worker_args->cache_dir,
                     "object and artifact cache (default: ~/.cache/cuda-agent/compile)");
  worker->add_option("--manifest", worker_args->manifest, "read [compile] options from it");
  worker->add_option("--id", worker_args->id, "worker id (default: <host>-<pid>-<n>)");
  worker
      ->add_option("--heartbeat-ms", worker_args->heartbeat_ms,
                   "heartbeat interval; keep it well under the broker's heartbeat timeout")
      ->capture_default_str()
      ->check(CLI::Range(10, 60'000));
  worker->callback([worker_args, &result] {
    StopSignals signals;
    StopOnRefusal refused;  // outlives the worker below
    auto m = load_manifest_or_default(worker_args->manifest);
    auto curve = m ? client_curve(*m) : Expected<std::optional<CurveClientKeys>>(m.error());
    if (!curve) {
      result.exit_code = report(curve.error());
      return;
    }
    // A farm host that does not resolve fails now, before the toolchain probe.
    PoolWorkerOptions wo;
    if (Status s = resolve_endpoint_host(worker_args->connect,
                                         std::chrono::milliseconds(wo.resolve_timeout_ms));
        !s) {
      result.exit_code = report(s.error());
      return;
    }
    // Without --manifest, the built-in defaults of [compile], as before.
    const CompileOptions options = worker_args->manifest.empty() ? CompileOptions{} : m->compile;
    CompileServiceOptions so;
    so.compile = options;
    so.cache_dir = worker_args->cache_dir;
    if (so.cache_dir.empty()) {
      const char* home = std::getenv("HOME");
      so.cache_dir = std::string(home && *home ? home : "/tmp") + "/.cache/cuda-agent/compile";
    }
    auto service = CompileService::create(so);
    if (!service) {
      result.exit_code = report(service.error());
      return;
    }
    std::shared_ptr<CompileService> shared = std::move(*service);
    wo.broker_endpoint = worker_args->connect;
    wo.worker_id = WorkerId{worker_args->id};
    wo.heartbeat_interval_ms = worker_args->heartbeat_ms;
    wo.curve = *curve;
    wo.on_refusal = refused.callback();
    std::int64_t jobs = worker_args->jobs > 0 ? worker_args->jobs : options.jobs_per_worker;
    wo.slots = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
    auto w = PoolWorker::start(wo, compile_handler(shared));
    if (!w) {
      result.exit_code = report(w.error());
      return;
    }
    std::printf("compile worker %s: %lld slots, connected to %s\n",
                (*w)->worker_id().value().c_str(), static_cast<long long>(wo.slots),
                wo.broker_endpoint.c_str());
    std::fflush(stdout);
    const int sig = signals.wait();
    const Error refusal = refused.refusal();
    if (refusal.code.empty())
      log_info("compile worker stopping", {{"signal", std::to_string(sig)}});
    (*w)->stop();
    if (!refusal.code.empty()) {
      // "authentication failed for ENDPOINT: ...": the same key is refused after a restart too.
      (void)report(refusal);
      result.exit_code = kFinalExitCode;
    }
  });

  auto get_args = std::make_shared<std::array<std::string, 3>>();
  CLI::App* artifacts = app.add_subcommand("artifacts", "Built artifacts kept in a run store.");
  artifacts->require_subcommand(1);
  CLI::App* get = artifacts->add_subcommand("get", "Write one artifact, by hash, to a file.");
  get->add_option("HASH", (*get_args)[0], "the artifact's content hash")->required();
  get->add_option("--store", (*get_args)[1], "run store directory")->required();
  get->add_option("-o,--output", (*get_args)[2], "file to write")->required();
  get->callback([get_args, &result] {
    StoreOptions so;
    so.dir = (*get_args)[1];
    auto store = RunStore::open(so, StoreMode::kSecondary);
    if (!store) {
      result.exit_code = report(store.error());
      return;
    }
    auto artifact = (*store)->get_artifact((*get_args)[0]);
    if (!artifact) {
      result.exit_code = report(artifact.error());
      return;
    }
    std::ofstream out((*get_args)[2], std::ios::binary);
    out.write(artifact->bytes.data(), static_cast<std::streamsize>(artifact->bytes.size()));
    if (!out) {
      result.exit_code = report(
          make_error(ErrorCategory::kIo, "cli.write", "cannot write '" + (*get_args)[2] + "'"));
      return;
    }
    std::printf("%s: %zu bytes -> %s\n", artifact->hash.c_str(), artifact->bytes.size(),
                (*get_args)[2].c_str());
  });
}

}  // namespace cuda_agent::cli
