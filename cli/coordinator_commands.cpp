// `cuda-agent serve coordinator [--manifest M] [--store DIR] [--bind EP] [--metrics-port N]`: the
// run's coordinator process (issue 24), the one the launch plan starts on the coordinator node
// (cluster/launch_plan.h). It opens the run store as its only writer, saves the train set's tasks
// into it, starts the coordinator under its supervisor (coordinator/coordinator_supervisor.h) and
// the gateway on its socket (coordinator/coordinator_gateway.h), and serves until SIGINT/SIGTERM
// or until the run is finished and its last checkpoint recorded (then it exits 0).
//
// From the manifest: the run name and seed, the stage plan ([learner] stage: "all" runs every
// stage with steps > 0 in order, a named stage runs alone; single_turn_steps, agent_warmup_steps,
// agentic_steps), batch_episodes, staleness and checkpoint_every_steps from [learner], heartbeats
// from [run], the rollout concurrency (concurrent_episodes x rollout workers) as the bound on
// episodes in flight, CURVE from [security], and the manifest itself (stored in the RunRecord).
// Endpoints: tcp://*:port_base (cluster/launch_plan.h coordinator_bind_endpoint) and metrics on
// port_base + 5 (coordinator_metrics_port), unless --bind / --metrics-port say otherwise.
//
// stdout (for people and `cuda-agent train`): a start line, one line per learner step (step,
// stage, policy version, episodes trained / stale / in flight, the step's mean reward when the
// learner reported "reward/mean"), and a last line when it stops. Metrics: GET /metrics in the
// Prometheus text format. Exit codes: 0 finished or stopped by a signal; 3 the run failed in a way
// a restart cannot fix (e.g. every recent episode aborted: CoordinatorStatus::failure); 1 the
// coordinator failed (its supervisor gave up); 2 bad input.
#include <httplib.h>
#include <signal.h>

#include <caf/all.hpp>

#include <cstdio>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "actors/actor_runtime.h"
#include "actors/curve_keys.h"
#include "actors/endpoint.h"
#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/launch_plan.h"
#include "cluster/manifest.h"
#include "coordinator/coordinator_gateway.h"
#include "coordinator/coordinator_supervisor.h"
#include "core/log.h"
#include "storage/run_store.h"
#include "tasks/task_import.h"

namespace cuda_agent::cli {
namespace {

using namespace std::chrono_literals;

struct ServeCoordinatorArgs {
  std::string manifest;
  std::string store;
  std::string bind;
  std::int64_t metrics_port = -1;  // -1: port_base + 5
};

Error bad(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "cli.coordinator", what);
}

// [learner] stage and the three step counts as the coordinator's plan.
Expected<std::vector<StagePlan>> stage_plan(const LearnerOptions& l) {
  struct Named {
    const char* name;
    std::int64_t steps;
    const char* key;
  };
  const Named stages[] = {{"single-turn-ppo", l.single_turn_steps, "single_turn_steps"},
                          {"agent-warmup", l.agent_warmup_steps, "agent_warmup_steps"},
                          {"agentic-ppo", l.agentic_steps, "agentic_steps"}};
  std::vector<StagePlan> plan;
  for (const Named& n : stages) {
    if (l.stage != "all" && l.stage != n.name) continue;
    if (n.steps <= 0) {
      if (l.stage == n.name) {
        return bad("[learner] stage = '" + l.stage + "' runs that stage alone, but [learner] " +
                   n.key + " = 0 gives it no steps");
      }
      continue;
    }
    ASSIGN_OR_RETURN(EpisodeStage stage, stage_from_name(n.name));
    plan.push_back({stage, static_cast<std::uint64_t>(n.steps)});
  }
  if (plan.empty()) {
    return bad(
        "[learner] stage = 'all' with single_turn_steps, agent_warmup_steps and agentic_steps "
        "all 0: nothing to train");
  }
  return plan;
}

Expected<std::optional<CurveServerKeys>> server_curve(const Manifest& m) {
  if (!m.security.enabled()) return std::optional<CurveServerKeys>();
  ASSIGN_OR_RETURN(CurveKeyPair server, read_curve_key_file(m.paths.server_secret_key_file));
  ASSIGN_OR_RETURN(CurveKeyPair client, read_curve_key_file(m.paths.client_secret_key_file));
  return std::optional<CurveServerKeys>(
      CurveServerKeys{.server = server, .allowed_client_public_z85 = {client.public_z85}});
}

// The Prometheus text exposition (version 0.0.4) of the coordinator's counters.
std::string metrics_text(const RunId& run, const CoordinatorStatus& s,
                         const CoordinatorGatewayCounters& g) {
  std::ostringstream out;
  const std::string r = "run=\"" + run.value() + "\"";
  auto gauge = [&](const char* name, const char* help, const char* type) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  gauge("cuda_agent_step", "Learner steps recorded by the coordinator.", "gauge");
  out << "cuda_agent_step{" << r << "} " << s.step << '\n';
  gauge("cuda_agent_policy_version", "The policy version published to rollout workers.", "gauge");
  out << "cuda_agent_policy_version{" << r << "} " << s.version.value() << '\n';
  gauge("cuda_agent_stage", "1 for the stage the run is in.", "gauge");
  out << "cuda_agent_stage{" << r << ",stage=\"" << to_string(s.stage) << "\"} 1\n";
  gauge("cuda_agent_run_finished", "1 once every stage of the plan is trained.", "gauge");
  out << "cuda_agent_run_finished{" << r << "} " << (s.finished ? 1 : 0) << '\n';
  gauge("cuda_agent_episodes_total",
        "Episodes by state: trained, stale, orphaned (ended), waiting for a batch, in flight on a "
        "worker, queued for a rerun.",
        "gauge");
  const std::pair<const char*, std::uint64_t> states[] = {
      {"trained", s.trained}, {"stale", s.stale},         {"orphaned", s.orphaned},
      {"waiting", s.waiting}, {"in_flight", s.in_flight}, {"queued", s.queued}};
  for (const auto& [state, n] : states) {
    out << "cuda_agent_episodes_total{" << r << ",state=\"" << state << "\"} " << n << '\n';
  }
  gauge("cuda_agent_admission", "Staleness admission counters (accepted, running, rejected).",
        "gauge");
  out << "cuda_agent_admission{" << r << ",counter=\"accepted\"} " << s.accepted << '\n';
  out << "cuda_agent_admission{" << r << ",counter=\"running\"} " << s.running << '\n';
  out << "cuda_agent_admission{" << r << ",counter=\"rejected\"} " << s.rejected << '\n';
  gauge("cuda_agent_episodes_aborted",
        "Episodes stored aborted before a reward since the coordinator started (in stale).",
        "gauge");
  out << "cuda_agent_episodes_aborted{" << r << "} " << s.aborted << '\n';
  gauge("cuda_agent_members", "Members the coordinator has heard from and not lost.", "gauge");
  out << "cuda_agent_members{" << r << "} " << s.members << '\n';
  gauge("cuda_agent_members_degraded",
        "Live members whose heartbeats report them degraded (a node agent that gave up a process).",
        "gauge");
  out << "cuda_agent_members_degraded{" << r << "} " << s.degraded.size() << '\n';
  gauge("cuda_agent_checkpoints", "Checkpoints recorded since the coordinator started.", "gauge");
  out << "cuda_agent_checkpoints{" << r << "} " << s.checkpoints << '\n';
  gauge("cuda_agent_gateway_frames_total", "Frames through the coordinator's gateway.", "counter");
  out << "cuda_agent_gateway_frames_total{" << r << ",direction=\"in\"} " << g.frames_in << '\n';
  out << "cuda_agent_gateway_frames_total{" << r << ",direction=\"out\"} " << g.frames_out << '\n';
  out << "cuda_agent_gateway_frames_total{" << r << ",direction=\"refused\"} " << g.refused << '\n';
  return out.str();
}

// Asks the supervisor for its coordinator, and that for its status; nullopt when either does
// not answer in time (a restart is under way) or the supervisor is gone.
std::optional<CoordinatorStatus> ask_status(caf::actor_system& system,
                                            const coordinator_supervisor& sup,
                                            coordinator_actor* current) {
  caf::scoped_actor self{system};
  coordinator_actor c;
  self->request(sup, 2s, current_atom::value)
      .receive([&](coordinator_actor& got) { c = std::move(got); }, [](caf::error&) {});
  if (current) *current = c;
  if (!c) return std::nullopt;
  std::optional<CoordinatorStatus> out;
  self->request(c, 2s, status_atom::value)
      .receive([&](CoordinatorStatus& s) { out = s; }, [](caf::error&) {});
  return out;
}

std::optional<double> step_reward(const RunStore& store, const RunId& run, std::uint64_t step) {
  std::optional<double> out;
  (void)store.scan_metrics(run, "reward/mean", step, [&](const MetricRecord& m) {
    if (m.step == step) out = m.value;
    return false;
  });
  return out;
}

int serve_coordinator(const ServeCoordinatorArgs& a, StopSignals& signals) {
  auto loaded = load_manifest_or_default(a.manifest);
  if (!loaded) return report(loaded.error());
  const Manifest& m = *loaded;
  auto plan = stage_plan(m.learner);
  if (!plan) return report(plan.error());
  auto curve = server_curve(m);
  if (!curve) return report(curve.error());
  const std::int64_t metrics_port =
      a.metrics_port >= 0 ? a.metrics_port : coordinator_metrics_port(m);

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

  CoordinatorOptions o;
  o.run = RunId{m.run.name};
  o.stages = *plan;
  for (const Task& t : imported->tasks) o.tasks.push_back(t.id);
  o.seed = static_cast<std::uint64_t>(m.run.seed);
  o.group_size = static_cast<std::uint64_t>(m.learner.group_size);
  o.staleness = {.batch_episodes = static_cast<std::uint64_t>(m.learner.batch_episodes),
                 .max_staleness = static_cast<std::uint64_t>(m.learner.staleness),
                 .max_concurrent = static_cast<std::uint64_t>(m.rollout.concurrent_episodes) *
                                   static_cast<std::uint64_t>(rollout_workers(m))};
  o.membership = {
      .heartbeat_interval_ms = std::chrono::milliseconds(m.run.heartbeat_interval_ms),
      .heartbeat_timeout_ms = std::chrono::milliseconds(m.run.heartbeat_timeout_ms),
      .first_heartbeat_grace_ms = std::chrono::milliseconds(m.run.first_heartbeat_grace_ms)};
  o.checkpoint_every_steps = static_cast<std::uint64_t>(m.learner.checkpoint_every_steps);
  o.vacancy_timeout_ms = std::chrono::milliseconds(m.run.role_vacancy_timeout_ms);
  o.manifest = render_manifest(m);

  std::unique_ptr<CoordinatorStore> adapter = make_run_store_adapter(**store);
  ActorRuntime runtime({.scheduler_threads = 2});  // after the store: actors end before it
  caf::actor_system& system = runtime.system();
  coordinator_supervisor sup = spawn_coordinator_supervisor(system, o, *adapter);
  CoordinatorGatewayOptions go;
  go.endpoint = a.bind.empty() ? coordinator_bind_endpoint(m) : a.bind;
  go.run = o.run;
  go.learner_silence_timeout = std::chrono::milliseconds(m.run.heartbeat_timeout_ms);
  go.curve = *curve;
  auto gateway = CoordinatorGateway::start(system, go, sup);
  if (!gateway) {
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
    return report(gateway.error());
  }

  // The metrics endpoint serves the status the loop below last read (no CAF on its threads).
  std::mutex shown_mutex;
  std::optional<CoordinatorStatus> shown_status;
  httplib::Server metrics;
  std::thread metrics_thread;
  if (metrics_port > 0) {
    metrics.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      std::optional<CoordinatorStatus> s;
      {
        std::lock_guard lock(shown_mutex);
        s = shown_status;
      }
      if (!s) {
        res.status = 503;
        res.set_content("coordinator starting\n", "text/plain");
        return;
      }
      res.set_content(metrics_text(o.run, *s, (*gateway)->counters()), "text/plain; version=0.0.4");
    });
    if (!metrics.bind_to_port("0.0.0.0", static_cast<int>(metrics_port))) {
      (*gateway)->stop();
      caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
      return report(make_error(ErrorCategory::kUnavailable, "cli.metrics_bind",
                               "cannot listen for metrics on port " + std::to_string(metrics_port) +
                                   " (--metrics-port 0 turns the endpoint off)"));
    }
    metrics_thread = std::thread([&] { metrics.listen_after_bind(); });
  }

  std::string stages;
  for (const StagePlan& p : o.stages)
    stages += (stages.empty() ? "" : ", ") + to_string(p.stage) + " x" + std::to_string(p.steps);
  const std::string groups =
      o.group_size > 1 ? " (each task " + std::to_string(o.group_size) + " times in a row)" : "";
  std::printf(
      "coordinator: run %s, %zu tasks, stages %s, batch %llu%s, staleness %llu; gateway %s%s",
      o.run.value().c_str(), o.tasks.size(), stages.c_str(),
      static_cast<unsigned long long>(o.staleness.batch_episodes), groups.c_str(),
      static_cast<unsigned long long>(o.staleness.max_staleness), (*gateway)->endpoint().c_str(),
      go.curve ? " (CURVE)" : "");
  if (metrics_port > 0)
    std::printf(", metrics http://0.0.0.0:%lld/metrics", (long long)metrics_port);
  std::printf("\n");
  std::fflush(stdout);

  // Poll the status twice a second: one line per recorded step, finished once the last stage
  // ended and its checkpoint is recorded (or no learner is left to write one: then after a
  // while, with a note).
  int exit_code = 0;
  std::optional<std::uint64_t> last_step;
  std::optional<std::chrono::steady_clock::time_point> finished_since;
  const timespec tick{.tv_sec = 0, .tv_nsec = 500'000'000};
  coordinator_actor current;
  for (;;) {
    const int sig = ::sigtimedwait(&signals.set, nullptr, &tick);
    if (sig > 0) {
      std::printf("coordinator stopping (signal %d)\n", sig);
      break;
    }
    std::optional<CoordinatorStatus> s = ask_status(system, sup, &current);
    if (!s) {
      if (!current) {
        // The supervisor is gone: it escalated after too many restarts (logged).
        caf::scoped_actor probe{system};
        bool alive = false;
        probe->request(sup, 1s, current_atom::value)
            .receive([&](coordinator_actor&) { alive = true; }, [](caf::error&) {});
        if (!alive) {
          std::printf("coordinator failed: its supervisor gave up (see the log)\n");
          exit_code = 1;
          break;
        }
      }
      continue;
    }
    {
      std::lock_guard lock(shown_mutex);
      shown_status = s;
    }
    if (!last_step) last_step = s->step;
    for (std::uint64_t step = *last_step + 1; step <= s->step; ++step) {
      std::optional<double> reward = step_reward(**store, o.run, step - 1);
      std::printf(
          "step %llu  stage %s  policy v%llu  episodes trained %llu stale %llu in flight %llu%s\n",
          static_cast<unsigned long long>(step), to_string(s->stage).c_str(),
          static_cast<unsigned long long>(s->version.value()),
          static_cast<unsigned long long>(s->trained), static_cast<unsigned long long>(s->stale),
          static_cast<unsigned long long>(s->in_flight),
          reward ? ("  reward " + std::to_string(*reward)).c_str() : "");
    }
    if (s->step != *last_step) std::fflush(stdout);
    last_step = s->step;
    if (!s->failure.empty()) {
      // A restart would fail the same way: exit 3 tells `train` and node agents not to retry.
      std::printf("run %s failed: %s\n", o.run.value().c_str(), s->failure.c_str());
      exit_code = 3;
      break;
    }
    if (!s->finished) continue;
    Expected<std::optional<CheckpointRecord>> cp = adapter->latest_checkpoint(o.run);
    if (cp && *cp && (*cp)->step >= s->step) {
      std::printf("run %s finished: %llu steps, policy v%llu, last checkpoint %s\n",
                  o.run.value().c_str(), static_cast<unsigned long long>(s->step),
                  static_cast<unsigned long long>(s->version.value()), (*cp)->path.c_str());
      break;
    }
    if (!finished_since) finished_since = std::chrono::steady_clock::now();
    if (std::chrono::steady_clock::now() - *finished_since > 10min) {
      std::printf(
          "run %s finished at step %llu; its last checkpoint was not recorded (no learner "
          "answered in 10 minutes)\n",
          o.run.value().c_str(), static_cast<unsigned long long>(s->step));
      break;
    }
  }
  std::fflush(stdout);
  if (metrics_port > 0) {
    metrics.stop();
    if (metrics_thread.joinable()) metrics_thread.join();
  }
  (*gateway)->stop();
  // A coordinator that exits with user_shutdown ends its supervisor too.
  if (current) caf::anon_send_exit(current, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  return exit_code;
}

}  // namespace

void add_coordinator_command(CLI::App& serve, CommandResult& result) {
  auto a = std::make_shared<ServeCoordinatorArgs>();
  CLI::App* cmd = serve.add_subcommand(
      "coordinator",
      "The run's coordinator: owns the run store (its only writer), hands out episodes, forms "
      "batches for the learner, records steps and checkpoints; serves until the run is finished "
      "or SIGTERM.");
  cmd->add_option("--manifest", a->manifest,
                  "the run's manifest (default: the built-in single-machine one)");
  cmd->add_option("--store", a->store, "run store directory (default: [store] dir)");
  cmd->add_option("--bind", a->bind, "endpoint the gateway listens on (default: tcp://*:port_base)")
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kBind); });
  cmd->add_option("--metrics-port", a->metrics_port,
                  "port of the Prometheus /metrics endpoint (default: port_base + 5; 0: off)")
      ->check(CLI::Range(0, 65535));
  cmd->callback([a, &result] {
    StopSignals signals;  // first: every thread started below inherits the blocked mask
    result.exit_code = serve_coordinator(*a, signals);
  });
}

}  // namespace cuda_agent::cli
