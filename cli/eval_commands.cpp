// `cuda-agent eval --tasks SUITE --store DIR --policy replay:FILE|openai:URL`: episodes over a
// task set on this machine (embedded compile farm, the local GPU's bench), every episode and final
// evaluation kept in the run store, and CUDA Agent's Table 1 summary printed and exported
// (rollout/eval_summary.h). Episodes run through the rollout worker (rollout/rollout_worker.h),
// --concurrency at once; each is counted once the store acknowledged it. Interrupted or killed
// runs resume with the same --run-id: an episode already in the store is not run again (its stored
// final evaluation counts), and the attempts a killed run left in flight are marked aborted and
// rerun, up to --max-attempts per episode (then stored as aborted). Ctrl-C (SIGINT) or SIGTERM (a
// scheduler's or a wall-clock limit's stop) starts no new episode and cuts those in flight at their
// next policy call; a resume reruns them without counting those attempts.
//
// `--policy model:DIR` serves a checkpoint for the run: a `cuda-agent serve policy-engine` child on
// a free local port (the GPU when there is one, else the CPU), asked for token ids, stopped at the
// end. `--seed N` fixes every episode's sampling seeds (episode k of a task: seeds derived from N,
// the task and k), so two checkpoints are compared on the same draws. `--reward compile-only`
// (or [rollout] reward = "compile-only" in --manifest) runs without a GPU and says so in every
// report: +1 when the final workspace builds, -1 when not; nothing is run or timed.
//
// Exit codes: 0 the run finished; 1 an episode or the store failed; 2 bad input (no tasks, a bad
// policy spec, no GPU for a full reward).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cluster/local_processes.h"
#include "cluster/manifest.h"
#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/content_hash.h"
#include "core/log.h"
#include "core/progress.h"
#include "gpu_bench/bench_service.h"
#include "gpu_bench/device_probe.h"
#include "messages/trajectory_codec.h"
#include "rollout/agent_tools.h"
#include "rollout/compile_only_tools.h"
#include "rollout/episode.h"
#include "rollout/eval_summary.h"
#include "rollout/farm_tools.h"
#include "rollout/http_post.h"
#include "rollout/local_bench.h"
#include "rollout/openai_policy.h"
#include "rollout/replay_policy.h"
#include "rollout/rollout_worker.h"
#include "storage/run_store.h"
#include "tasks/task.h"

namespace cuda_agent::cli {
namespace {

namespace fs = std::filesystem;

struct EvalArgs {
  std::string suite;
  std::string store;
  std::string policy;
  std::string model;
  std::string run_id;
  std::string report_dir;
  std::string manifest;
  std::string reward;  // "" = [rollout] reward
  std::uint64_t seed = 0;
  std::int64_t episodes_per_task = 1;
  std::int64_t max_turns = 0;
  std::int64_t limit = 0;
  std::int64_t gpu = 0;
  std::int64_t concurrency = 1;
  std::int64_t max_attempts = 2;
  bool token_ids = false;
};

std::atomic<bool> g_interrupted{false};

Error bad(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "cli.eval", what);
}

// A fresh policy per episode: a replay transcript starts from its first turn each time. `url`: the
// served checkpoint's endpoint for model:DIR.
Expected<std::unique_ptr<PolicyBackend>> make_policy(const EvalArgs& a, const Task& task,
                                                     const std::string& url = "") {
  if (a.policy.rfind("model:", 0) == 0) {
    if (url.empty()) return std::unique_ptr<PolicyBackend>();  // checked, served later
    auto r = OpenAiPolicy::create({.base_url = url, .model = "policy", .request_token_ids = true});
    if (!r) return r.error();
    return std::unique_ptr<PolicyBackend>(std::move(*r));
  }
  if (a.policy.rfind("replay:", 0) == 0) {
    fs::path p = a.policy.substr(7);
    if (fs::is_directory(p)) p /= task.name + ".jsonl";
    auto r = ReplayPolicy::load(p.string());
    if (!r) return r.error();
    return std::unique_ptr<PolicyBackend>(std::move(*r));
  }
  if (a.policy.rfind("openai:", 0) == 0) {
    if (a.model.empty()) return bad("--policy openai:URL needs --model NAME");
    auto r = OpenAiPolicy::create(
        {.base_url = a.policy.substr(7), .model = a.model, .request_token_ids = a.token_ids});
    if (!r) return r.error();
    return std::unique_ptr<PolicyBackend>(std::move(*r));
  }
  return bad(
      "--policy '" + a.policy +
      "': expected replay:FILE, replay:DIR (DIR/<task name>.jsonl), openai:URL or model:DIR");
}

// A port free now on 127.0.0.1 (the kernel's pick for port 0). Another process could take it
// before the engine binds; the engine then fails to start and the error says so.
Expected<int> free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return make_error(ErrorCategory::kIo, "cli.eval", "socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) return make_error(ErrorCategory::kIo, "cli.eval", "no free local port");
  return static_cast<int>(ntohs(addr.sin_port));
}

// `--policy model:DIR`: the checkpoint served by a child engine until `engine` is destroyed.
// Returns its OpenAI base URL once /health answers 200; the engine's exit or 10 minutes without
// an answer is an Error with its log tail.
Expected<std::string> serve_checkpoint(const EvalArgs& a, const Manifest& m, bool gpu,
                                       LocalProcesses& engine) {
  const std::string dir = a.policy.substr(6);
  ASSIGN_OR_RETURN(const int port, free_local_port());
  RETURN_IF_ERROR(
      engine.start({.role = "policy-engine",
                    .name = "policy-engine",
                    .argv = {"cuda-agent", "serve", "policy-engine", "--model", dir, "--host",
                             "127.0.0.1", "--port", std::to_string(port), "--device",
                             gpu ? "cuda:" + std::to_string(a.gpu) : "cpu", "--dtype",
                             m.model.dtype, "--served-model-name", "policy", "--max-seq-len",
                             std::to_string(m.rollout.max_context_tokens)}}));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::minutes(10);
  while (Clock::now() < deadline) {
    for (const ChildEvent& e : engine.poll()) {
      if (e.kind == ChildEventKind::kExited || e.kind == ChildEventKind::kGivenUp)
        return make_error(ErrorCategory::kUnavailable, "cli.eval_engine",
                          "the policy engine serving " + dir + " exited (code " +
                              std::to_string(e.exit_code) + "):\n" +
                              LocalProcesses::log_tail(e.log_path, 15));
    }
    auto h = http_get(base + "/health", {}, {.connect_ms = 1000, .total_ms = 2000});
    if (h && h->status == 200) return base + "/v1";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return make_error(ErrorCategory::kTimeout, "cli.eval_engine",
                    "the policy engine serving " + dir + " did not answer /health in 10 minutes");
}

// Episode k of a task under --seed N: the same seeds for every checkpoint evaluated with N.
std::uint64_t episode_seed(std::uint64_t seed, const std::string& task_id, std::uint64_t k) {
  std::uint64_t h = 1469598103934665603ULL ^ seed;  // FNV-1a over the task id, then k
  for (unsigned char c : task_id) h = (h ^ c) * 1099511628211ULL;
  h = (h ^ k) * 1099511628211ULL;
  return h == 0 ? 1 : h;
}

std::string subset_of(const Task& t) {
  const auto slash = t.suite.rfind('/');
  return slash == std::string::npos ? t.suite : t.suite.substr(slash + 1);
}

Status write_reports(const EvalSummary& s, const std::vector<nlohmann::json>& rows,
                     const std::string& dir, const std::string& title) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(ErrorCategory::kIo, "cli.eval", "cannot create " + dir + ": " + ec.message());
  std::ofstream(fs::path(dir) / "summary.md") << render_markdown(s, title);
  std::ofstream(fs::path(dir) / "summary.html") << render_html(s, title);
  std::ofstream jsonl(fs::path(dir) / "episodes.jsonl");
  for (const auto& r : rows)
    jsonl << r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!jsonl) return make_error(ErrorCategory::kIo, "cli.eval", "cannot write reports in " + dir);
  return {};
}

int run_eval(const EvalArgs& a) {
  Manifest manifest;
  if (!a.manifest.empty()) {
    auto m = load_manifest(a.manifest);
    if (!m) return report(m.error());
    manifest = std::move(*m);
  }
  const std::string reward = a.reward.empty() ? manifest.rollout.reward : a.reward;
  if (reward != "full" && reward != "compile-only")
    return report(bad("--reward '" + reward + "': expected full or compile-only"));
  const bool compile_only = reward == "compile-only";
  // The policy spec is checked before anything starts.
  if (a.policy.rfind("replay:", 0) == 0) {
    if (!fs::exists(a.policy.substr(7)))
      return report(bad("--policy " + a.policy + ": no such transcript file or directory"));
  } else if (a.policy.rfind("model:", 0) == 0) {
    if (!fs::exists(fs::path(a.policy.substr(6)) / "config.json"))
      return report(bad("--policy " + a.policy + ": no config.json in that directory"));
  } else if (auto probe = make_policy(a, Task{}); !probe) {
    return report(probe.error());
  }
  auto store = RunStore::open({.dir = a.store}, StoreMode::kWrite);
  if (!store) return report(store.error());
  std::vector<Task> tasks;
  Status scan = (*store)->scan_tasks({.id_prefix = a.suite + "/"}, [&](const TaskRecord& r) {
    auto t = from_record(r);
    if (t) tasks.push_back(std::move(*t));
    return a.limit <= 0 || static_cast<std::int64_t>(tasks.size()) < a.limit;
  });
  if (!scan) return report(scan.error());
  if (tasks.empty())
    return report(bad("no tasks of suite '" + a.suite + "' in " + a.store +
                      " (import them with `cuda-agent tasks import`)"));

  DeviceList devices = list_devices();
  const bool gpu = !devices.devices.empty();
  if (!gpu && !compile_only)
    return report(make_error(ErrorCategory::kUnavailable, "bench.no_gpu",
                             "no GPU on this machine (" + devices.no_gpu_reason +
                                 "); `cuda-agent eval` needs one for the bench (--reward "
                                 "compile-only measures only whether solutions build)"));
  std::shared_ptr<BenchService> bench;
  if (!compile_only) {
    BenchServiceOptions bo;
    bo.bench = manifest.bench;
    bo.device = static_cast<int>(a.gpu);
    bo.worker_id = WorkerId{"eval"};
    auto created = BenchService::create(bo);
    if (!created) return report(created.error());
    bench = std::move(*created);
  } else {
    std::printf(
        "reward: compile-only (+1 when the final workspace builds, -1 when not; no "
        "correctness, no speed)\n");
  }
  // --policy model:DIR: the checkpoint's engine lives as long as this run.
  const fs::path log_dir =
      a.report_dir.empty() ? fs::path(a.store).parent_path() / "eval-logs" : fs::path(a.report_dir);
  LocalProcesses engine({.log_dir = log_dir.string(), .max_restarts = 0});
  std::string policy_url;
  if (a.policy.rfind("model:", 0) == 0) {
    auto served = serve_checkpoint(a, manifest, gpu, engine);
    if (!served) return report(served.error());
    policy_url = *served;
  }
  CompileServiceOptions so;
  so.compile = manifest.compile;
  auto farm = EmbeddedCompileFarm::start(so, 0);
  if (!farm) return report(farm.error());
  auto client = CompileClient::connect({.broker_endpoint = (*farm)->client_endpoint()});
  if (!client) return report(client.error());

  const RunId run{a.run_id.empty() ? "eval-" + std::to_string(now_unix_ms()) : a.run_id};
  const std::int64_t max_turns = a.max_turns > 0 ? a.max_turns : manifest.rollout.max_turns;
  for (int sig : {SIGINT, SIGTERM}) std::signal(sig, [](int) { g_interrupted = true; });
  Progress progress({.label = "eval " + a.suite,
                     .total = static_cast<std::uint64_t>(tasks.size()) *
                              static_cast<std::uint64_t>(a.episodes_per_task)});
  // The store's writer lock is ours: whoever left attempts in flight in this run is gone.
  RunStoreRollout rollout_store(**store);
  RolloutWorker worker(rollout_store, {.worker_id = WorkerId{"eval-" + std::to_string(::getpid()) +
                                                             "-" + std::to_string(now_unix_ms())},
                                       .concurrent_episodes = a.concurrency,
                                       .max_attempts = static_cast<std::uint32_t>(a.max_attempts)});
  auto recovered = worker.recover(run, worker.all_others_lost());
  if (!recovered) return report(recovered.error());
  for (const EpisodeAttemptRecord& lost : recovered->aborted)
    log_warn("an interrupted run left this episode in flight; its attempt is aborted",
             {{"episode", lost.episode_id.value()}, {"attempt", std::to_string(lost.attempt)}});

  auto build_settings = farm_build_settings(manifest.compile);
  if (!build_settings) return report(build_settings.error());
  const FarmBuildSettings farm_options = *build_settings;
  std::vector<RolloutJob> jobs;
  std::vector<const Task*> job_task;
  for (const Task& task : tasks) {
    for (std::int64_t k = 0; k < a.episodes_per_task; ++k) {
      const EpisodeId id{task.id.value() + "#" + std::to_string(k)};
      jobs.push_back({.episode_id = id,
                      .task_id = task.id,
                      .evaluation_id = EvaluationId{run.value() + "/" + id.value()},
                      .prepare = [&, t = &task, k]() -> Expected<PreparedEpisode> {
                        ASSIGN_OR_RETURN(std::unique_ptr<PolicyBackend> policy,
                                         make_policy(a, *t, policy_url));
                        PreparedEpisode p;
                        p.policy = std::move(policy);
                        if (compile_only)
                          p.tools = std::make_unique<CompileOnlyTools>(**client, farm_options);
                        else
                          p.tools = std::make_unique<FarmEvaluationTools>(
                              **client, farm_options, local_bench_evaluator(bench, t->id.value()));
                        p.spec = episode_spec(manifest.rollout, t->source, p.policy.get(),
                                              p.tools.get());
                        p.spec.budgets.max_turns = max_turns;
                        if (a.seed != 0)
                          p.spec.seed = episode_seed(a.seed, t->id.value(), std::uint64_t(k));
                        return p;
                      }});
      job_task.push_back(&task);
    }
  }
  std::mutex progress_mu;  // Progress is driven by one thread at a time; hooks run on many
  RolloutHooks hooks{.on_finished = [&](const JobResult& r) {
    if (r.outcome == JobOutcome::kFailed || r.outcome == JobOutcome::kSuperseded)
      log_error(*r.error, {{"episode", r.episode_id.value()}});
    std::lock_guard lock(progress_mu);
    if (r.outcome != JobOutcome::kNotStarted) progress.advance(1);
  }};
  const RolloutReport ran = worker.run(run, jobs, hooks, &g_interrupted);

  std::vector<EvalEpisodeResult> results;
  std::vector<nlohmann::json> rows;
  int failures = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobResult& r = ran.jobs[i];
    const Task& task = *job_task[i];
    EvalEpisodeResult result{.task_id = task.id.value(),
                             .subset = subset_of(task),
                             .aborted = r.summary.status == EpisodeStatus::kAborted};
    switch (r.outcome) {
      case JobOutcome::kNotStarted:
      case JobOutcome::kStopped: continue;
      case JobOutcome::kFailed:
      case JobOutcome::kSuperseded: ++failures; continue;
      case JobOutcome::kAlreadyStored:
      case JobOutcome::kGivenUp:
        result.reward_tier = static_cast<int>(r.summary.final_reward);
        if (auto done = (*store)->get_evaluation(*jobs[i].evaluation_id)) {
          result.correct = done->verified;
          result.reward_tier = static_cast<int>(done->reward);
          result.speedup_vs_eager = done->speedup_vs_eager;
          result.speedup_vs_compile = done->speedup_vs_compile;
          if (auto audit = decode_audit_record(done->audit))
            note_task_checks(result, audit->checks_run);
        }
        break;
      case JobOutcome::kAcknowledged:
        result.correct = r.final_outcome.correct;
        result.reward_tier = static_cast<int>(r.summary.final_reward);
        result.speedup_vs_eager = r.final_outcome.speedup_vs_eager;
        result.speedup_vs_compile = r.final_outcome.speedup_vs_compile;
        if (r.final_outcome.bench)
          note_task_checks(result, r.final_outcome.bench->audit.checks_run);
        break;
    }
    if (r.outcome != JobOutcome::kAlreadyStored) {
      nlohmann::json row = {{"episode", r.episode_id.value()},
                            {"task", task.id.value()},
                            {"status", std::string(to_string(r.summary.status))},
                            {"outcome", std::string(to_string(r.outcome))},
                            {"attempt", r.attempt},
                            {"reward", r.summary.final_reward},
                            {"correct", result.correct},
                            {"speedup_vs_eager", result.speedup_vs_eager},
                            {"speedup_vs_compile", result.speedup_vs_compile},
                            {"turns", r.summary.turns},
                            {"invalid_tool_calls", r.summary.invalid_tool_calls}};
      // The stored evaluation record this reward came from, read back: its id, reward and the
      // digest of its audit (an aborted episode has none; its reward is not scored).
      if (auto stored = (*store)->get_evaluation(*jobs[i].evaluation_id)) {
        row["evaluation"] = stored->evaluation_id.value();
        row["evaluation_reward"] = stored->reward;
        row["audit_sha256"] = stored->audit.empty() ? "" : content_hash(stored->audit);
      }
      rows.push_back(std::move(row));
    }
    results.push_back(result);
  }
  const EvalSummary summary = summarize(results);
  const std::string title =
      "cuda-agent eval " + a.suite + " (" + run.value() + ")" +
      (compile_only ? ", compile-only reward: builds +1, else -1; nothing run or timed" : "");
  // The files first: a stop that also closed our stdout (a killed pipeline) must not lose them.
  Status written =
      a.report_dir.empty() ? Status::ok() : write_reports(summary, rows, a.report_dir, title);
  std::printf("%s", render_markdown(summary, title).c_str());
  if (!written) return report(written.error());
  if (!a.report_dir.empty())
    std::printf("\nreports: %s/summary.md, summary.html, episodes.jsonl\n", a.report_dir.c_str());
  if (g_interrupted)
    std::printf("\ninterrupted: run again with --run-id %s to resume\n", run.value().c_str());
  return failures > 0 ? 1 : 0;
}

}  // namespace

void add_eval_commands(CLI::App& app, CommandResult& result) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* eval = app.add_subcommand(
      "eval",
      "Run agent episodes over a task set with a policy (a transcript replay or an "
      "OpenAI-compatible endpoint), keep them in the run store, and print CUDA Agent's Table 1 "
      "figures. Needs a local GPU for the bench.");
  eval->add_option("--tasks", a->suite, "task suite in the store, e.g. kernelbench/level1")
      ->required();
  eval->add_option("--store", a->store, "run store holding the tasks; episodes are added")
      ->required();
  eval->add_option("--policy", a->policy,
                   "replay:FILE, replay:DIR (DIR/<task name>.jsonl), openai:URL (up to /v1) or "
                   "model:DIR (a checkpoint served by a policy-engine child for this run)")
      ->required();
  eval->add_option("--reward", a->reward,
                   "full (the GPU bench) or compile-only (builds: +1, else -1; no GPU needed); "
                   "default: [rollout] reward of --manifest, else full");
  eval->add_option("--seed", a->seed,
                   "fix every episode's sampling seeds (derived from this, the task and the "
                   "episode index); 0: unseeded");
  eval->add_option("--model", a->model, "model name for openai:URL (key from $OPENAI_API_KEY)");
  eval->add_option("--episodes-per-task", a->episodes_per_task, "episodes per task (best counts)")
      ->check(CLI::Range(1, 1000));
  eval->add_option("--max-turns", a->max_turns, "turn budget (default: [rollout] max_turns)");
  eval->add_option("--limit", a->limit, "only the first N tasks");
  eval->add_option("--run-id", a->run_id, "run id; an existing one resumes");
  eval->add_option("--report-dir", a->report_dir,
                   "write summary.md, summary.html and episodes.jsonl here");
  eval->add_option("--manifest", a->manifest, "read [compile], [bench], [rollout] from it");
  eval->add_option("--gpu", a->gpu, "CUDA device index of the bench");
  eval->add_option("--concurrency", a->concurrency,
                   "episodes run at once (an episode waiting on compile or bench holds no "
                   "generation slot)")
      ->check(CLI::Range(1, 4096));
  eval->add_flag("--token-ids", a->token_ids,
                 "openai:URL: ask for the sampled token ids and logprobs (vLLM's "
                 "return_tokens_as_token_ids), so trajectories are token-in-token-out");
  eval->add_option("--max-attempts", a->max_attempts,
                   "attempts per episode when a run is killed with it in flight; past them it is "
                   "stored as aborted")
      ->check(CLI::Range(1, 100));
  eval->callback([a, &result] { result.exit_code = run_eval(*a); });
}

}  // namespace cuda_agent::cli
