// bench_pool_fairness: one client's flood against another client's requests, through a real
// WorkPoolBroker on TCP loopback (issue 27 item 7; docs/BENCHMARKS.md "Pool fairness"). A
// benchmark of queueing: the one worker (one slot) runs a fake job that sleeps --job-ms, not a
// compile. The broker runs in a child process forked before any thread starts, so that the
// memory figures (VmRSS, VmHWM of /proc/PID/status) are the broker's alone.
//
//   bench_pool_fairness [--flood=20000] [--job-ms=20] [--payload-bytes=16384]
//                       [--per-client=5000] [--max-queued=10000] [--probes=10]
//
// 1. Unloaded: client B sends 20 requests one at a time to the idle worker; their p50 is B's
//    unloaded latency.
// 2. Flood: client A sends --flood requests of --payload-bytes (about a compile request's
//    sources) as fast as its socket takes them. The broker queues them up to --per-client
//    (max_queued_per_client) and --max-queued (max_queued_requests) and refuses the rest. Once
//    every one of A's requests is queued, running or answered, B sends --probes requests one at a
//    time: its latency under the flood. Target (the issue's): each <= 2 x unloaded p50 + one job.
// 3. Drain: the fake job stops sleeping (so A's queue drains in seconds rather than queue x job),
//    and once the broker holds nothing, 0.5 s later (its housekeeping gives memory back on the
//    next 10 ms tick), the broker's RSS is read again.
// Checked before any figure is printed: every answer carries its own request's payload back, and
// each of A's requests is answered once, done or refused, as the broker's counters say.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/pool_client.h"
#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/malloc_tuning.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::int64_t flood = 20'000;
  std::int64_t job_ms = 20;
  std::int64_t payload_bytes = 16 << 10;
  std::int64_t per_client = WorkPoolBrokerOptions{}.max_queued_per_client;
  std::int64_t max_queued = WorkPoolBrokerOptions{}.max_queued_requests;
  std::int64_t probes = 10;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_pool_fairness: %s\n", what.c_str());
  std::exit(1);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A field of /proc/PID/status in kB ("VmRSS", "VmHWM") as MiB.
double status_mib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::atof(line.c_str() + field.size() + 1) / 1024;
  }
  fail("no " + field + " in /proc/" + std::to_string(pid) + "/status");
}

struct BrokerChild {
  pid_t pid = -1;
  std::string client_endpoint, worker_endpoint;
};

// Forks a process that runs only the broker until SIGTERM (or its parent's death). Must run
// before this process starts a thread.
BrokerChild fork_broker(const WorkPoolBrokerOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) fail("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) fail("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);  // before the broker's threads start
    (void)setup_logging({.level = "info"});      // its "pool queue drained" line
    auto broker = WorkPoolBroker::start(options);
    const std::string line =
        broker ? (*broker)->client_endpoint() + " " + (*broker)->worker_endpoint() + "\n"
               : "error " + broker.error().to_string() + "\n";
    if (::write(fds[1], line.data(), line.size()) < 0 || !broker) ::_exit(2);
    ::close(fds[1]);
    int sig = 0;
    sigwait(&term, &sig);
    (*broker)->stop();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string line;
  char c;
  while (::read(fds[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(fds[0]);
  BrokerChild child{pid, {}, {}};
  std::istringstream(line) >> child.client_endpoint >> child.worker_endpoint;
  if (child.client_endpoint.empty() || child.client_endpoint == "error") {
    fail("the broker did not start: " + line);
  }
  return child;
}

PoolRequest request(const std::string& id, std::string payload) {
  PoolRequest r;
  r.header.request_id = RequestId{id};
  r.header.run_id = RunId{"bench-fairness"};
  r.header.deadline_unix_ms = now_unix_ms() + 900'000;
  r.payload = std::move(payload);
  return r;
}

// The payload of request `id`: `bytes` long, starting with the id so echoes can be checked.
std::string payload_of(const std::string& id, std::size_t bytes) {
  std::string p = id + ":";
  p.resize(std::max(bytes, p.size()), 'x');
  return p;
}

PoolStats stats_of(PoolClient& client) {
  auto s = client.stats();
  if (!s) fail("stats: " + s.error().to_string());
  return *s;
}

template <class F>
void wait_for(const char* what, F condition, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) fail(std::string("timed out waiting for ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// B's request `id`, timed; fails the bench on a wrong or missing answer.
double timed_call(PoolClient& b, const std::string& id) {
  const std::string payload = payload_of(id, 64);
  const auto t0 = Clock::now();
  auto out = b.call(request(id, payload));
  const double ms = ms_since(t0);
  if (!out) fail("client B's " + id + ": " + out.error().to_string());
  if (*out != "done:" + payload.substr(0, id.size())) fail("client B's " + id + ": wrong answer");
  return ms;
}

// Client A's flood: every request sent (again, while its socket is past the high-water mark) and
// every answer sorted.
struct Flood {
  std::mutex mutex;
  std::vector<std::int64_t> to_resend;  // refused with pool.client_backlog, under mutex
  std::atomic<std::int64_t> done{0}, client_busy{0}, busy{0}, wrong{0};
  std::string first_wrong;  // under mutex
  std::int64_t answered() const { return done + client_busy + busy + wrong; }
};

void send_flood(PoolClient& a, Flood& flood, const Args& args) {
  auto send = [&](std::int64_t i) {
    const std::string id = "a-" + std::to_string(i);
    a.call_async(request(id, payload_of(id, args.payload_bytes)), [&flood, i, id](PoolOutcome o) {
      std::lock_guard lock(flood.mutex);
      if (o.result) {
        if (*o.result == "done:" + id) {
          ++flood.done;
        } else if (flood.wrong++ == 0) {
          flood.first_wrong = id + " answered '" + o.result->substr(0, 64) + "'";
        }
        return;
      }
      const std::string& code = o.result.error().code;
      if (code == "pool.client_backlog") {
        flood.to_resend.push_back(i);
      } else if (code == "pool.client_busy") {
        ++flood.client_busy;
      } else if (code == "pool.busy") {
        ++flood.busy;
      } else {
        if (flood.wrong++ == 0) flood.first_wrong = o.result.error().to_string();
      }
    });
  };
  for (std::int64_t i = 0; i < args.flood; ++i) send(i);
  for (;;) {
    std::vector<std::int64_t> again;
    {
      std::lock_guard lock(flood.mutex);
      again.swap(flood.to_resend);
    }
    if (again.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (std::int64_t i : again) send(i);
  }
}

bool parse(int argc, char** argv, Args& args) {
  struct Option {
    const char* name;
    std::int64_t* value;
    std::int64_t min, max;
  };
  const Option options[] = {{"--flood=", &args.flood, 1, 1'000'000},
                            {"--job-ms=", &args.job_ms, 1, 10'000},
                            {"--payload-bytes=", &args.payload_bytes, 64, 64 << 20},
                            {"--per-client=", &args.per_client, 1, 10'000'000},
                            {"--max-queued=", &args.max_queued, 0, 10'000'000},
                            {"--probes=", &args.probes, 1, 1'000}};
  for (int i = 1; i < argc; ++i) {
    bool known = false;
    for (const Option& o : options) {
      const std::size_t n = std::strlen(o.name);
      if (std::strncmp(argv[i], o.name, n) != 0) continue;
      char* end = nullptr;
      const long long v = std::strtoll(argv[i] + n, &end, 10);
      if (end == argv[i] + n || *end != '\0' || v < o.min || v > o.max) {
        std::fprintf(stderr, "bench_pool_fairness: %s wants %lld..%lld, got '%s'\n", o.name,
                     static_cast<long long>(o.min), static_cast<long long>(o.max), argv[i] + n);
        return false;
      }
      *o.value = v;
      known = true;
    }
    if (!known) {
      std::fprintf(stderr,
                   "usage: bench_pool_fairness [--flood=20000] [--job-ms=20] "
                   "[--payload-bytes=16384] [--per-client=5000] [--max-queued=10000] "
                   "[--probes=10]\n");
      return false;
    }
  }
  return true;
}

int run(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, args)) return 2;
  // As every cuda-agent process does first (cli/main.cpp); the broker child inherits it.
  (void)tune_malloc_for_large_messages();
  WorkPoolBrokerOptions bo;
  bo.name = "bench-pool";
  bo.max_queued_per_client = args.per_client;
  bo.max_queued_requests = args.max_queued;
  const BrokerChild broker = fork_broker(bo);
  (void)setup_logging({.level = "warn"});
  std::printf(
      "bench_pool_fairness: a benchmark of queueing, not of compiles: one worker, one slot, a fake "
      "job that sleeps %lld ms; broker in child pid %d, max_queued_per_client %lld, "
      "max_queued_requests %lld\n",
      static_cast<long long>(args.job_ms), broker.pid, static_cast<long long>(args.per_client),
      static_cast<long long>(args.max_queued));

  std::atomic<bool> slow{true};
  PoolWorkerOptions wo;
  wo.broker_endpoint = broker.worker_endpoint;
  wo.worker_id = WorkerId{"bench-worker"};
  wo.slots = 1;
  auto worker = PoolWorker::start(wo, [&](const WorkItem& item) -> Expected<std::string> {
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(args.job_ms));
    const std::string p = item.payload.str();
    return "done:" + p.substr(0, p.find(':'));
  });
  if (!worker) fail(worker.error().to_string());
  auto a = PoolClient::connect({.broker_endpoint = broker.client_endpoint});
  auto b = PoolClient::connect({.broker_endpoint = broker.client_endpoint});
  if (!a || !b) fail("cannot make the clients");
  wait_for(
      "the worker", [&] { return stats_of(**b).workers.size() == 1; }, std::chrono::seconds(30));

  // 1. unloaded
  for (int i = 0; i < 3; ++i) (void)timed_call(**b, "b-warm-" + std::to_string(i));
  std::vector<double> unloaded;
  for (int i = 0; i < 20; ++i) unloaded.push_back(timed_call(**b, "b-idle-" + std::to_string(i)));
  const double unloaded_p50 = percentile(unloaded, 0.5);
  const double rss_before = status_mib(broker.pid, "VmRSS");

  // 2. flood
  Flood flood;
  const auto flood_t0 = Clock::now();
  send_flood(**a, flood, args);
  PoolStats peak;
  wait_for(
      "client A's requests to reach the broker",
      [&] {
        peak = stats_of(**b);
        return flood.answered() + static_cast<std::int64_t>(peak.queue_depth + peak.in_flight) >=
               args.flood;
      },
      std::chrono::seconds(120));
  const double flood_ms = ms_since(flood_t0);
  const double rss_peak = status_mib(broker.pid, "VmRSS");
  std::vector<double> loaded;
  for (std::int64_t i = 0; i < args.probes; ++i) {
    loaded.push_back(timed_call(**b, "b-flood-" + std::to_string(i)));
  }
  const std::uint64_t queue_after_probes = stats_of(**b).queue_depth;

  // 3. drain
  slow = false;
  const auto drain_t0 = Clock::now();
  wait_for(
      "client A's answers", [&] { return flood.answered() >= args.flood; },
      std::chrono::seconds(600));
  PoolStats end;
  wait_for(
      "an idle broker",
      [&] {
        end = stats_of(**b);
        return end.queue_depth == 0 && end.in_flight == 0;
      },
      std::chrono::seconds(60));
  const double drain_ms = ms_since(drain_t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double rss_after = status_mib(broker.pid, "VmRSS");
  const double rss_hwm = status_mib(broker.pid, "VmHWM");

  if (flood.wrong != 0)
    fail("client A: " + std::to_string(flood.wrong) +
         " wrong answers, first: " + flood.first_wrong);
  if (flood.answered() != args.flood) fail("client A: answers do not add up");
  if (end.rejected_busy != static_cast<std::uint64_t>(flood.client_busy + flood.busy)) {
    fail("the broker's rejected_busy (" + std::to_string(end.rejected_busy) +
         ") is not client A's refusals");
  }

  const double target = 2 * unloaded_p50 + static_cast<double>(args.job_ms);
  const double worst = *std::max_element(loaded.begin(), loaded.end());
  std::printf(
      "client A: %lld requests of %lld B sent in %.0f ms: %lld queued at the peak (+%llu "
      "running), %lld refused pool.client_busy, %lld refused pool.busy; all answered correctly\n",
      static_cast<long long>(args.flood), static_cast<long long>(args.payload_bytes), flood_ms,
      static_cast<long long>(peak.queue_depth), static_cast<unsigned long long>(peak.in_flight),
      static_cast<long long>(flood.client_busy.load()), static_cast<long long>(flood.busy.load()));
  std::printf("client B unloaded: p50 %.1f ms of 20 (min %.1f, max %.1f)\n", unloaded_p50,
              *std::min_element(unloaded.begin(), unloaded.end()),
              *std::max_element(unloaded.begin(), unloaded.end()));
  std::printf(
      "client B under the flood: %lld requests one at a time: p50 %.1f ms, max %.1f ms (%llu of "
      "A's still queued after them)\n",
      static_cast<long long>(args.probes), percentile(loaded, 0.5), worst,
      static_cast<unsigned long long>(queue_after_probes));
  std::printf("target 2 x unloaded + one job = %.1f ms; max / target = %.2f (%s)\n", target,
              worst / target, worst <= target ? "met" : "MISSED");
  std::printf(
      "broker RSS: %.1f MiB before the flood, %.1f MiB at the peak queue (high-water %.1f MiB), "
      "%.1f MiB 0.5 s after the drain (the rest of A's queue drained in %.0f ms with the job not "
      "sleeping)\n",
      rss_before, rss_peak, rss_hwm, rss_after, drain_ms);

  a->reset();
  b->reset();
  worker->reset();
  ::kill(broker.pid, SIGTERM);
  int status = 0;
  ::waitpid(broker.pid, &status, 0);
  return 0;
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) { return cuda_agent::run(argc, argv); }
