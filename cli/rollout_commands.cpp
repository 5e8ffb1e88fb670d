// `cuda-agent serve rollout-worker --manifest M`: one rollout worker of a run, the process the
// launch plan starts per rollout GPU (cluster/launch_plan.h). It takes its share of the run's
// episodes (the [tasks] train_set, [rollout] episodes_per_task each, every --shard S/N-th one),
// runs them through the rollout worker (rollout/rollout_worker.h) with the policy backend of
// [rollout] policy_backend, compiles through the compile farm's broker and evaluates through the
// bench pool's broker, and counts an episode done only once the run store acknowledged it.
//
// Store: the worker opens the run store ([store] dir, or --store) as its writer, which makes
// RolloutWorker::all_others_lost() the right recovery rule (attempts a killed worker left in
// flight are aborted and rerun). Until the coordinator serves the store over the wire, one
// rollout worker per store is what works: a second one is refused at the store's writer lock.
//
// Brokers: the client endpoints of the compile farm and the bench pool, with the run's CURVE
// client key when [security] names the key files.
//
// Stopping: SIGTERM or SIGINT stops taking episodes; episodes in flight are cut at their next
// policy call and their attempts marked aborted (RolloutWorker's "Stopping" rule), so a restart
// runs them again. The process exits once every episode thread has returned (a tool call in
// flight finishes first, bounded by its deadline), or when its share is done.
//
// stdout (for people and tests): a start line, "rollout worker ID stopping (signal N)" when a
// signal arrived, and "rollout worker ID done: ..." with the counts. Exit codes: 0 the share
// finished or was stopped cleanly; 1 an episode or the store failed; 2 bad input.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

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
#include "rollout/farm_tools.h"
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

int serve_rollout_worker(const ServeRolloutArgs& a, StopSignals& signals) {
  auto loaded = load_manifest_or_default(a.manifest);
  if (!loaded) return report(loaded.error());
  const Manifest& m = *loaded;
  auto shard = parse_shard(a.shard);
  if (!shard) return report(shard.error());
  // The policy settings are checked before anything starts.
  if (m.rollout.policy_backend == "replay") {
    if (m.paths.replay_transcripts.empty() || !fs::exists(m.paths.replay_transcripts))
      return report(bad("[rollout] replay_transcripts: no such file or directory '" +
                        m.paths.replay_transcripts.string() + "'"));
  } else if (auto probe = make_policy(m, Task{}); !probe) {
    return report(probe.error());
  }

  StoreOptions so = m.store;
  so.dir = a.store.empty() ? m.paths.store_dir.string() : a.store;
  auto store = RunStore::open(so, StoreMode::kWrite);
  if (!store) return report(store.error());
  auto imported = load_tasks(m.paths.train_set.string(), {}, {});
  if (!imported) return report(imported.error());
  for (const ImportFailure& f : imported->failures)
    log_warn("train-set task not used", {{"where", f.where}, {"reason", f.reason}});
  if (imported->tasks.empty())
    return report(bad("no usable task in the train set " + m.paths.train_set.string()));
  if (auto saved = save_tasks(**store, imported->tasks); !saved) return report(saved.error());

  const std::string port_host = "tcp://" + m.coordinator().host + ":";
  PoolClientOptions farm_options{
      .broker_endpoint = a.compile_farm.empty() ? port_host + std::to_string(m.run.port_base + 1)
                                                : a.compile_farm};
  PoolClientOptions pool_options{
      .broker_endpoint =
          a.bench_pool.empty() ? port_host + std::to_string(m.run.port_base + 3) : a.bench_pool};
  auto curve = client_curve(m);  // a secured run: both brokers take only the run's client key
  if (!curve) return report(curve.error());
  farm_options.curve = *curve;
  pool_options.curve = *curve;
  auto compile = CompileClient::connect(farm_options);
  if (!compile) return report(compile.error());
  auto bench_client = BenchClient::connect(pool_options);
  if (!bench_client) return report(bench_client.error());
  std::shared_ptr<BenchClient> bench = std::move(*bench_client);

  const RunId run{m.run.name};
  RunStoreRollout rollout_store(**store);
  RolloutWorker worker(rollout_store,
                       {.worker_id = WorkerId{a.id.empty() ? default_worker_id(a.gpu) : a.id},
                        .concurrent_episodes = m.rollout.concurrent_episodes,
                        .generation_slots = m.rollout.generation_slots,
                        .max_attempts = static_cast<std::uint32_t>(m.rollout.max_attempts)});
  const std::string me = worker.options().worker_id.value();
  // The store's writer lock is ours: whoever left attempts in flight in this run is gone.
  auto recovered = worker.recover(run, worker.all_others_lost());
  if (!recovered) return report(recovered.error());
  for (const EpisodeAttemptRecord& lost : recovered->aborted)
    log_warn("a lost worker left this episode in flight; its attempt is aborted",
             {{"episode", lost.episode_id.value()}, {"attempt", std::to_string(lost.attempt)}});

  const FarmBuildSettings build{.target_arch = m.compile.target_arch,
                                .library_policy = m.compile.library_policy == "pure"
                                                      ? LibraryPolicy::kPure
                                                      : LibraryPolicy::kDefault,
                                .compile_timeout_ms = m.compile.job_wall_ms};
  const EpisodeStage stage = stage_of(m.learner.stage);
  std::vector<RolloutJob> jobs;
  std::int64_t index = 0;
  for (const Task& task : imported->tasks) {
    for (std::int64_t k = 0; k < m.rollout.episodes_per_task; ++k, ++index) {
      if (index % shard->count != shard->index) continue;
      jobs.push_back({.episode_id = EpisodeId{task.id.value() + "#" + std::to_string(k)},
                      .task_id = task.id,
                      .stage = stage,
                      .prepare = [&, t = &task]() -> Expected<PreparedEpisode> {
                        ASSIGN_OR_RETURN(std::unique_ptr<PolicyBackend> policy, make_policy(m, *t));
                        PreparedEpisode p;
                        p.policy = std::move(policy);
                        p.tools = std::make_unique<FarmEvaluationTools>(
                            **compile, build,
                            pool_bench_evaluator(bench, {.task_id = t->id.value(), .run_id = run}));
                        p.spec.model_py = t->source;
                        p.spec.policy = p.policy.get();
                        p.spec.tools = p.tools.get();
                        p.spec.budgets = {.max_turns = m.rollout.max_turns,
                                          .max_context_tokens = m.rollout.max_context_tokens,
                                          .wall_ms = m.rollout.episode_wall_ms};
                        p.spec.temperature = m.rollout.temperature;
                        p.spec.top_p = m.rollout.top_p;
                        p.spec.max_new_tokens_per_turn = m.rollout.max_new_tokens_per_turn;
                        return p;
                      }});
    }
  }

  std::printf(
      "rollout worker %s: run %s, %zu episodes (shard %s of %zu tasks x %lld), policy %s, "
      "compile farm %s, bench pool %s\n",
      me.c_str(), run.value().c_str(), jobs.size(), a.shard.c_str(), imported->tasks.size(),
      static_cast<long long>(m.rollout.episodes_per_task), m.rollout.policy_backend.c_str(),
      farm_options.broker_endpoint.c_str(), pool_options.broker_endpoint.c_str());
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
    ran = worker.run(run, jobs, hooks, &stop);
    done = true;
  });
  // Heartbeat and signals: every [run] heartbeat_interval_ms the worker reports what it holds
  // (there is no coordinator to send it to yet: a log line at debug level), and a signal stops it.
  const std::int64_t beat_ms = m.run.heartbeat_interval_ms;
  const timespec beat{.tv_sec = beat_ms / 1000, .tv_nsec = (beat_ms % 1000) * 1'000'000};
  for (std::uint64_t sequence = 1; !done; ++sequence) {
    const int sig = ::sigtimedwait(&signals.set, nullptr, &beat);
    if (sig > 0 && !stop) {
      stop = true;
      std::printf(
          "rollout worker %s stopping (signal %d): %lld episodes in flight are cut at "
          "their next policy call\n",
          me.c_str(), sig,
          static_cast<long long>(counters.started.load() - counters.finished.load()));
      std::fflush(stdout);
    }
    log_debug("rollout worker heartbeat",
              {{"worker", me},
               {"sequence", std::to_string(sequence)},
               {"in_flight", std::to_string(counters.started - counters.finished)},
               {"acknowledged", std::to_string(counters.acknowledged.load())}});
  }
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

}  // namespace

void add_rollout_commands(CLI::App& app, CommandResult& result) {
  // `serve` is made by add_compile_commands.
  CLI::App* serve = app.get_subcommand("serve");
  auto a = std::make_shared<ServeRolloutArgs>();
  CLI::App* worker = serve->add_subcommand(
      "rollout-worker",
      "One rollout worker of a run: runs its share of the train set's episodes with the "
      "manifest's policy backend, the compile farm and the bench pool, and keeps every "
      "trajectory in the run store. SIGTERM stops it; episodes in flight are aborted and rerun "
      "later.");
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
  worker->add_option("--store", a->store, "run store directory (default: [store] dir)");
  worker
      ->add_option("--shard", a->shard,
                   "S/N: take the train-set episodes whose index is S modulo N")
      ->capture_default_str();
  worker->add_option("--id", a->id, "worker id (default: <host>-<pid>-gpu<N>-<start ms>)");
  worker->callback([a, &result] {
    StopSignals signals;  // first: every thread started below inherits the blocked mask
    result.exit_code = serve_rollout_worker(*a, signals);
  });
}

}  // namespace cuda_agent::cli
