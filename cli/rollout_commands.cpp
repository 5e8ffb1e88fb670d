// `cuda-agent serve rollout-worker --manifest M`: one rollout worker of a run, the process the
// launch plan starts per rollout slot (cluster/launch_plan.h). It runs episodes with the policy
// backend of [rollout] policy_backend (--policy-endpoint / --policy-model override the manifest's
// endpoint and model), compiles through the compile farm's broker and, with [rollout] reward =
// "full", evaluates through the bench pool's broker; with reward = "compile-only" (a run without
// a GPU) it needs no bench pool and the reward is whether the final workspace builds
// (rollout/compile_only_tools.h).
//
// Two ways to get episodes and keep trajectories:
//  - --coordinator [tcp://HOST:PORT] (what the launch plan starts; without a value, the run's
//    coordinator, [run] port_base + 0 on the coordinator node): the coordinator owns the run. The
//    worker asks it for episodes and submits every trajectory to it (rollout/coordinated_rollout.h
//    over coordinator/coordinator_client.h); an episode counts once the coordinator acknowledged
//    it after its durable store write. The worker opens no store; the client heartbeats for it.
//    An episode whose policy server went away mid-episode (an engine killed and restarting) is
//    not submitted but rerun once the server's /health answers again (policy_probe, at most 20
//    minutes: CoordinatedRolloutOptions::policy_wait_ms).
//  - without --coordinator: the worker takes its share of the run's episodes itself (the [tasks]
//    train_set, [rollout] episodes_per_task each, every --shard S/N-th one) and opens the run
//    store ([store] dir, or --store) as its writer (rollout/rollout_worker.h), which makes
//    RolloutWorker::all_others_lost() the right recovery rule. One worker per store: a second one
//    is refused at the store's writer lock. For runs without a coordinator and for tests.
// In both, an assignment's task is found by id in the train set loaded at start.
//
// Brokers: the client endpoints of the compile farm and the bench pool, with the run's CURVE
// client key when [security] names the key files (the coordinator's client uses it too).
//
// Stopping: SIGTERM or SIGINT stops taking episodes; episodes in flight are cut at their next
// policy call and not kept (store mode: their attempts are marked aborted; coordinator mode: the
// coordinator reruns them once this worker is lost), so they run again. The process exits once
// every episode thread has returned (a tool call in flight finishes first, bounded by its
// deadline), or when its share is done or the coordinator says the run finished.
//
// stdout (for people and tests): a start line, "rollout worker ID stopping (signal N)" when a
// signal arrived, and "rollout worker ID done: ..." with the counts. Exit codes: 0 the share (or
// the run) finished or the worker was stopped cleanly; 1 an episode, the store or the coordinator
// failed; 2 bad input.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "actors/actor_runtime.h"
#include "actors/curve_keys.h"
#include "actors/endpoint.h"
#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/launch_plan.h"
#include "cluster/manifest.h"
#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/log.h"
#include "gpu_bench/bench_pool.h"
#include "rollout/agent_tools.h"
#include "rollout/compile_only_tools.h"
#include "rollout/coordinated_rollout.h"
#include "rollout/coordinator_work_source.h"
#include "rollout/farm_tools.h"
#include "rollout/http_post.h"
#include "rollout/openai_policy.h"
#include "rollout/pool_bench.h"
#include "rollout/replay_policy.h"
#include "rollout/rollout_worker.h"
#include "storage/run_store.h"
#include "tasks/task_import.h"

namespace cuda_agent::cli {
namespace {

namespace fs = std::filesystem;

struct ServeRolloutArgs {
  std::string manifest;
  std::string compile_farm;
  std::string bench_pool;
  std::string store;
  std::string id;
  std::string shard = "0/1";
  std::int64_t gpu = 0;
  /// --coordinator was given; `coordinator` is its value (empty: the run's coordinator).
  bool use_coordinator = false;
  std::string coordinator;
  std::string policy_endpoint;
  std::string policy_model;
};

Error bad(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "cli.rollout_worker", what);
}

struct Shard {
  std::int64_t index = 0;
  std::int64_t count = 1;
};

Expected<Shard> parse_shard(const std::string& text) {
  Shard s;
  char tail = 0;
  long long i = 0, n = 0;
  if (std::sscanf(text.c_str(), "%lld/%lld%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n)
    return bad("--shard '" + text + "': expected S/N with 0 <= S < N");
  s.index = i;
  s.count = n;
  return s;
}

EpisodeStage stage_of(const std::string& learner_stage) {
  if (learner_stage == "single-turn-ppo") return EpisodeStage::kSingleTurnWarmup;
  if (learner_stage == "agent-warmup") return EpisodeStage::kAgentWarmup;
  return EpisodeStage::kAgenticPpo;
}

// A fresh policy per episode attempt: a replay transcript starts from its first turn each time.
Expected<std::unique_ptr<PolicyBackend>> make_policy(const Manifest& m, const Task& task) {
  const RolloutOptions& o = m.rollout;
  if (o.policy_backend == "replay") {
    fs::path p = m.paths.replay_transcripts;
    if (p.empty()) return bad("[rollout] policy_backend = 'replay' needs replay_transcripts");
    if (fs::is_directory(p)) p /= task.name + ".jsonl";
    ASSIGN_OR_RETURN(auto r, ReplayPolicy::load(p.string()));
    return std::unique_ptr<PolicyBackend>(std::move(r));
  }
  if (o.policy_model.empty())
    return bad("[rollout] policy_backend = 'openai' needs policy_model (the served model name)");
  ASSIGN_OR_RETURN(auto r, OpenAiPolicy::create({.base_url = o.policy_endpoint,
                                                 .model = o.policy_model,
                                                 .request_token_ids = o.request_token_ids}));
  return std::unique_ptr<PolicyBackend>(std::move(r));
}

std::string default_worker_id(std::int64_t gpu) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "-" + std::to_string(::getpid()) + "-gpu" + std::to_string(gpu) + "-" +
         std::to_string(now_unix_ms());
}

// Counts for the heartbeat line; updated from the episode threads.
struct Counters {
  std::atomic<std::int64_t> started{0};
  std::atomic<std::int64_t> finished{0};
  std::atomic<std::int64_t> acknowledged{0};
};

// What every episode of this worker shares: the manifest (with the command line's overrides),
// the train set by task id, and the brokers' clients.
struct WorkerSetup {
  Manifest m;
  std::vector<Task> tasks;
  std::map<std::string, const Task*> by_id;
  PoolClientOptions farm_options;
  PoolClientOptions pool_options;  ///< unused with compile-only reward
  std::unique_ptr<CompileClient> compile;
  std::shared_ptr<BenchClient> bench;  ///< null with compile-only reward
  FarmBuildSettings build;
  RunId run;
  std::string worker_id;

  bool compile_only() const { return m.rollout.reward == "compile-only"; }
};

Expected<WorkerSetup> set_up(const ServeRolloutArgs& a) {
  WorkerSetup w;
  ASSIGN_OR_RETURN(w.m, load_manifest_or_default(a.manifest));
  if (!a.policy_endpoint.empty()) w.m.rollout.policy_endpoint = a.policy_endpoint;
  if (!a.policy_model.empty()) w.m.rollout.policy_model = a.policy_model;
  const Manifest& m = w.m;
  // The policy settings are checked before anything starts.
  if (m.rollout.policy_backend == "replay") {
    if (m.paths.replay_transcripts.empty() || !fs::exists(m.paths.replay_transcripts))
      return bad("[rollout] replay_transcripts: no such file or directory '" +
                 m.paths.replay_transcripts.string() + "'");
  } else if (auto probe = make_policy(m, Task{}); !probe) {
    return probe.error();
  }
  ASSIGN_OR_RETURN(auto imported, load_tasks(m.paths.train_set.string(), {}, {}));
  for (const ImportFailure& f : imported.failures)
    log_warn("train-set task not used", {{"where", f.where}, {"reason", f.reason}});
  if (imported.tasks.empty())
    return bad("no usable task in the train set " + m.paths.train_set.string());
  w.tasks = std::move(imported.tasks);
  for (const Task& t : w.tasks) w.by_id[t.id.value()] = &t;

  const std::string port_host = "tcp://" + m.coordinator().host + ":";
  w.farm_options.broker_endpoint =
      a.compile_farm.empty() ? port_host + std::to_string(m.run.port_base + 1) : a.compile_farm;
  w.pool_options.broker_endpoint =
      a.bench_pool.empty() ? port_host + std::to_string(m.run.port_base + 3) : a.bench_pool;
  ASSIGN_OR_RETURN(auto curve, client_curve(m));  // a secured run: the run's client key only
  w.farm_options.curve = curve;
  w.pool_options.curve = curve;
  ASSIGN_OR_RETURN(w.compile, CompileClient::connect(w.farm_options));
  if (!w.compile_only()) {
    ASSIGN_OR_RETURN(auto bench, BenchClient::connect(w.pool_options));
    w.bench = std::move(bench);
  }
  ASSIGN_OR_RETURN(w.build, farm_build_settings(m.compile));
  w.run = RunId{m.run.name};
  w.worker_id = a.id.empty() ? default_worker_id(a.gpu) : a.id;
  return w;
}

// One attempt at an episode of `task`: a fresh policy (a replay starts over), the tools of the
// run's reward, the budgets and sampling settings of [rollout]. `request_key` names the attempt
// (episode_request_key) so its compile and bench requests have derived ids: a rerun of it that
// sends the same code is answered from the brokers' caches; empty: fresh ids.
Expected<PreparedEpisode> prepare_episode(const WorkerSetup& w, const Task& task,
                                          const std::string& request_key = "") {
  ASSIGN_OR_RETURN(std::unique_ptr<PolicyBackend> policy, make_policy(w.m, task));
  PreparedEpisode p;
  p.policy = std::move(policy);
  FarmBuildSettings build = w.build;
  build.request_key = request_key;
  if (w.compile_only()) {
    p.tools = std::make_unique<CompileOnlyTools>(*w.compile, build);
  } else {
    p.tools = std::make_unique<FarmEvaluationTools>(
        *w.compile, build,
        pool_bench_evaluator(
            w.bench, {.task_id = task.id.value(), .run_id = w.run, .request_key = request_key}));
  }
  p.spec = episode_spec(w.m.rollout, task.source, p.policy.get(), p.tools.get());
  return p;
}

std::string evaluation_text(const WorkerSetup& w) {
  return w.compile_only() ? "compile-only reward (no bench pool)"
                          : "bench pool " + w.pool_options.broker_endpoint;
}

// What a heartbeat line reports.
struct Beat {
  std::int64_t in_flight = 0;
  std::int64_t acknowledged = 0;
};

// Waits for the loop's thread to set `done`, with a heartbeat line at debug level every [run]
// heartbeat_interval_ms; the first SIGTERM/SIGINT calls `on_stop(signal)`.
void wait_for(const WorkerSetup& w, StopSignals& signals, const std::atomic<bool>& done,
              const std::function<void(int)>& on_stop, const std::function<Beat()>& beat) {
  const std::int64_t beat_ms = w.m.run.heartbeat_interval_ms;
  const timespec interval{.tv_sec = beat_ms / 1000, .tv_nsec = (beat_ms % 1000) * 1'000'000};
  bool stopping = false;
  for (std::uint64_t sequence = 1; !done; ++sequence) {
    const int sig = ::sigtimedwait(&signals.set, nullptr, &interval);
    if (sig > 0 && !stopping) {
      stopping = true;
      on_stop(sig);
    }
    const Beat b = beat();
    log_debug("rollout worker heartbeat", {{"worker", w.worker_id},
                                           {"sequence", std::to_string(sequence)},
                                           {"in_flight", std::to_string(b.in_flight)},
                                           {"acknowledged", std::to_string(b.acknowledged)}});
  }
}

// The policy server's /health: at the root of its base URL ("http://h:p/v1" -> "http://h:p").
std::string policy_health_url(const Manifest& m) {
  std::string base = m.rollout.policy_endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0)
    base.resize(base.size() - 3);
  return base + "/health";
}

// Waits until the policy server answers HTTP at all (any status: a hosted API has no /health) at
// policy_health_url, so that episodes started while an engine still loads its weights are not
// aborted. Gives up after 20 minutes (a large model on a slow disk) or a signal.
Status wait_for_policy_server(const Manifest& m, StopSignals& signals) {
  if (m.rollout.policy_backend != "openai") return Status::ok();
  const std::string url = policy_health_url(m);
  const auto start = std::chrono::steady_clock::now();
  auto next_note = start + std::chrono::seconds(15);
  const timespec pause{.tv_sec = 1, .tv_nsec = 0};
  for (;;) {
    Expected<HttpResponse> r = http_get(url, {}, {.connect_ms = 2000, .total_ms = 5000});
    if (r) return Status::ok();
    const auto now = std::chrono::steady_clock::now();
    if (now - start > std::chrono::minutes(20)) {
      return r.error().with_context("the policy server at " + url +
                                    " did not answer for 20 minutes");
    }
    if (now >= next_note) {
      log_info("waiting for the policy server", {{"url", url}, {"error", r.error().to_string()}});
      next_note = now + std::chrono::seconds(15);
    }
    if (::sigtimedwait(&signals.set, nullptr, &pause) > 0) {
      return make_error(ErrorCategory::kUnavailable, "rollout.stopped",
                        "stopped by a signal while waiting for the policy server at " + url);
    }
  }
}

// One look at the policy server for an episode whose server went away mid-episode
// (CoordinatedRollout reruns it once this answers; it keeps its own deadline and stop, so this
// cannot be wait_for_policy_server, which takes the process's signals). Answered: any status
// below 500 (a hosted API has no /health; a 502/503 is a gateway or an engine that is not
// serving). None for a backend that is not a server.
PolicyProbe policy_probe(const Manifest& m) {
  if (m.rollout.policy_backend != "openai") return {};
  return [url = policy_health_url(m)] {
    Expected<HttpResponse> r = http_get(url, {}, {.connect_ms = 2000, .total_ms = 5000});
    return r && r->status < 500;
  };
}

// Coordinator mode (see the file comment).
int serve_coordinated(const ServeRolloutArgs& a, WorkerSetup& w, StopSignals& signals) {
  const Manifest& m = w.m;
  if (Status s = wait_for_policy_server(m, signals); !s) return report(s.error());
  auto options = coordinator_client_options(m, WorkerId{w.worker_id}, MemberRole::kRolloutWorker);
  if (!options) return report(options.error());
  if (!a.coordinator.empty()) options->endpoint = a.coordinator;
  const std::string endpoint = options->endpoint;
  auto client = CoordinatorClient::connect(std::move(*options));
  if (!client) return report(client.error());
  // The process's actor system: the rollout worker and its episode runners are actors
  // (rollout/rollout_worker_actor.h); the client's io thread owns the coordinator socket.
  ActorRuntime runtime({.scheduler_threads = 2});
  CoordinatorWorkSource source(**client);
  CoordinatedRollout loop(
      runtime.system(), source,
      [&w](const Assignment& as) -> Expected<PreparedEpisode> {
        const auto it = w.by_id.find(as.task_id.value());
        if (it == w.by_id.end())
          return make_error(ErrorCategory::kNotFound, "rollout.task",
                            "task '" + as.task_id.value() + "' is not in this worker's train set " +
                                w.m.paths.train_set.string());
        return prepare_episode(
            w, *it->second, episode_request_key(w.run.value(), as.episode_id.value(), as.attempt));
      },
      {.worker_id = WorkerId{w.worker_id},
       .concurrent_episodes = m.rollout.concurrent_episodes,
       .generation_slots = m.rollout.generation_slots},
      policy_probe(m));

  std::printf(
      "rollout worker %s: run %s, coordinator %s, %zu train-set tasks, policy %s, compile farm "
      "%s, %s\n",
      w.worker_id.c_str(), w.run.value().c_str(), endpoint.c_str(), w.tasks.size(),
      m.rollout.policy_backend.c_str(), w.farm_options.broker_endpoint.c_str(),
      evaluation_text(w).c_str());
  std::fflush(stdout);

  std::atomic<std::int64_t> started{0}, finished{0}, acknowledged{0};
  CoordinatedHooks hooks{.on_assigned = [&](const Assignment&) { ++started; },
                         .on_finished =
                             [&](const AssignmentResult& r) {
                               ++finished;
                               acknowledged += r.outcome == AssignmentOutcome::kAcknowledged;
                               const std::string attempt = std::to_string(r.assignment.attempt);
                               if (r.error) {
                                 log_error(*r.error, {{"episode", r.assignment.episode_id.value()},
                                                      {"attempt", attempt},
                                                      {"outcome", to_string(r.outcome)}});
                               } else if (!r.abort_reason.empty()) {
                                 log_warn("episode aborted (stored, not trained)",
                                          {{"episode", r.assignment.episode_id.value()},
                                           {"attempt", attempt},
                                           {"outcome", to_string(r.outcome)},
                                           {"reason", r.abort_reason}});
                               } else {
                                 log_info("episode finished",
                                          {{"episode", r.assignment.episode_id.value()},
                                           {"attempt", attempt},
                                           {"outcome", to_string(r.outcome)},
                                           {"reward", std::to_string(r.summary.final_reward)}});
                               }
                             }};
  std::atomic<bool> done{false};
  CoordinatedReport ran;
  std::thread runner([&] {
    ran = loop.run(w.run, hooks);
    done = true;
  });
  wait_for(
      w, signals, done,
      [&](int sig) {
        loop.request_stop();
        std::printf(
            "rollout worker %s stopping (signal %d): %lld episodes in flight are cut at their "
            "next policy call\n",
            w.worker_id.c_str(), sig, static_cast<long long>(started.load() - finished.load()));
        std::fflush(stdout);
      },
      [&] {
        return Beat{started.load() - finished.load(), acknowledged.load()};
      });
  runner.join();
  if (ran.error) log_error(*ran.error, {{"worker", w.worker_id}});
  std::printf(
      "rollout worker %s done: %llu acknowledged, %llu superseded, %llu unknown, %llu failed, "
      "%llu stopped, %llu not prepared%s\n",
      w.worker_id.c_str(), static_cast<unsigned long long>(ran.acknowledged),
      static_cast<unsigned long long>(ran.superseded), static_cast<unsigned long long>(ran.unknown),
      static_cast<unsigned long long>(ran.failed), static_cast<unsigned long long>(ran.stopped),
      static_cast<unsigned long long>(ran.not_prepared),
      ran.run_finished ? "; the run finished"
      : ran.error      ? "; the coordinator could not be reached"
                       : "");
  std::fflush(stdout);
  return ran.failed > 0 || ran.error ? 1 : 0;
}

// Store mode (see the file comment).
int serve_with_store(const ServeRolloutArgs& a, WorkerSetup& w, StopSignals& signals) {
  const Manifest& m = w.m;
  auto shard = parse_shard(a.shard);
  if (!shard) return report(shard.error());
  StoreOptions so = m.store;
  so.dir = a.store.empty() ? m.paths.store_dir.string() : a.store;
  auto store = RunStore::open(so, StoreMode::kWrite);
  if (!store) return report(store.error());
  if (auto saved = save_tasks(**store, w.tasks); !saved) return report(saved.error());

  RunStoreRollout rollout_store(**store);
  RolloutWorker worker(rollout_store,
                       {.worker_id = WorkerId{w.worker_id},
                        .concurrent_episodes = m.rollout.concurrent_episodes,
                        .generation_slots = m.rollout.generation_slots,
                        .max_attempts = static_cast<std::uint32_t>(m.rollout.max_attempts)});
  const std::string& me = w.worker_id;
  // The store's writer lock is ours: whoever left attempts in flight in this run is gone.
  auto recovered = worker.recover(w.run, worker.all_others_lost());
  if (!recovered) return report(recovered.error());
  for (const EpisodeAttemptRecord& lost : recovered->aborted)
    log_warn("a lost worker left this episode in flight; its attempt is aborted",
             {{"episode", lost.episode_id.value()}, {"attempt", std::to_string(lost.attempt)}});

  const EpisodeStage stage = stage_of(m.learner.stage);
  std::vector<RolloutJob> jobs;
  std::int64_t index = 0;
  for (const Task& task : w.tasks) {
    for (std::int64_t k = 0; k < m.rollout.episodes_per_task; ++k, ++index) {
      if (index % shard->count != shard->index) continue;
      jobs.push_back({.episode_id = EpisodeId{task.id.value() + "#" + std::to_string(k)},
                      .task_id = task.id,
                      .stage = stage,
                      .prepare = [&w, t = &task] { return prepare_episode(w, *t); }});
    }
  }

  std::printf(
      "rollout worker %s: run %s, %zu episodes (shard %s of %zu tasks x %lld), policy %s, "
      "compile farm %s, %s\n",
      me.c_str(), w.run.value().c_str(), jobs.size(), a.shard.c_str(), w.tasks.size(),
      static_cast<long long>(m.rollout.episodes_per_task), m.rollout.policy_backend.c_str(),
      w.farm_options.broker_endpoint.c_str(), evaluation_text(w).c_str());
  std::fflush(stdout);

  Counters counters;
  RolloutHooks hooks{.on_started = [&](const EpisodeAttemptRecord&) { ++counters.started; },
                     .on_finished =
                         [&](const JobResult& r) {
                           ++counters.finished;
                           counters.acknowledged += r.outcome == JobOutcome::kAcknowledged;
                           if (r.error) {
                             log_error(*r.error, {{"episode", r.episode_id.value()},
                                                  {"outcome", std::string(to_string(r.outcome))}});
                           } else {
                             log_info("episode finished",
                                      {{"episode", r.episode_id.value()},
                                       {"outcome", std::string(to_string(r.outcome))},
                                       {"attempt", std::to_string(r.attempt)}});
                           }
                         }};
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  RolloutReport ran;
  std::thread runner([&] {
    ran = worker.run(w.run, jobs, hooks, &stop);
    done = true;
  });
  // Heartbeat: a log line at debug level (there is no coordinator to send it to in this mode).
  wait_for(
      w, signals, done,
      [&](int sig) {
        stop = true;
        std::printf(
            "rollout worker %s stopping (signal %d): %lld episodes in flight are cut at "
            "their next policy call\n",
            me.c_str(), sig,
            static_cast<long long>(counters.started.load() - counters.finished.load()));
        std::fflush(stdout);
      },
      [&] {
        return Beat{counters.started.load() - counters.finished.load(),
                    counters.acknowledged.load()};
      });
  runner.join();

  const auto failed = ran.count(JobOutcome::kFailed) + ran.count(JobOutcome::kSuperseded);
  std::printf(
      "rollout worker %s done: %llu acknowledged, %llu already stored, %llu given up, "
      "%llu stopped, %llu not started, %llu failed\n",
      me.c_str(), static_cast<unsigned long long>(ran.count(JobOutcome::kAcknowledged)),
      static_cast<unsigned long long>(ran.count(JobOutcome::kAlreadyStored)),
      static_cast<unsigned long long>(ran.count(JobOutcome::kGivenUp)),
      static_cast<unsigned long long>(ran.count(JobOutcome::kStopped)),
      static_cast<unsigned long long>(ran.count(JobOutcome::kNotStarted)),
      static_cast<unsigned long long>(failed));
  std::fflush(stdout);
  return failed > 0 ? 1 : 0;
}

int serve_rollout_worker(const ServeRolloutArgs& a, StopSignals& signals) {
  if (a.use_coordinator && !a.store.empty())
    return report(bad("--coordinator and --store: the coordinator owns the run's store; give one"));
  auto setup = set_up(a);
  if (!setup) return report(setup.error());
  return a.use_coordinator ? serve_coordinated(a, *setup, signals)
                           : serve_with_store(a, *setup, signals);
}

}  // namespace

void add_rollout_commands(CLI::App& app, CommandResult& result) {
  // `serve` is made by add_compile_commands.
  CLI::App* serve = app.get_subcommand("serve");
  auto a = std::make_shared<ServeRolloutArgs>();
  CLI::App* worker = serve->add_subcommand(
      "rollout-worker",
      "One rollout worker of a run: runs episodes with the manifest's policy backend, the "
      "compile farm and (with [rollout] reward = 'full') the bench pool. With --coordinator it "
      "asks the run's coordinator for episodes and submits every trajectory to it; without, it "
      "runs its share of the train set and keeps every trajectory in the run store. SIGTERM "
      "stops it; episodes in flight are cut and rerun later.");
  worker->add_option("--manifest", a->manifest,
                     "the run's manifest (default: the built-in single-machine one)");
  worker
      ->add_option("--gpu", a->gpu,
                   "CUDA device of this worker's policy engine (names the worker; the HTTP and "
                   "replay backends use no GPU)")
      ->capture_default_str();
  worker
      ->add_option("--compile-farm", a->compile_farm,
                   "the compile farm's client endpoint (default: tcp://COORDINATOR:port_base+1)")
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kConnect); });
  worker
      ->add_option("--bench-pool", a->bench_pool,
                   "the bench pool's client endpoint (default: tcp://COORDINATOR:port_base+3)")
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kConnect); });
  CLI::Option* coordinator =
      worker
          ->add_option("--coordinator", a->coordinator,
                       "take episodes from the run's coordinator and submit trajectories to it; "
                       "without a value, tcp://COORDINATOR:port_base")
          ->expected(0, 1)
          ->check([](const std::string& s) {
            return s.empty() ? std::string() : endpoint_problem(s, EndpointUse::kConnect);
          });
  worker->add_option("--store", a->store,
                     "run store directory, without --coordinator (default: [store] dir)");
  worker->add_option(
      "--policy-endpoint", a->policy_endpoint,
      "the policy server's base URL, up to /v1 (default: [rollout] policy_endpoint)");
  worker->add_option("--policy-model", a->policy_model,
                     "the model name the policy server serves (default: [rollout] policy_model)");
  worker
      ->add_option("--shard", a->shard,
                   "S/N, without --coordinator: take the train-set episodes whose index is S "
                   "modulo N")
      ->capture_default_str();
  worker->add_option("--id", a->id, "worker id (default: <host>-<pid>-gpu<N>-<start ms>)");
  worker->callback([a, coordinator, &result] {
    a->use_coordinator = coordinator->count() > 0;
    StopSignals signals;  // first: every thread started below inherits the blocked mask
    result.exit_code = serve_rollout_worker(*a, signals);
  });
}

}  // namespace cuda_agent::cli
