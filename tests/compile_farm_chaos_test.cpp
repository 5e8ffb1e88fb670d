// The compile farm under chaos (issue 27, "Show"): the real broker (`cuda-agent serve
// compile-farm`) and three compile workers (`cuda-agent serve compile-worker`, one job each, one
// shared cache) run as child processes; 8 clients in this process submit real compile jobs (real
// nvcc) one after another; and at random seeded instants the broker or one worker is SIGKILLed
// and started again after a random pause of up to 3 s, as a supervisor would. Jobs: a small
// kernel with a constant unique to the job (so the cache cannot answer it), and every fourth one
// the source all clients share (built once, then cache hits).
//
// What must hold:
//  - 0 lost requests: every submit gets its correct result: built, its one launcher found, the
//    artifact's hash its content's, one hash for every build of the shared source;
//  - 0 orphaned processes: this process is the child subreaper of everything it starts, so a
//    compiler that a killed worker left behind is re-parented here, where /proc shows it; one
//    still alive kOrphanGrace after it was first seen is an orphan, and nothing at all may be left
//    once every child has stopped.
// It prints the seed, requests, kills per role, lost, orphans and latency (median, p99, max).
// Environment: CHAOS_SEED (default: random, printed, so a run can be replayed; the instants are
// seeded, what the processes do in between is not), CHAOS_SECONDS (default 90).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/content_hash.h"
#include "core/log.h"
#include "tests/proc_table.h"
#include "tests/scale_kernel.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kClients = 8;
constexpr int kWorkers = 3;
constexpr int kSharedEvery = 4;             // every fourth job of a client is the shared source
constexpr auto kMinGap = 2s, kMaxGap = 8s;  // between two kills
constexpr auto kMaxRestartPause = 3s;       // a killed process is started again within this
constexpr auto kOrphanGrace = 5s;           // a re-parented process alive this long is an orphan
constexpr std::int64_t kRequestDeadlineMs = 300'000;

std::int64_t env_or(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoll(v) : fallback;
}

// A child process that dies with this thread (PR_SET_PDEATHSIG), its stdout on a pipe (read
// line by line with deadlines) and its stderr appended to a log file.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {  // async-signal-safe calls only until exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (log < 0) ::_exit(127);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = out[0];
  }
  ~ChildProcess() {
    kill_now();
    if (out_ >= 0) ::close(out_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  /// The next line of its stdout, or nullopt at EOF or when `deadline` passes.
  std::optional<std::string> read_line(Clock::time_point deadline) {
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  /// SIGKILL, then reap.
  void kill_now() {
    if (pid_ <= 0 || reaped_) return;
    ::kill(pid_, SIGKILL);
    (void)wait_exit(Clock::now() + 30s);
  }

  /// The wait status once it exited, or -1 if it still runs at `deadline`.
  int wait_exit(Clock::time_point deadline) {
    while (!reaped_) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        status_ = status;
        break;
      }
      if (Clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(5ms);  // polling interval of waitpid, bounded by the deadline
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int status_ = 0;
};

// A TCP port on 127.0.0.1 that is free now, below the kernel's ephemeral range: a client that
// reconnects while the broker is down must never be given the broker's port as its own (a TCP
// self-connection would hold the port against the restarted broker).
int free_port(std::mt19937_64& rng) {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  std::uniform_int_distribution<int> pick(std::max(1024, low - 12'000), low - 1);
  for (int tries = 0; tries < 100; ++tries) {
    const int port = pick(rng);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (free) return port;
  }
  return -1;
}

// The kernel of client `client`'s job `seq`: the shared source (seq % kSharedEvery == last), else
// one whose constant no other job has.
CompileRequest job(const std::string& nonce, int client, int seq) {
  const bool shared = seq % kSharedEvery == kSharedEvery - 1;
  const std::string constant = shared ? "2" : std::to_string(client * 100'000 + seq + 3);
  CompileRequest r;
  r.header.request_id =
      RequestId{"chaos-" + nonce + "-c" + std::to_string(client) + "-" + std::to_string(seq)};
  r.header.run_id = RunId{"compile-farm-chaos-test"};
  r.header.deadline_unix_ms = now_unix_ms() + kRequestDeadlineMs;
  r.target_arch = "sm_90";
  r.files = {{"kernels/k.cu", testing::scale_kernel_source(constant, "chaos " + nonce)},
             {"model_new.py", "import kernels\n"}};
  return r;
}

// What is wrong with a result for an honest job ("" when nothing).
std::string problem(const Expected<CompileResult>& r) {
  if (!r) return r.error().to_string();
  if (r->prototypes.size() != 1 || r->prototypes[0].name != "scale_launch")
    return "launchers: expected scale_launch alone";
  if (r->artifact.empty()) return "no artifact";
  if (content_hash(r->artifact) != r->artifact_hash) return "artifact hash is not its content's";
  return "";
}

struct Outcome {
  std::string id;
  bool shared = false;
  std::int64_t latency_ms = 0;
  std::string problem;  // "" when the result was right
  std::string hash;
};

// Processes re-parented to this process (the subreaper) that it did not start: reaped once done,
// counted as orphans when still alive kOrphanGrace after they were first seen, and then killed.
class OrphanWatch {
 public:
  void scan(const std::set<pid_t>& ours) {
    const auto now = Clock::now();
    const pid_t self = ::getpid();
    for (const ProcStat& p : all_processes()) {
      if (p.ppid != self || ours.count(p.pid)) continue;
      const auto key = std::make_pair(p.pid, p.start);
      auto [it, added] = seen_.try_emplace(key, Seen{now, p.comm, false});
      if (added && p.live()) ++seen_alive_;
      if (!p.live()) {
        (void)::waitpid(p.pid, nullptr, WNOHANG);
        longest_ = std::max(longest_, now - it->second.first_seen);
        ++reaped_;
        seen_.erase(it);
        continue;
      }
      if (!it->second.counted && now - it->second.first_seen >= kOrphanGrace) {
        it->second.counted = true;
        orphans_.push_back(p.comm + "(" + std::to_string(p.pid) + ")");
        ::kill(p.pid, SIGKILL);  // counted; not left to steal the CPU of the rest of the run
      }
    }
  }
  /// Processes re-parented here that are still alive.
  std::size_t alive() const { return seen_.size(); }
  const std::vector<std::string>& orphans() const { return orphans_; }
  std::uint64_t reaped() const { return reaped_; }
  /// Of those, the ones still running when first seen here (the rest had exited already).
  std::uint64_t seen_alive() const { return seen_alive_; }
  double longest_ms() const { return std::chrono::duration<double, std::milli>(longest_).count(); }

 private:
  struct Seen {
    Clock::time_point first_seen;
    std::string comm;
    bool counted;
  };
  std::map<std::pair<pid_t, unsigned long long>, Seen> seen_;
  std::vector<std::string> orphans_;
  std::uint64_t reaped_ = 0;
  std::uint64_t seen_alive_ = 0;
  Clock::duration longest_{};
};

class CompileFarmChaosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no CUDA toolkit";
    (void)setup_logging({.level = "error"});
    // Whatever a child leaves behind comes to this process, not to init.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    std::random_device rd;
    seed_ = static_cast<std::uint64_t>(env_or("CHAOS_SEED", rd()));
    seconds_ = env_or("CHAOS_SECONDS", 90);
    nonce_ = std::to_string(seed_) + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
    root_ = fs::temp_directory_path() / ("compile_farm_chaos_test-" + nonce_);
    fs::create_directories(root_ / "logs");
    std::mt19937_64 ports(rd());
    const int client_port = free_port(ports), worker_port = free_port(ports);
    ASSERT_TRUE(client_port > 0 && worker_port > 0 && client_port != worker_port);
    clients_ = "tcp://127.0.0.1:" + std::to_string(client_port);
    workers_ = "tcp://127.0.0.1:" + std::to_string(worker_port);
    // Workers count as lost after 3 s of silence (one heartbeat a second), also before their
    // first heartbeat; a lost worker costs its job one attempt, and a chaos kill is no poison
    // pill, so a job may be handed out many times.
    std::ofstream(root_ / "chaos.toml") << "[run]\nname = \"chaos\"\n"
                                        << "heartbeat_timeout_ms = 3000\n"
                                        << "first_heartbeat_grace_ms = 3000\n\n"
                                        << "[compile]\nmax_attempts = 100\n\n"
                                        << "[[nodes]]\nhost = \"localhost\"\ngpus = 0\n"
                                        << "roles = [\"coordinator\", \"compile\"]\n";
    std::printf("[ chaos ] CHAOS_SEED=%llu CHAOS_SECONDS=%lld, logs in %s\n",
                static_cast<unsigned long long>(seed_), static_cast<long long>(seconds_),
                (root_ / "logs").c_str());
    std::fflush(stdout);
  }
  void TearDown() override {
    for (auto& w : worker_procs_) w.reset();
    broker_.reset();
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(root_, ec);
  }

  std::string log(const std::string& name) const { return (root_ / "logs" / name).string(); }

  // Starts the broker and waits for its "compile farm: clients ..." line (it is bound then).
  bool start_broker() {
    for (int tries = 0; tries < 5; ++tries) {
      broker_ = std::make_unique<ChildProcess>(
          std::vector<std::string>{CUDA_AGENT_EXE, "--log-level", "warn", "serve", "compile-farm",
                                   "--manifest", (root_ / "chaos.toml").string(), "--clients",
                                   clients_, "--workers", workers_},
          log("broker.log"));
      auto line = broker_->read_line(Clock::now() + 30s);
      if (line && line->find("compile farm: clients") != std::string::npos) return true;
      broker_.reset();  // it did not come up (its log says why): again
    }
    return false;
  }
  void start_worker(int i) {
    worker_procs_[i] = std::make_unique<ChildProcess>(
        std::vector<std::string>{CUDA_AGENT_EXE, "--log-level", "warn", "serve", "compile-worker",
                                 "--connect", workers_, "--manifest",
                                 (root_ / "chaos.toml").string(), "--jobs", "1", "--cache-dir",
                                 (root_ / "cache").string()},
        log("worker-" + std::to_string(i) + ".log"));
  }
  std::set<pid_t> our_pids() const {
    std::set<pid_t> pids;
    if (broker_) pids.insert(broker_->pid());
    for (const auto& w : worker_procs_)
      if (w) pids.insert(w->pid());
    return pids;
  }

  std::uint64_t seed_ = 0;
  std::int64_t seconds_ = 90;
  std::string nonce_;
  fs::path root_;
  std::string clients_, workers_;
  std::unique_ptr<ChildProcess> broker_;
  std::vector<std::unique_ptr<ChildProcess>> worker_procs_ =
      std::vector<std::unique_ptr<ChildProcess>>(kWorkers);
};

TEST_F(CompileFarmChaosTest, KillsAndRestartsLoseNoRequestAndLeaveNoProcess) {
  ASSERT_TRUE(start_broker()) << "the broker did not start; see " << log("broker.log");
  for (int i = 0; i < kWorkers; ++i) start_worker(i);

  // What happens, as it happens (a run cut off by its timeout still shows where it was).
  const auto start = Clock::now();
  auto note = [&](const std::string& what) {
    std::printf("[ chaos ] +%.1f s %s\n",
                std::chrono::duration<double>(Clock::now() - start).count(), what.c_str());
    std::fflush(stdout);
  };

  // The clients: each submits its next job as soon as the last one is answered.
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<Outcome> outcomes;
  std::map<int, std::pair<std::string, Clock::time_point>> in_flight;  // client -> id, sent
  std::vector<std::future<void>> clients;
  // However this body ends (a failed ASSERT, an exception), the clients stop after the request
  // they have in flight, so the futures' destructors below do not wait for ever.
  struct StopClients {
    std::atomic<bool>& stop;
    ~StopClients() { stop = true; }
  } stop_clients{stop};
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(std::async(std::launch::async, [&, c] {
      auto client = CompileClient::connect({.broker_endpoint = clients_});
      if (!client) {
        std::lock_guard lock(mutex);
        outcomes.push_back({"client-" + std::to_string(c), false, 0, client.error().to_string()});
        return;
      }
      for (int seq = 0; !stop; ++seq) {
        CompileRequest request = job(nonce_, c, seq);
        Outcome o{request.header.request_id.value(), seq % kSharedEvery == kSharedEvery - 1};
        const auto sent = Clock::now();
        {
          std::lock_guard lock(mutex);
          in_flight[c] = {o.id, sent};
        }
        Expected<CompileResult> r = (*client)->call(std::move(request));
        o.latency_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent).count();
        o.problem = problem(r);
        if (r) o.hash = r->artifact_hash;
        std::lock_guard lock(mutex);
        in_flight.erase(c);
        outcomes.push_back(std::move(o));
      }
    }));
  }

  // The chaos: kill the broker or a worker at seeded random instants; start it again after a
  // seeded random pause. The waits between them are the schedule, not waits for events.
  std::mt19937_64 rng(seed_);
  auto between = [&](Clock::duration lo, Clock::duration hi) {
    return Clock::duration(std::uniform_int_distribution<Clock::rep>(lo.count(), hi.count())(rng));
  };
  OrphanWatch orphans;
  std::map<std::string, int> kills;             // "broker", "worker"
  std::map<int, Clock::time_point> restart_at;  // -1: the broker; else a worker's index
  int broker_start_failures = 0;
  auto restart = [&](int who) {
    if (who >= 0) {
      start_worker(who);
      note("start worker " + std::to_string(who) + " (pid " +
           std::to_string(worker_procs_[who]->pid()) + ")");
    } else if (start_broker()) {
      note("start the broker (pid " + std::to_string(broker_->pid()) + "): serving");
    } else {
      ++broker_start_failures;
      note("the broker does not start; again in 1 s");
      restart_at[-1] = Clock::now() + 1s;
    }
  };
  const auto end = start + std::chrono::seconds(seconds_);
  auto next_kill = start + between(kMinGap, kMaxGap);
  for (int n = 0; Clock::now() < end;) {
    orphans.scan(our_pids());
    std::vector<int> due;
    for (const auto& [who, at] : restart_at)
      if (Clock::now() >= at) due.push_back(who);
    for (int who : due) {
      restart_at.erase(who);
      restart(who);
    }
    if (Clock::now() >= next_kill) {
      std::vector<int> live;
      for (int i = 0; i < kWorkers; ++i)
        if (!restart_at.count(i)) live.push_back(i);
      // The first kill is a worker's, the second the broker's, then the broker one time in three.
      bool broker = n == 1 || (n > 1 && std::uniform_int_distribution<int>(0, 2)(rng) == 0);
      if (restart_at.count(-1)) broker = false;
      if (!broker && live.empty()) broker = !restart_at.count(-1);
      if (broker && broker_) {
        note("kill the broker (pid " + std::to_string(broker_->pid()) + ")");
        broker_->kill_now();
        ++kills["broker"];
        restart_at[-1] = Clock::now() + between(0s, kMaxRestartPause);
        ++n;
      } else if (!live.empty()) {
        const int victim =
            live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
        note("kill worker " + std::to_string(victim) + " (pid " +
             std::to_string(worker_procs_[victim]->pid()) + ")");
        worker_procs_[victim]->kill_now();
        ++kills["worker"];
        restart_at[victim] = Clock::now() + between(0s, kMaxRestartPause);
        ++n;
      }
      next_kill = Clock::now() + between(kMinGap, kMaxGap);
    }
    std::this_thread::sleep_for(100ms);  // the schedule's tick; /proc is scanned at this rate
  }

  // Every role up again; the clients finish the jobs they have in flight and stop.
  stop = true;
  note("chaos over: every role up again, the clients finish what they have in flight");
  for (int tries = 0; !restart_at.empty() && tries < 5; ++tries) {
    const auto pending = restart_at;
    restart_at.clear();
    for (const auto& [who, at] : pending) restart(who);
  }
  ASSERT_TRUE(broker_) << "the broker does not start again; see " << log("broker.log");
  const auto drain_by = Clock::now() + std::chrono::milliseconds(kRequestDeadlineMs) + 30s;
  bool drained = false;
  while (!drained && Clock::now() < drain_by) {
    orphans.scan(our_pids());
    drained = std::all_of(clients.begin(), clients.end(),
                          [](auto& f) { return f.wait_for(200ms) == std::future_status::ready; });
  }
  if (!drained) {
    std::lock_guard lock(mutex);
    for (const auto& [c, request] : in_flight) {
      ADD_FAILURE()
          << "client " << c << " still waits for " << request.first << ", sent "
          << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - request.second).count()
          << " s ago: a hang";
    }
  }
  EXPECT_TRUE(drained) << "a client still waits " << kRequestDeadlineMs / 1000
                       << " s past the end of the chaos: a hang";
  note(drained ? "every client done" : "clients still waiting");
  const double chaos_s = std::chrono::duration<double>(Clock::now() - start).count();

  // Stop every role as an operator would; each must exit cleanly.
  for (int i = 0; i < kWorkers; ++i) {
    ASSERT_EQ(::kill(worker_procs_[i]->pid(), SIGTERM), 0);
    const int status = worker_procs_[i]->wait_exit(Clock::now() + 60s);
    EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << i << " did not stop cleanly on SIGTERM (wait status " << status << ")";
  }
  ASSERT_EQ(::kill(broker_->pid(), SIGTERM), 0);
  const int broker_status = broker_->wait_exit(Clock::now() + 60s);
  EXPECT_TRUE(broker_status >= 0 && WIFEXITED(broker_status) && WEXITSTATUS(broker_status) == 0)
      << "the broker did not stop cleanly on SIGTERM (wait status " << broker_status << ")";
  note("every role stopped");
  if (!drained) {  // with no broker the clients give up within their reconnect timeout
    for (auto& f : clients) f.wait();
  }
  clients.clear();

  // Nothing may outlive the roles: whatever is still below this process is an orphan.
  const auto settle_by = Clock::now() + kOrphanGrace + 5s;
  std::vector<ProcStat> left;
  do {
    orphans.scan(our_pids());
    left.clear();
    for (const ProcStat& p : testing::descendants(::getpid()))
      if (p.live()) left.push_back(p);
    if (left.empty()) break;
    std::this_thread::sleep_for(100ms);  // polling interval of /proc
  } while (Clock::now() < settle_by);
  std::string left_names;
  for (const ProcStat& p : left) left_names += p.comm + "(" + std::to_string(p.pid) + ") ";
  for (const ProcStat& p : left) ::kill(p.pid, SIGKILL);

  // The figures.
  std::lock_guard lock(mutex);
  std::vector<std::int64_t> latencies;
  std::set<std::string> shared_hashes;
  std::vector<std::string> lost;
  std::map<std::string, int> per_client;
  int shared = 0;
  for (const Outcome& o : outcomes) {
    latencies.push_back(o.latency_ms);
    if (!o.problem.empty()) {
      lost.push_back(o.id + ": " + o.problem);
      continue;
    }
    ++per_client[o.id.substr(0, o.id.rfind('-'))];
    if (o.shared) {
      ++shared;
      shared_hashes.insert(o.hash);
    }
  }
  std::sort(latencies.begin(), latencies.end());
  auto quantile = [&](double q) -> std::int64_t {
    if (latencies.empty()) return 0;
    const auto rank = static_cast<std::size_t>(std::ceil(q * latencies.size()));
    return latencies[std::min(latencies.size() - 1, rank > 0 ? rank - 1 : 0)];
  };
  std::printf(
      "[ chaos ] seed %llu, %.0f s (chaos %lld s, then the drain): %zu requests (%d of the shared "
      "source), %zu lost; kills: broker %d, worker %d (broker restarts that failed: %d); "
      "orphans %zu, left at the end %zu (re-parented here and reaped: %llu, %llu of them still "
      "running when first seen, the longest for %.0f ms more); latency ms: median %lld, p99 "
      "%lld, max %lld\n",
      static_cast<unsigned long long>(seed_), chaos_s, static_cast<long long>(seconds_),
      outcomes.size(), shared, lost.size(), kills["broker"], kills["worker"], broker_start_failures,
      orphans.orphans().size(), left.size(), static_cast<unsigned long long>(orphans.reaped()),
      static_cast<unsigned long long>(orphans.seen_alive()), orphans.longest_ms(),
      static_cast<long long>(quantile(0.5)), static_cast<long long>(quantile(0.99)),
      static_cast<long long>(latencies.empty() ? 0 : latencies.back()));

  for (std::size_t i = 0; i < lost.size() && i < 20; ++i) ADD_FAILURE() << "lost: " << lost[i];
  EXPECT_TRUE(lost.empty()) << lost.size() << " of " << outcomes.size() << " requests lost";
  std::string orphan_names;
  for (const auto& o : orphans.orphans()) orphan_names += o + " ";
  EXPECT_TRUE(orphans.orphans().empty())
      << "alive " << std::chrono::duration_cast<std::chrono::seconds>(kOrphanGrace).count()
      << " s after their worker was killed: " << orphan_names;
  EXPECT_TRUE(left.empty()) << "left after every role stopped: " << left_names;
  EXPECT_EQ(broker_start_failures, 0);
  EXPECT_GE(kills["broker"], 1);
  EXPECT_GE(kills["worker"], 1);
  EXPECT_EQ(per_client.size(), static_cast<std::size_t>(kClients))
      << "a client got no correct result at all";
  EXPECT_LE(shared_hashes.size(), 1u) << "one source, " << shared_hashes.size() << " artifacts";
  if (HasFailure()) std::printf("[ chaos ] the roles' logs are kept in %s\n", log("").c_str());
}

}  // namespace
}  // namespace cuda_agent
