// run_simulation: see sim.h.
#include "cluster/sim.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "actors/pool_client.h"
#include "actors/pool_worker.h"
#include "cluster/launch_plan.h"
#include "cluster/local_processes.h"
#include "cluster/manifest.h"
#include "cluster/manifest_overrides.h"
#include "coordinator/coordinator_client.h"
#include "core/clock.h"
#include "tasks/synth.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;
namespace fs = std::filesystem;

Error bad(const std::string& what) { return make_error(ErrorCategory::kInvalidInput, "sim", what); }
Error failed(const std::string& what) {
  return make_error(ErrorCategory::kUnavailable, "sim.failed", what);
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Latencies of one kind; summarised at the end.
class Samples {
 public:
  void add(double ms) {
    std::lock_guard lock(mutex_);
    values_.push_back(ms);
  }
  LatencySummary summary() const {
    std::lock_guard lock(mutex_);
    LatencySummary s;
    if (values_.empty()) return s;
    std::vector<double> v = values_;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
    };
    s.count = v.size();
    s.p50_ms = at(0.5);
    s.p99_ms = at(0.99);
    s.max_ms = v.back();
    return s;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<double> values_;
};

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
  for (int i = 0; i < 50; ++i) {
    const std::int64_t base = 20'000 + static_cast<std::int64_t>(rng() % 4000) * 10;
    if (ports_free(base)) return base;
  }
  return failed("no free block of 6 ports found between 20000 and 60000");
}

// CPU seconds (user + system) of a process, from /proc/PID/stat; -1 when it cannot be read.
double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  std::vector<std::string> fields;
  while (rest >> field) fields.push_back(field);
  if (fields.size() < 13) return -1;  // utime and stime are fields 14 and 15 (here 11 and 12)
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
}

std::uint64_t peak_rss_mb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) / 1024;
  }
  return 0;
}

// Everything the simulated roles share.
struct World {
  SimOptions options;
  Manifest manifest;
  RunId run;
  std::optional<CurveClientKeys> curve;
  std::int64_t max_turns = 1, max_new_tokens = 1, max_context = 1;
  std::int64_t learner_ranks = 1;
  std::atomic<bool> stopping{false};
  std::mutex stop_mutex;
  std::condition_variable stop_cv;

  Samples dispatch, admission, store_ack, compile_call, bench_call, learner_step;
  Samples lag;  // how late the event loop ran what fell due: the simulation keeping up
  std::atomic<std::uint64_t> submitted{0}, acknowledged{0}, failed_calls{0}, steps{0},
      checkpoints{0};
  std::atomic<std::uint64_t> latest_version{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  std::mutex tokens_mutex;
  std::unordered_map<std::string, std::int64_t> episode_tokens;
  std::string random_bytes;  // trajectories are slices of it: incompressible, like real ones

  // Sleeps `ms` of real time unless the simulation stops first.
  void sleep_real(double ms) {
    std::unique_lock lock(stop_mutex);
    stop_cv.wait_for(lock, std::chrono::duration<double, std::milli>(ms),
                     [&] { return stopping.load(); });
  }
  double scaled(double simulated_ms) const { return simulated_ms / options.speedup; }
  void fail(const std::string& what) {
    ++failed_calls;
    std::lock_guard lock(failures_mutex);
    if (failures.size() < 20) failures.push_back(what);
  }
};

// A lognormal draw around `ms` (its median), by the options' jitter.
double jittered(std::mt19937_64& rng, double ms, double sigma) {
  std::lognormal_distribution<double> d(0.0, sigma);
  return ms * d(rng);
}

// Timers and a few threads that run what falls due: the rollout side's event loop. Blocking
// coordinator calls run on the executors; pool calls complete on the pool clients' threads.
class EventLoop {
 public:
  using Task = std::function<void()>;
  EventLoop(World& world, int executors) : world_(world) {
    timer_ = std::thread([this] { timers(); });
    for (int i = 0; i < executors; ++i) executors_.emplace_back([this] { execute(); });
  }
  ~EventLoop() { stop(); }
  void at(Clock::time_point due, Task task) {
    {
      std::lock_guard lock(mutex_);
      due_.push(Due{due, next_++, std::move(task)});
    }
    timer_cv_.notify_one();
  }
  void after_ms(double ms, Task task) {
    at(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double, std::milli>(std::max(0.0, ms))),
       std::move(task));
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
    }
    timer_cv_.notify_all();
    work_cv_.notify_all();
    timer_.join();
    for (auto& t : executors_) t.join();
  }

 private:
  struct Due {
    Clock::time_point when;
    std::uint64_t order;
    Task task;
    bool operator>(const Due& o) const { return when != o.when ? when > o.when : order > o.order; }
  };
  void timers() {
    std::unique_lock lock(mutex_);
    while (!stopped_) {
      if (due_.empty()) {
        timer_cv_.wait(lock);
        continue;
      }
      const auto when = due_.top().when;
      if (Clock::now() < when) {
        timer_cv_.wait_until(lock, when);
        continue;
      }
      ready_.push_back(Ready{when, std::move(const_cast<Due&>(due_.top()).task)});
      due_.pop();
      work_cv_.notify_one();
    }
  }
  void execute() {
    std::unique_lock lock(mutex_);
    while (true) {
      work_cv_.wait(lock, [&] { return stopped_ || !ready_.empty(); });
      if (stopped_) return;
      Ready r = std::move(ready_.front());
      ready_.pop_front();
      lock.unlock();
      world_.lag.add(ms_since(r.due));
      if (!world_.stopping) r.task();
      lock.lock();
    }
  }

  World& world_;
  std::mutex mutex_;
  std::condition_variable timer_cv_, work_cv_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  struct Ready {
    Clock::time_point due;
    Task task;
  };
  std::deque<Ready> ready_;
  std::uint64_t next_ = 0;
  bool stopped_ = false;
  std::thread timer_;
  std::vector<std::thread> executors_;
};

// One simulated rollout worker: its clients, and a version it has synced its engine to.
struct RolloutWorker {
  WorkerId id;
  std::unique_ptr<CoordinatorClient> coordinator;
  std::unique_ptr<PoolClient> compile, bench;
  std::mutex mutex;
  std::uint64_t synced_version = 0;
  Clock::time_point sync_until{};
};

// One episode slot of a worker, a small state machine driven by the event loop.
class Slot : public std::enable_shared_from_this<Slot> {
 public:
  Slot(World& world, EventLoop& loop, RolloutWorker& worker, std::uint64_t seed)
      : world_(world), loop_(loop), worker_(worker), rng_(seed) {}

  void ask() {
    if (world_.stopping) return;
    const auto t0 = Clock::now();
    Expected<WorkReply> reply = worker_.coordinator->request_work();
    const double ms = ms_since(t0);
    auto self = shared_from_this();
    if (!reply) {
      if (world_.stopping) return;
      world_.fail(worker_.id.value() + " work request: " + reply.error().to_string());
      loop_.after_ms(1000, [self] { self->ask(); });
      return;
    }
    if (!reply->assigned) {
      world_.admission.add(ms);
      if (reply->reason == "run finished")
        return;  // rollout/coordinated_rollout.h kRunFinishedReason
      loop_.after_ms(
          static_cast<double>(std::clamp<std::int64_t>(reply->retry_after_ms, 200, 5000)),
          [self] { self->ask(); });
      return;
    }
    world_.dispatch.add(ms);
    assignment_ = reply->assignment;
    const SimLatencies& l = world_.options.latencies;
    if (assignment_.stage == EpisodeStage::kSingleTurnWarmup) {
      turns_left_ = 1;
    } else {
      std::geometric_distribution<std::int64_t> turns(1.0 / std::max(1.0, l.mean_turns));
      turns_left_ = std::clamp<std::int64_t>(1 + turns(rng_), 1, world_.max_turns);
    }
    turns_ = 0;
    tokens_ = l.prompt_tokens;
    loop_.after_ms(0, [self] { self->turn(); });
  }

 private:
  void turn() {
    if (turns_left_ <= 0 || tokens_ >= world_.max_context) return submit();
    const SimLatencies& l = world_.options.latencies;
    std::uniform_int_distribution<std::int64_t> new_tokens(
        std::min(l.new_tokens_min, world_.max_new_tokens),
        std::min(l.new_tokens_max, world_.max_new_tokens));
    const std::int64_t n = new_tokens(rng_);
    double wait = world_.scaled(n * l.decode_ms_per_token);
    {
      // A version published since this worker's engine last synced: its next decode waits for
      // the weights (the engine serves nothing meanwhile).
      std::lock_guard lock(worker_.mutex);
      const std::uint64_t latest = world_.latest_version;
      const auto now = Clock::now();
      if (worker_.synced_version < latest) {
        worker_.synced_version = latest;
        const double sync_ms = l.model_params * 2 / (l.weight_sync_gb_per_s * 1e9) * 1000;
        worker_.sync_until =
            now + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double, std::milli>(world_.scaled(sync_ms)));
      }
      if (worker_.sync_until > now)
        wait += std::chrono::duration<double, std::milli>(worker_.sync_until - now).count();
    }
    tokens_ += n;
    auto self = shared_from_this();
    loop_.after_ms(wait, [self] { self->tool(); });
  }

  void tool() {
    const SimLatencies& l = world_.options.latencies;
    ++turns_;
    --turns_left_;
    tokens_ += l.tool_tokens_per_turn;
    const bool last = turns_left_ <= 0 || tokens_ >= world_.max_context;
    std::uniform_real_distribution<double> u(0, 1);
    const double draw = u(rng_);
    PoolClient* pool = nullptr;
    Samples* samples = nullptr;
    std::string payload;
    if (last && worker_.bench) {
      pool = worker_.bench.get(), samples = &world_.bench_call, payload = "F";
    } else if (draw < l.compile_per_turn) {
      pool = worker_.compile.get(), samples = &world_.compile_call, payload = "C";
    } else if (draw < l.compile_per_turn + l.bench_per_turn && worker_.bench) {
      pool = worker_.bench.get(), samples = &world_.bench_call, payload = "B";
    }
    auto self = shared_from_this();
    if (pool == nullptr) {
      loop_.after_ms(0, [self] { self->turn(); });
      return;
    }
    // A compile request carries the solution's sources; a bench request the artifact's hash.
    payload.resize(payload == "C" ? 6000 : 300, 'x');
    PoolRequest r;
    r.header.request_id =
        RequestId{assignment_.episode_id.value() + "/" + std::to_string(assignment_.attempt) +
                  "/t" + std::to_string(turns_)};
    r.header.run_id = world_.run;
    r.header.policy_version = assignment_.policy_version;
    r.header.deadline_unix_ms = now_unix_ms() + 600'000;
    r.payload = std::move(payload);
    const auto t0 = Clock::now();
    pool->call_async(std::move(r), [self, samples, t0](PoolOutcome o) {
      samples->add(ms_since(t0));
      if (!o.result && !self->world_.stopping)
        self->world_.fail("pool call of " + self->assignment_.episode_id.value() + ": " +
                          o.result.error().to_string());
      self->loop_.after_ms(0, [self] { self->turn(); });
    });
  }

  void submit() {
    if (world_.stopping) return;
    std::uniform_int_distribution<std::int64_t> reward(-1, 3);
    TrajectorySubmission s;
    s.worker = worker_.id;
    s.attempt = assignment_.attempt;
    EpisodeRecord& e = s.episode;
    e.episode_id = assignment_.episode_id;
    e.run_id = world_.run;
    e.task_id = assignment_.task_id;
    e.stage = assignment_.stage;
    e.policy_version = assignment_.policy_version;
    e.status = EpisodeStatus::kCompleted;
    e.final_reward = static_cast<double>(reward(rng_));
    e.turns = static_cast<std::uint32_t>(turns_);
    e.total_tokens = static_cast<std::uint64_t>(tokens_);
    e.created_unix_ms = now_unix_ms();
    const auto size = static_cast<std::size_t>(
        std::min<double>(tokens_ * world_.options.latencies.trajectory_bytes_per_token,
                         static_cast<double>(world_.random_bytes.size() / 2)));
    std::uniform_int_distribution<std::size_t> offset(0, world_.random_bytes.size() - size);
    e.trajectory_bytes = world_.random_bytes.substr(offset(rng_), size);
    {
      std::lock_guard lock(world_.tokens_mutex);
      world_.episode_tokens[e.episode_id.value()] = tokens_;
    }
    ++world_.submitted;
    const auto t0 = Clock::now();
    Expected<SubmitReply> reply = worker_.coordinator->submit(std::move(s));
    const double ms = ms_since(t0);
    auto self = shared_from_this();
    if (!reply || reply->status == SubmitStatus::kStoreFailed) {
      if (world_.stopping) return;
      world_.fail("submission of " + assignment_.episode_id.value() + ": " +
                  (reply ? reply->message : reply.error().to_string()));
      loop_.after_ms(1000, [self] { self->submit(); });
      return;
    }
    world_.store_ack.add(ms);
    if (reply->status == SubmitStatus::kAcknowledged) ++world_.acknowledged;
    loop_.after_ms(0, [self] { self->ask(); });
  }

  World& world_;
  EventLoop& loop_;
  RolloutWorker& worker_;
  std::mt19937_64 rng_;
  Assignment assignment_;
  std::int64_t turns_left_ = 0, turns_ = 0, tokens_ = 0;
};

// The simulated learner: a step takes its batch's tokens over the ranks' throughput, a checkpoint
// the sharded optimizer state over the write rate (both divided by the speedup).
class SimLearner : public LearnerHandler {
 public:
  explicit SimLearner(World& world) : world_(world) {}
  Expected<StepDone> train(const TrainStep& step) override {
    const auto t0 = Clock::now();
    std::int64_t tokens = 0;
    {
      std::lock_guard lock(world_.tokens_mutex);
      auto add = [&](const std::vector<EpisodeId>& ids) {
        for (const EpisodeId& id : ids) {
          auto it = world_.episode_tokens.find(id.value());
          if (it != world_.episode_tokens.end()) tokens += it->second;
        }
      };
      for (const RecordedStep& r : step.replay) add(r.episodes);
      add(step.episodes);
      for (const EpisodeId& id : step.episodes) world_.episode_tokens.erase(id.value());
    }
    const double ms = static_cast<double>(tokens) /
                      (world_.options.latencies.learner_tokens_per_s *
                       static_cast<double>(world_.learner_ranks)) *
                      1000;
    world_.sleep_real(world_.scaled(ms));
    world_.learner_step.add(ms_since(t0));
    ++world_.steps;
    const std::uint64_t version = step.version.value() + 1;
    world_.latest_version = std::max<std::uint64_t>(world_.latest_version, version);
    return StepDone{.step = step.step,
                    .new_version = PolicyVersion{version},
                    .metrics = {{"sim/tokens", static_cast<double>(tokens)}}};
  }
  Expected<CheckpointDone> checkpoint(const CheckpointRequest& request) override {
    const SimLatencies& l = world_.options.latencies;
    const double bytes = l.model_params * 14 / static_cast<double>(world_.learner_ranks);
    world_.sleep_real(world_.scaled(bytes / (l.checkpoint_mb_per_s * 1e6) * 1000));
    ++world_.checkpoints;
    return CheckpointDone{
        .step = request.step,
        .path = (world_.options.work_dir / "checkpoints" / ("step-" + std::to_string(request.step)))
                    .string(),
        .size_bytes = static_cast<std::uint64_t>(bytes),
        .checksum = "00"};
  }

 private:
  World& world_;
};

// What the simulated pool workers answer after their drawn latency.
PoolHandler sim_handler(World& world, bool bench, std::uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  auto mutex = std::make_shared<std::mutex>();
  return [&world, bench, rng, mutex](WorkItem& item) -> Expected<PoolBytes> {
    const SimLatencies& l = world.options.latencies;
    const std::string_view payload = item.payload.view();
    const double median = !bench                                    ? l.compile_ms
                          : (!payload.empty() && payload[0] == 'F') ? l.bench_final_ms
                                                                    : l.bench_ms;
    double ms = 0;
    {
      std::lock_guard lock(*mutex);
      ms = jittered(*rng, median, l.jitter_sigma);
    }
    world.sleep_real(world.scaled(ms));
    return PoolBytes(std::string(bench ? 2048 : 512, 'r'));
  };
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
  w.max_turns = m.rollout.max_turns;
  w.max_new_tokens = m.rollout.max_new_tokens_per_turn;
  w.max_context = m.rollout.max_context_tokens;
  RETURN_IF_ERROR(write_tasks(work / "tasks", options.tasks, options.seed));

  const std::vector<NodePlan> plan = plan_launch(m, (work / "sim.toml").string());
  SimReport report;
  report.work_dir = work;
  report.speedup = options.speedup;
  report.load = options.load;
  report.rollout_workers = static_cast<std::int64_t>(
      std::llround(static_cast<double>(count_processes(plan, "rollout-worker")) * options.load));
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
        auto slot = std::make_shared<Slot>(w, *loop, *rw, seeds());
        loop->after_ms(start(seeds), [slot] { slot->ask(); });
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

namespace {
nlohmann::json latency_json(const LatencySummary& s) {
  return {{"count", s.count}, {"p50_ms", s.p50_ms}, {"p99_ms", s.p99_ms}, {"max_ms", s.max_ms}};
}
}  // namespace

std::string sim_report_json(const SimReport& r) {
  nlohmann::json j = {{"work_dir", r.work_dir.string()},
                      {"real_s", r.real_s},
                      {"simulated_s", r.simulated_s},
                      {"speedup", r.speedup},
                      {"load", r.load},
                      {"rollout_workers", r.rollout_workers},
                      {"learner_ranks", r.learner_ranks},
                      {"compile_workers", r.compile_workers},
                      {"bench_workers", r.bench_workers},
                      {"compile_slots", r.compile_slots},
                      {"bench_slots", r.bench_slots},
                      {"episode_slots", r.episode_slots},
                      {"members", r.members},
                      {"in_flight_p50", r.in_flight_p50},
                      {"in_flight_max", r.in_flight_max},
                      {"episodes_submitted", r.episodes_submitted},
                      {"episodes_acknowledged", r.episodes_acknowledged},
                      {"episodes_trained", r.episodes_trained},
                      {"steps", r.steps},
                      {"checkpoints", r.checkpoints},
                      {"simulated_episodes_per_hour", r.simulated_episodes_per_hour},
                      {"dispatch", latency_json(r.dispatch)},
                      {"admission", latency_json(r.admission)},
                      {"store_ack", latency_json(r.store_ack)},
                      {"compile_call", latency_json(r.compile_call)},
                      {"bench_call", latency_json(r.bench_call)},
                      {"learner_step", latency_json(r.learner_step)},
                      {"event_lag", latency_json(r.event_lag)},
                      {"coordinator_cores", r.coordinator_cores},
                      {"compile_broker_cores", r.compile_broker_cores},
                      {"bench_broker_cores", r.bench_broker_cores},
                      {"sim_cores", r.sim_cores},
                      {"coordinator_rss_mb", r.coordinator_rss_mb},
                      {"compile_queue_max", r.compile_queue_max},
                      {"bench_queue_max", r.bench_queue_max},
                      {"compile_queue_last", r.compile_queue_last},
                      {"bench_queue_last", r.bench_queue_last},
                      {"false_suspects", r.false_suspects},
                      {"false_lost", r.false_lost},
                      {"broker_workers_lost", r.broker_workers_lost},
                      {"failed_calls", r.failed_calls},
                      {"failures", r.failures},
                      {"heartbeat_timeout_ms", r.heartbeat_timeout_ms},
                      {"probe_suspect_s", r.probe_suspect_s},
                      {"probe_lost_s", r.probe_lost_s},
                      {"child_exits", r.child_exits}};
  return j.dump(2);
}

std::string sim_report_text(const SimReport& r) {
  std::ostringstream o;
  char buf[512];
  auto lat = [&](const char* name, const LatencySummary& s) {
    std::snprintf(buf, sizeof buf,
                  "  %-28s %8llu calls, p50 %8.2f ms, p99 %8.2f ms, max %8.2f ms\n", name,
                  static_cast<unsigned long long>(s.count), s.p50_ms, s.p99_ms, s.max_ms);
    o << buf;
  };
  std::snprintf(buf, sizeof buf,
                "simulation: %.0f s real x speedup %.0f = %.0f s simulated (%.2f h), load %.1fx; "
                "work dir %s\n",
                r.real_s, r.speedup, r.simulated_s, r.simulated_s / 3600, r.load,
                r.work_dir.string().c_str());
  o << buf;
  std::snprintf(
      buf, sizeof buf,
      "  members %lld: %lld rollout workers (%lld episode slots), 1 learner (of %lld ranks), "
      "%lld compile workers (%lld slots), %lld bench workers\n",
      static_cast<long long>(r.members), static_cast<long long>(r.rollout_workers),
      static_cast<long long>(r.episode_slots), static_cast<long long>(r.learner_ranks),
      static_cast<long long>(r.compile_workers), static_cast<long long>(r.compile_slots),
      static_cast<long long>(r.bench_workers));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  episodes: in flight p50 %lld, max %lld; submitted %llu, acknowledged %llu, "
                "trained %llu (%.0f per simulated hour); learner steps %llu, checkpoints %llu\n",
                static_cast<long long>(r.in_flight_p50), static_cast<long long>(r.in_flight_max),
                static_cast<unsigned long long>(r.episodes_submitted),
                static_cast<unsigned long long>(r.episodes_acknowledged),
                static_cast<unsigned long long>(r.episodes_trained), r.simulated_episodes_per_hour,
                static_cast<unsigned long long>(r.steps),
                static_cast<unsigned long long>(r.checkpoints));
  o << buf;
  lat("dispatch (work assigned)", r.dispatch);
  lat("admission (none now)", r.admission);
  lat("store acknowledgement", r.store_ack);
  lat("compile call", r.compile_call);
  lat("bench call", r.bench_call);
  lat("learner step", r.learner_step);
  lat("simulation's event lag", r.event_lag);
  std::snprintf(buf, sizeof buf,
                "  CPU (cores, average over the real time): coordinator %.3f (peak RSS %llu MiB), "
                "compile broker %.3f, bench broker %.3f, this simulation %.3f\n",
                r.coordinator_cores, static_cast<unsigned long long>(r.coordinator_rss_mb),
                r.compile_broker_cores, r.bench_broker_cores, r.sim_cores);
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  queues: compile max %llu (last %llu), bench max %llu (last %llu)\n",
                static_cast<unsigned long long>(r.compile_queue_max),
                static_cast<unsigned long long>(r.compile_queue_last),
                static_cast<unsigned long long>(r.bench_queue_max),
                static_cast<unsigned long long>(r.bench_queue_last));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  false suspects %llu, false lost %llu, workers the brokers lost %llu; failed "
                "calls %llu\n",
                static_cast<unsigned long long>(r.false_suspects),
                static_cast<unsigned long long>(r.false_lost),
                static_cast<unsigned long long>(r.broker_workers_lost),
                static_cast<unsigned long long>(r.failed_calls));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  silent probe (heartbeat timeout %lld ms): suspect after %.2f s, lost after "
                "%.2f s (-1: not seen)\n",
                static_cast<long long>(r.heartbeat_timeout_ms), r.probe_suspect_s, r.probe_lost_s);
  o << buf;
  for (const std::string& f : r.failures) o << "  failure: " << f << "\n";
  for (const std::string& c : r.child_exits) o << "  child exited: " << c << "\n";
  return o.str();
}

}  // namespace cuda_agent
