// run_simulation: see sim.h.
#include "cluster/sim.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "actors/pool_client.h"
#include "actors/pool_worker.h"
#include "cluster/launch_plan.h"
#include "cluster/local_processes.h"
#include "cluster/manifest.h"
#include "cluster/manifest_overrides.h"
#include "cluster/sim_roles.h"
#include "coordinator/coordinator_client.h"
#include "core/clock.h"
#include "core/proc_stat.h"
#include "tasks/synth.h"

namespace cuda_agent {
namespace {

using sim::Clock;
using sim::EventLoop;
using sim::ms_since;
using sim::RolloutWorker;
using sim::sim_handler;
using sim::SimLearner;
using sim::World;
using Ms = std::chrono::milliseconds;
namespace fs = std::filesystem;

Error bad(const std::string& what) { return make_error(ErrorCategory::kInvalidInput, "sim", what); }
Error failed(const std::string& what) {
  return make_error(ErrorCategory::kUnavailable, "sim.failed", what);
}

// A port block [base, base + 6) nobody listens on now.
bool ports_free(std::int64_t base) {
  for (std::int64_t p = base; p < base + 6; ++p) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(p));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (!ok) return false;
  }
  return true;
}

Expected<std::int64_t> free_port_base(std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ static_cast<std::uint64_t>(::getpid()) ^
                      static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()));
  // Below Linux's ephemeral range (32768-60999): a port found free there can be taken as the
  // source port of any outgoing connection before the coordinator binds it (seen once in CI-like
  // load: the sim's coordinator never answered).
  for (int i = 0; i < 50; ++i) {
    const std::int64_t base = 20'000 + static_cast<std::int64_t>(rng() % 1200) * 10;
    if (ports_free(base)) return base;
  }
  return failed("no free block of 6 ports found between 20000 and 32000");
}

// CPU seconds (user + system) of a process, from /proc/PID/stat; -1 when it cannot be read.
double cpu_seconds(pid_t pid) {
  const auto p = read_proc_stat(pid);
  return p ? p->cpu_seconds() : -1;
}

std::uint64_t peak_rss_mb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) / 1024;
  }
  return 0;
}

// Writes `count` synthetic tasks (the synthesizer's, as `tasks synth` writes them) into `dir`.
Status write_tasks(const fs::path& dir, std::int64_t count, std::uint64_t seed) {
  fs::create_directories(dir);
  SynthOptions o;
  o.seed = seed;
  ASSIGN_OR_RETURN(std::vector<SynthTask> tasks,
                   synthesize(o, 0, static_cast<std::uint64_t>(count), {}));
  for (const SynthTask& t : tasks) {
    std::ofstream f(dir / (t.name + ".py"));
    f << t.source;
    if (!f) return failed("cannot write " + (dir / (t.name + ".py")).string());
  }
  return Status::ok();
}

// The manifest the children run: the user's, with the store, checkpoints, tasks and ports of
// this simulation, key files made absolute, and concurrent_episodes times the load.
Expected<std::pair<std::string, Manifest>> sim_manifest(const SimOptions& o, const fs::path& work,
                                                        std::int64_t port_base) {
  std::ifstream in(o.manifest);
  if (!in) return bad("cannot read the manifest " + o.manifest.string());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const fs::path base = fs::absolute(o.manifest).parent_path();
  ASSIGN_OR_RETURN(text, apply_manifest_settings(text, o.settings));
  ASSIGN_OR_RETURN(Manifest user, parse_manifest(text, o.manifest.string(), base));
  auto quoted = [](const fs::path& p) { return "\"" + p.string() + "\""; };
  std::vector<std::string> sets = {
      "store.dir=" + quoted(work / "store"),
      "run.checkpoint_dir=" + quoted(work / "checkpoints"),
      "tasks.train_set=" + quoted(work / "tasks"),
      "tasks.eval_set=\"\"",
      "run.port_base=" + std::to_string(port_base),
      "rollout.concurrent_episodes=" +
          std::to_string(static_cast<std::int64_t>(
              std::llround(static_cast<double>(user.rollout.concurrent_episodes) * o.load)))};
  if (user.security.enabled()) {
    sets.push_back("security.server_secret_key_file=" + quoted(user.paths.server_secret_key_file));
    sets.push_back("security.client_secret_key_file=" + quoted(user.paths.client_secret_key_file));
    sets.push_back("security.server_public_key_file=" + quoted(user.paths.server_public_key_file));
  }
  ASSIGN_OR_RETURN(text, apply_manifest_settings(text, sets));
  ASSIGN_OR_RETURN(Manifest m, parse_manifest(text, (work / "sim.toml").string(), work));
  return std::make_pair(std::move(text), std::move(m));
}

std::int64_t count_processes(const std::vector<NodePlan>& plan, const std::string& serve_role) {
  std::int64_t n = 0;
  for (const NodePlan& node : plan)
    for (const ProcessSpec& p : node.processes)
      if (p.argv.size() > 2 && p.argv[1] == "serve" && p.argv[2] == serve_role) ++n;
  return n;
}

}  // namespace

Expected<SimReport> run_simulation(const SimOptions& options) {
  if (options.manifest.empty()) return bad("--manifest is required");
  if (options.speedup < 1)
    return bad("--speedup must be >= 1, not " + std::to_string(options.speedup));
  if (options.load < 1) return bad("--load must be >= 1, not " + std::to_string(options.load));
  if (options.duration.count() < 1) return bad("--duration must be at least 1 s");
  if (options.tasks < 1) return bad("--tasks must be at least 1");

  auto world = std::make_unique<World>();
  World& w = *world;
  w.options = options;
  fs::path work = options.work_dir;
  std::error_code ec;
  if (work.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "cuda-agent-sim-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return failed("cannot make a directory under /tmp");
    work = tmpl;
  } else if (fs::exists(work) && !fs::is_empty(work, ec)) {
    return bad("the work directory " + work.string() +
               " is not empty (the simulation needs a fresh store)");
  }
  fs::create_directories(work, ec);
  if (ec) return failed("cannot create " + work.string() + ": " + ec.message());
  work = fs::absolute(work);
  w.options.work_dir = work;

  std::int64_t port_base = options.port_base;
  if (port_base == 0) {
    ASSIGN_OR_RETURN(port_base, free_port_base(options.seed));
  }
  ASSIGN_OR_RETURN(auto prepared, sim_manifest(options, work, port_base));
  {
    std::ofstream f(work / "sim.toml");
    f << prepared.first;
    if (!f) return failed("cannot write " + (work / "sim.toml").string());
  }
  w.manifest = std::move(prepared.second);
  const Manifest& m = w.manifest;
  w.run = RunId{m.run.name};
  ASSIGN_OR_RETURN(w.curve, client_curve(m));
  RETURN_IF_ERROR(write_tasks(work / "tasks", options.tasks, options.seed));

  const std::vector<NodePlan> plan = plan_launch(m, (work / "sim.toml").string());
  SimReport report;
  report.work_dir = work;
  report.speedup = options.speedup;
  report.load = options.load;
  report.rollout_workers = static_cast<std::int64_t>(
      std::llround(static_cast<double>(rollout_workers(m)) * options.load));
  report.learner_ranks = std::max<std::int64_t>(1, count_processes(plan, "learner"));
  report.compile_workers = count_processes(plan, "compile-worker");
  report.bench_workers = count_processes(plan, "bench-worker");
  const std::int64_t jobs = m.compile.jobs_per_worker > 0 ? m.compile.jobs_per_worker : 16;
  report.compile_slots = report.compile_workers * jobs;
  report.bench_slots = report.bench_workers;
  const std::int64_t per_worker = m.rollout.concurrent_episodes;  // already times the load
  // The plan's workers x the load run the load's share each: the same total as the coordinator's
  // bound (concurrent_episodes x the plan's workers).
  const std::int64_t slots_per_worker = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::llround(static_cast<double>(per_worker) / options.load)));
  report.episode_slots = slots_per_worker * report.rollout_workers;
  report.members = report.rollout_workers + 1 + report.compile_workers + report.bench_workers;
  report.heartbeat_timeout_ms = m.run.heartbeat_timeout_ms;
  w.learner_ranks = report.learner_ranks;
  if (report.rollout_workers < 1) return bad("the manifest's plan starts no rollout worker");
  if (report.compile_workers < 1) return bad("the manifest's plan starts no compile worker");

  // Trajectory bytes: 16 MiB of a seeded stream, sliced per episode.
  {
    std::mt19937_64 rng(options.seed);
    w.random_bytes.resize(16u << 20);
    for (std::size_t i = 0; i + 8 <= w.random_bytes.size(); i += 8) {
      const std::uint64_t v = rng();
      std::memcpy(w.random_bytes.data() + i, &v, 8);
    }
  }

  // The real children: coordinator (with the store) and the two brokers.
  LocalProcesses children({.log_dir = (work / "logs").string(),
                           .max_restarts = 0,
                           .stop_grace_ms = Ms(10'000),
                           .cuda_agent_exe = options.cuda_agent_exe});
  const std::string coordinator_ep = run_endpoint(m, RunPort::kCoordinator, "127.0.0.1");
  RETURN_IF_ERROR(children.start(ProcessSpec{
      .role = "coordinator",
      .name = "coordinator",
      .argv = {"cuda-agent", "serve", "coordinator", "--manifest", (work / "sim.toml").string(),
               "--bind", coordinator_ep, "--metrics-port", "0"}}));
  RETURN_IF_ERROR(
      children.start(ProcessSpec{.role = "coordinator",
                                 .name = "compile-farm",
                                 .argv = {"cuda-agent", "serve", "compile-farm", "--manifest",
                                          (work / "sim.toml").string()}}));
  if (report.bench_workers > 0) {
    RETURN_IF_ERROR(
        children.start(ProcessSpec{.role = "coordinator",
                                   .name = "bench-pool",
                                   .argv = {"cuda-agent", "serve", "bench-pool", "--manifest",
                                            (work / "sim.toml").string()}}));
  }
  auto pid_of = [&](const std::string& name) -> pid_t {
    for (const ChildInfo& c : children.children())
      if (c.name == name) return c.pid;
    return -1;
  };
  auto log_of = [&](const std::string& name) { return work / "logs" / (name + ".log"); };
  auto client_options = [&](const std::string& member, MemberRole role) {
    return CoordinatorClientOptions{.endpoint = coordinator_ep,
                                    .run = w.run,
                                    .member = WorkerId{member},
                                    .role = role,
                                    .request_timeout = Ms(30'000),
                                    .heartbeat_interval = Ms(m.run.heartbeat_interval_ms),
                                    .curve = w.curve};
  };

  // Wait for the coordinator to answer (it imports the tasks first).
  ASSIGN_OR_RETURN(auto monitor, CoordinatorClient::connect(
                                     client_options("sim-rollout-0", MemberRole::kRolloutWorker)));
  {
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (true) {
      for (const ChildEvent& e : children.poll()) {
        if (e.kind == ChildEventKind::kExited)
          return failed(e.name + " exited with " + std::to_string(e.exit_code) +
                        " while starting; its log: " + e.log_path);
      }
      if (monitor->status()) break;
      if (Clock::now() > deadline)
        return failed("the coordinator did not answer within 120 s; its log: " +
                      log_of("coordinator").string());
      if (options.stop && options.stop()) return failed("stopped while starting");
    }
  }

  const auto t_start = Clock::now();
  const double cpu0_coord = cpu_seconds(pid_of("coordinator"));
  const double cpu0_farm = cpu_seconds(pid_of("compile-farm"));
  const double cpu0_bench = report.bench_workers > 0 ? cpu_seconds(pid_of("bench-pool")) : 0;
  const double cpu0_self = cpu_seconds(::getpid());

  // Simulated compile and bench workers.
  std::vector<std::unique_ptr<PoolWorker>> pool_workers;
  auto start_workers = [&](bool bench, std::int64_t count, std::int64_t slots) -> Status {
    for (std::int64_t i = 0; i < count; ++i) {
      PoolWorkerOptions o;
      o.broker_endpoint =
          run_endpoint(m, bench ? RunPort::kBenchWorkers : RunPort::kCompileWorkers, "127.0.0.1");
      o.worker_id =
          WorkerId{std::string(bench ? "sim-bench-" : "sim-compile-") + std::to_string(i)};
      o.slots = slots;
      o.heartbeat_interval_ms = m.run.heartbeat_interval_ms;
      o.curve = w.curve;
      ASSIGN_OR_RETURN(auto worker,
                       PoolWorker::start(
                           o, sim_handler(w, bench, options.seed * 7919 + i + (bench ? 1000 : 0))));
      pool_workers.push_back(std::move(worker));
    }
    return Status::ok();
  };
  RETURN_IF_ERROR(start_workers(false, report.compile_workers, jobs));
  RETURN_IF_ERROR(start_workers(true, report.bench_workers, 1));

  // Rollout workers: their clients now, their slots once everything else runs.
  std::vector<std::unique_ptr<RolloutWorker>> workers;
  for (std::int64_t i = 0; i < report.rollout_workers; ++i) {
    auto rw = std::make_unique<RolloutWorker>();
    rw->id = WorkerId{"sim-rollout-" + std::to_string(i)};
    if (i == 0) {
      rw->coordinator = std::move(monitor);
    } else {
      ASSIGN_OR_RETURN(rw->coordinator, CoordinatorClient::connect(client_options(
                                            rw->id.value(), MemberRole::kRolloutWorker)));
    }
    PoolClientOptions po{.broker_endpoint = run_endpoint(m, RunPort::kCompileClients, "127.0.0.1"),
                         .curve = w.curve};
    ASSIGN_OR_RETURN(rw->compile, PoolClient::connect(po));
    if (report.bench_workers > 0) {
      po.broker_endpoint = run_endpoint(m, RunPort::kBenchClients, "127.0.0.1");
      ASSIGN_OR_RETURN(rw->bench, PoolClient::connect(po));
    }
    workers.push_back(std::move(rw));
  }

  // The silent probe: a member that heartbeats, then goes quiet at probe_after.
  const std::string probe_id = "sim-silent-probe";
  std::unique_ptr<CoordinatorClient> probe;
  if (options.probe_after.count() > 0) {
    ASSIGN_OR_RETURN(probe,
                     CoordinatorClient::connect(client_options(probe_id, MemberRole::kEngine)));
  }

  // The learner. Nothing below returns before it is joined.
  SimLearner learner(w);
  std::atomic<bool> learner_stop{false};
  Status learner_status = Status::ok();
  std::thread learner_thread([&] {
    learner_status = serve_learner(client_options("sim-learner-rank0", MemberRole::kLearner),
                                   learner, learner_stop);
  });

  CoordinatorClient& status_client = *workers.front()->coordinator;
  auto loop = std::make_unique<EventLoop>(w, 32);
  {
    std::mt19937_64 seeds(options.seed);
    // Slots start spread over the first 10 s (real), as workers come up one by one.
    std::uniform_real_distribution<double> start(0, 10'000);
    for (auto& rw : workers) {
      for (std::int64_t s = 0; s < slots_per_worker; ++s) {
        sim::start_slot(w, *loop, *rw, seeds(), start(seeds));
      }
    }
  }

  std::optional<Clock::time_point> probe_silent_at;
  std::ifstream coordinator_log(log_of("coordinator"));
  std::string log_tail;

  // The run, sampled once a second.
  const auto real_duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
          static_cast<double>(options.duration.count()) / options.speedup));
  std::vector<std::int64_t> in_flight;
  auto next_sample = t_start;
  auto next_progress = t_start + std::chrono::seconds(10);
  CoordinatorStatus last_status;
  while (Clock::now() - t_start < real_duration && !(options.stop && options.stop())) {
    std::this_thread::sleep_for(Ms(100));
    const auto now = Clock::now();
    for (const ChildEvent& e : children.poll()) {
      if (e.kind == ChildEventKind::kExited)
        report.child_exits.push_back(e.name + ": " + std::to_string(e.exit_code));
    }
    if (probe && !probe_silent_at && now - t_start >= options.probe_after) {
      probe.reset();  // its io thread, and so its heartbeats, end here
      probe_silent_at = Clock::now();
    }
    // The coordinator's log, as it grows: suspect and lost lines.
    {
      std::string chunk;
      coordinator_log.clear();
      std::getline(coordinator_log, chunk, '\0');
      log_tail += chunk;
      std::size_t nl;
      while ((nl = log_tail.find('\n')) != std::string::npos) {
        const std::string line = log_tail.substr(0, nl);
        log_tail.erase(0, nl + 1);
        const bool suspect = line.find(" is suspect") != std::string::npos;
        const bool lost = line.find(" is lost") != std::string::npos;
        if (!suspect && !lost) continue;
        if (line.find(probe_id) != std::string::npos && probe_silent_at) {
          const double s = std::chrono::duration<double>(Clock::now() - *probe_silent_at).count();
          if (suspect && report.probe_suspect_s < 0) report.probe_suspect_s = s;
          if (lost && report.probe_lost_s < 0) report.probe_lost_s = s;
        } else if (suspect) {
          ++report.false_suspects;
        } else {
          ++report.false_lost;
        }
      }
    }
    if (now >= next_sample) {
      next_sample += std::chrono::seconds(1);
      if (auto s = status_client.status()) {
        last_status = *s;
        in_flight.push_back(static_cast<std::int64_t>(s->in_flight));
      }
      if (auto st = workers.front()->compile->stats(Ms(2000))) {
        report.compile_queue_max =
            std::max<std::uint64_t>(report.compile_queue_max, st->queue_depth);
        report.compile_queue_last = st->queue_depth;
        report.broker_workers_lost = st->workers_lost;
      }
      if (workers.front()->bench) {
        if (auto st = workers.front()->bench->stats(Ms(2000))) {
          report.bench_queue_max = std::max<std::uint64_t>(report.bench_queue_max, st->queue_depth);
          report.bench_queue_last = st->queue_depth;
          report.broker_workers_lost += st->workers_lost;
        }
      }
    }
    if (options.progress && now >= next_progress) {
      next_progress += std::chrono::seconds(10);
      const double real = std::chrono::duration<double>(now - t_start).count();
      char line[400];
      std::snprintf(line, sizeof line,
                    "sim [%5.0f s real, %6.0f s simulated] step %llu, in flight %llu, submitted "
                    "%llu, trained %llu, compile queue %llu, bench queue %llu, failed calls %llu",
                    real, real * options.speedup, static_cast<unsigned long long>(last_status.step),
                    static_cast<unsigned long long>(last_status.in_flight),
                    static_cast<unsigned long long>(w.submitted.load()),
                    static_cast<unsigned long long>(last_status.trained),
                    static_cast<unsigned long long>(report.compile_queue_last),
                    static_cast<unsigned long long>(report.bench_queue_last),
                    static_cast<unsigned long long>(w.failed_calls.load()));
      options.progress(line);
    }
  }
  report.real_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  report.simulated_s = report.real_s * options.speedup;
  report.coordinator_cores = (cpu_seconds(pid_of("coordinator")) - cpu0_coord) / report.real_s;
  report.compile_broker_cores = (cpu_seconds(pid_of("compile-farm")) - cpu0_farm) / report.real_s;
  if (report.bench_workers > 0)
    report.bench_broker_cores = (cpu_seconds(pid_of("bench-pool")) - cpu0_bench) / report.real_s;
  report.sim_cores = (cpu_seconds(::getpid()) - cpu0_self) / report.real_s;
  report.coordinator_rss_mb = peak_rss_mb(pid_of("coordinator"));

  // Stop: the simulated roles first (no new calls), then the children.
  {
    std::lock_guard lock(w.stop_mutex);
    w.stopping = true;
  }
  w.stop_cv.notify_all();
  for (auto& rw : workers) rw->coordinator->cancel_work_requests();
  loop->stop();
  learner_stop = true;
  learner_thread.join();
  for (auto& pw : pool_workers) pw->stop();

  report.episodes_submitted = w.submitted;
  report.episodes_acknowledged = w.acknowledged;
  report.episodes_trained = last_status.trained;
  report.steps = w.steps;
  report.checkpoints = w.checkpoints;
  if (report.simulated_s > 0)
    report.simulated_episodes_per_hour =
        static_cast<double>(w.acknowledged.load()) / report.simulated_s * 3600;
  if (!in_flight.empty()) {
    std::vector<std::int64_t> v = in_flight;
    std::sort(v.begin(), v.end());
    report.in_flight_p50 = v[v.size() / 2];
    report.in_flight_max = v.back();
  }
  report.dispatch = w.dispatch.summary();
  report.admission = w.admission.summary();
  report.store_ack = w.store_ack.summary();
  report.compile_call = w.compile_call.summary();
  report.bench_call = w.bench_call.summary();
  report.learner_step = w.learner_step.summary();
  report.event_lag = w.lag.summary();
  report.failed_calls = w.failed_calls;
  report.failures = w.failures;
  workers.clear();
  pool_workers.clear();
  children.stop_all();
  if (!learner_status) report.failures.push_back("learner: " + learner_status.error().to_string());
  return report;
}

}  // namespace cuda_agent
