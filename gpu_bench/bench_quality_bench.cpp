// bench_quality_bench: the GPU bench's timing quality and speed (issue 6), through one long-lived
// BenchService on GPU 0 (the bench worker's path), with honest solutions from
// tests/bench_suite/honest built beforehand by the compile service (compile happens elsewhere).
//
//   CUDA_AGENT_SOURCE_DIR=. build/gpu_bench/bench_quality_bench [--repeats 10] [--queue 12]
//       [--entries 05_softmax,06_layer_norm,09_hinge_loss] [--parts latency,cv,queue]
//       [--cached 3]
//
// Every row is printed (and flushed) as soon as it is measured, saying how it was measured, so a
// run cut by a time limit keeps every finished row. Each part opens with an estimate of its
// duration (from this run's measurements where there are some, else the H200 figures in
// docs/BENCHMARKS.md). The parts, cheapest and most important first (--parts picks some):
//  - first request: one verify-mode evaluation, which makes the zygote (gpu_bench/harness_zygote.h)
//    ready as a worker's first request would, without caching any baseline (always run);
//  - latency: wall time of one benchmark-mode evaluation (which includes every correctness
//    check) of the ~1 ms kernel (09_hinge_loss), first with its baselines (eager, torch.compile)
//    measured, then with both cached as a worker caches them for non-final requests (--cached
//    times), the harness child forked from the service's zygote; then twice
//    through a second service with a fresh Python per request, for comparison; each with the
//    harness's breakdown (startup, cuda_init, checks and its phases, baselines, trials, recheck);
//  - cv (repeatability): each entry benchmarked --repeats times in a row (100 timed trials each);
//    the coefficient of variation (stdev / mean) of its speedup vs eager (re-measured every run,
//    interleaved with the candidate, as in a final evaluation: a service of its own with
//    reuse_eager_baseline off) and vs torch.compile (measured in the first run, the service's
//    cached median after that, as a worker does), with the candidate median's mean;
//    every run is printed as it ends, the entry's row after its last run;
//  - queue: GPU busy fraction while a queue of --queue benchmark requests (mixed entries) drains:
//    NVML utilization.gpu (the fraction of each sample period in which a kernel ran) sampled
//    every 20 ms from the first request to the last result, averaged; and the same from the
//    harness's own breakdown (trials seconds / wall seconds). Every request is printed as it ends.
// A part that fails says why and the next one still runs (exit status 1). Entries are built when
// a part first needs them. SIGTERM or SIGINT (a stage's time limit) leaves a line naming the part
// it cut. Without a GPU it prints why and exits 0.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "compile_farm/compile_service.h"
#include "gpu_bench/bench_service.h"
#include "gpu_bench/device_probe.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const Clock::time_point g_start = Clock::now();

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One line (or more) to stdout, flushed at once: stdout is usually a pipe (tee) that a time limit
// may cut, and a block-buffered pipe would lose everything not yet flushed.
__attribute__((format(printf, 1, 2))) void say(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vprintf(fmt, args);
  va_end(args);
  std::fflush(stdout);
}

// The part running now, for the line a terminating signal leaves (stages-node-run's time limit
// sends SIGTERM to the stage's process group); its rows above are complete. The harness children
// die with this process (PR_SET_PDEATHSIG in core/sandbox.cpp and the zygote).
const char* const kPartNames[] = {"set-up", "first request", "latency", "cv", "queue", "the end"};
volatile std::sig_atomic_t g_part = 0;

void on_terminate(int sig) {
  const char* head = "\nbench_quality_bench: cut by a signal during ";
  const char* part = kPartNames[g_part];
  (void)!::write(STDOUT_FILENO, head, std::strlen(head));
  (void)!::write(STDOUT_FILENO, part, std::strlen(part));
  const char* tail = "; every row above is complete\n";
  (void)!::write(STDOUT_FILENO, tail, std::strlen(tail));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A part's heading: what it measures, when it starts (seconds into the run) and its estimate.
void open_part(int part, const char* title, double estimate_s, const std::string& basis) {
  g_part = part;
  say("\n[%.0f s] %s\n  estimate: ~%.0f s (%s)\n", since(g_start), title, estimate_s,
      basis.c_str());
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Entry {
  std::string name;
  BenchJob job;
};

Expected<Entry> build_entry(CompileService& compiler, const fs::path& dir,
                            const std::string& arch) {
  CompileRequest req;
  req.target_arch = arch;
  for (const auto& f : fs::recursive_directory_iterator(dir / "kernels")) {
    if (f.is_regular_file())
      req.files.push_back({fs::relative(f.path(), dir).string(), slurp(f.path())});
  }
  ASSIGN_OR_RETURN(CompileResult built, compiler.compile(req));
  Entry e;
  e.name = dir.filename().string();
  e.job.request = bench_request(BenchMode::kBenchmark, e.name, slurp(dir / "model.py"), built,
                                slurp(dir / "model_new.py"));
  return e;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

double cv(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return m > 0 ? std::sqrt(ss / double(v.size() - 1)) / m : 0;
}

std::string breakdown(const BenchEvaluation& e) {
  std::string out;
  for (const auto& [k, v] : e.result.phases_s) {
    char b[64];
    std::snprintf(b, sizeof b, "%s%s %.2f", out.empty() ? "" : ", ", k.c_str(), v);
    out += b;
  }
  return out;
}

// NVML utilization.gpu of device 0, sampled on a thread (libnvidia-ml comes with the driver;
// loaded at run time so the benchmark builds where there is none).
class UtilSampler {
 public:
  UtilSampler() {
    lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib_) return;
    auto init = reinterpret_cast<int (*)()>(::dlsym(lib_, "nvmlInit_v2"));
    auto handle =
        reinterpret_cast<int (*)(unsigned, void**)>(::dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
    get_ =
        reinterpret_cast<int (*)(void*, unsigned*)>(::dlsym(lib_, "nvmlDeviceGetUtilizationRates"));
    if (!init || !handle || !get_ || init() != 0 || handle(0, &dev_) != 0) get_ = nullptr;
  }
  ~UtilSampler() {
    if (thread_.joinable()) (void)stop();
  }
  bool ok() const { return get_ != nullptr; }
  void start() {
    stop_ = false;
    thread_ = std::thread([this] {
      while (!stop_) {
        unsigned rates[2] = {0, 0};  // nvmlUtilization_t: gpu, memory (percent)
        if (get_(dev_, rates) == 0) samples_.push_back(rates[0]);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  /// Stops sampling; the mean busy fraction (0..1). samples() is valid after this.
  double stop() {
    stop_ = true;
    thread_.join();
    return mean(samples_) / 100.0;
  }
  std::size_t samples() const { return samples_.size(); }

 private:
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  int (*get_)(void*, unsigned*) = nullptr;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<double> samples_;
};

struct Args {
  int repeats = 10;
  int queue = 12;
  int cached = 3;  ///< latency rows with torch.compile cached, through the zygote
  // Kernels of 0.1 to 5 ms on the H200 (tests/bench_suite/honest; measure_honest.py's figures);
  // 09_hinge_loss (~1 ms) is the latency case.
  std::string entries = "05_softmax,06_layer_norm,09_hinge_loss";
  std::set<std::string> parts = {"latency", "cv", "queue"};
};

const char* kUsage =
    "usage: bench_quality_bench [--repeats N] [--queue N] [--cached N] [--entries A,B,...]\n"
    "                           [--parts latency,cv,queue]\n"
    "  --repeats N   cv: benchmark runs per entry (default 10)\n"
    "  --queue N     queue: requests in the drained queue (default 12)\n"
    "  --cached N    latency: zygote rows with torch.compile cached (default 3)\n"
    "  --entries     tests/bench_suite/honest entries (09_hinge_loss is always added)\n"
    "  --parts       which parts run, in the fixed order latency, cv, queue (default all)\n";

// Empty on success, else what is wrong.
std::string parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; i += 2) {
    const std::string opt = argv[i];
    if (i + 1 >= argc) return opt + " needs a value";
    const std::string val = argv[i + 1];
    auto count = [&](int& out, int min) {
      out = std::atoi(val.c_str());
      return out >= min ? std::string() : opt + " must be at least " + std::to_string(min);
    };
    std::string err;
    if (opt == "--repeats") {
      err = count(a.repeats, 1);
    } else if (opt == "--queue") {
      err = count(a.queue, 1);
    } else if (opt == "--cached") {
      err = count(a.cached, 0);
    } else if (opt == "--entries") {
      a.entries = val;
    } else if (opt == "--parts") {
      a.parts.clear();
      std::stringstream in(val);
      for (std::string p; std::getline(in, p, ',');) {
        if (p != "latency" && p != "cv" && p != "queue") return "unknown part '" + p + "'";
        a.parts.insert(p);
      }
    } else {
      return "unknown option " + opt;
    }
    if (!err.empty()) return err;
  }
  if (a.entries.find("09_hinge_loss") == std::string::npos) a.entries += ",09_hinge_loss";
  return "";
}

// Walls of one evaluation or build: priors from docs/BENCHMARKS.md (H200, fresh Python per
// request), replaced by this run's own figures as they come.
struct Estimates {
  double build_s = 20;      ///< one entry through the compile service (prior: a guess)
  double first_s = 8;       ///< the first request, the zygote's start included (a guess)
  double measured_s = 9.6;  ///< benchmark with torch.compile measured
  double cached_s = 6.5;    ///< benchmark with torch.compile cached
  std::string basis = "priors: docs/BENCHMARKS.md H200 walls, fresh Python";
};

class QualityBench {
 public:
  QualityBench(Args args, const DeviceInfo& device, std::unique_ptr<CompileService> compiler)
      : args_(std::move(args)), device_(device), compiler_(std::move(compiler)) {
    std::stringstream in(args_.entries);
    for (std::string name; std::getline(in, name, ',');) names_.insert(name);
  }

  int run() {
    say("bench_quality_bench: %s, one BenchService (harness child forked from its zygote), %lld "
        "timed trials per benchmark; parts:%s%s%s\n",
        device_.name.c_str(), static_cast<long long>(BenchOptions{}.timed_trials),
        args_.parts.count("latency") ? " latency" : "", args_.parts.count("cv") ? " cv" : "",
        args_.parts.count("queue") ? " queue" : "");
    if (!first_request()) return 1;
    bool ok = true;
    if (args_.parts.count("latency")) ok = latency() && ok;
    if (args_.parts.count("cv")) ok = repeatability() && ok;
    if (args_.parts.count("queue")) ok = queue() && ok;
    g_part = 5;
    say("\n[%.0f s] bench_quality_bench: done%s\n", since(g_start), ok ? "" : " (a part failed)");
    return ok ? 0 : 1;
  }

 private:
  // The entry, built through the compile service the first time it is asked for; null on error.
  const Entry* entry(const std::string& name) {
    if (auto it = entries_.find(name); it != entries_.end()) return &it->second;
    const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
    const fs::path dir = fs::path(src ? src : ".") / "tests/bench_suite/honest" / name;
    const auto t0 = Clock::now();
    auto e = build_entry(*compiler_, dir,
                         "sm_" + std::to_string(device_.cc_major * 10 + device_.cc_minor));
    if (!e) {
      say("  build %s: %s\n", name.c_str(), e.error().to_string().c_str());
      return nullptr;
    }
    est_.build_s = since(t0);
    say("  built %s through the compile service in %.1f s\n", name.c_str(), est_.build_s);
    return &(entries_[name] = std::move(*e));
  }
  int unbuilt() const {
    int n = 0;
    for (const auto& name : names_) n += entries_.count(name) ? 0 : 1;
    return n;
  }

  // The zygote imports torch once per worker: a verify-mode request makes it ready (and is the
  // worker's first request), without caching any baseline. The service (and so its zygote)
  // starts after the build, so the request's wall holds the zygote's whole start.
  bool first_request() {
    open_part(1, "first request: verify mode, 09_hinge_loss, includes the zygote's start",
              est_.build_s + est_.first_s, est_.basis);
    const Entry* hinge = entry("09_hinge_loss");
    if (!hinge) return false;
    auto service = BenchService::create({});
    if (!service) return say("  bench service: %s\n", service.error().to_string().c_str()), false;
    service_ = std::move(*service);
    BenchJob warm = hinge->job;
    warm.request.mode = BenchMode::kVerify;
    const auto t0 = Clock::now();
    auto e = service_->evaluate(warm);
    const double wall = since(t0);
    if (!e) return say("  first request: %s\n", e.error().to_string().c_str()), false;
    say("  first request: wall %.2f s, from zygote %d\n  zygote: %s\n", wall, int(e->from_zygote),
        service_->zygote_info().c_str());
    // Not forked: why (the zygote's notes travel with the evaluation), so the latency rows
    // labelled "zygote" are not mistaken for forked children.
    for (const std::string& n : e->harness.notes)
      if (n.rfind("harness zygote", 0) == 0) say("  %s\n", n.c_str());
    return true;
  }

  // One benchmark-mode evaluation of 09_hinge_loss through `svc`, printed; its wall, or -1.
  double latency_row(BenchService& svc, const std::string& label) {
    const auto t0 = Clock::now();
    auto e = svc.evaluate(entries_.at("09_hinge_loss").job);
    const double wall = since(t0);
    if (!e) return say("  %s: %s\n", label.c_str(), e.error().to_string().c_str()), -1;
    say("  %-34s wall %.2f s, from zygote %d, candidate median %.1f us, passed %d\n"
        "    harness (s): %s\n",
        label.c_str(), wall, int(e->from_zygote), median_of(e->result.candidate_trial_us),
        int(e->passed), breakdown(*e).c_str());
    for (const auto& n : e->harness.notes)
      if (n.rfind("harness zygote", 0) == 0) say("    note: %s\n", n.c_str());
    return wall;
  }

  // Latency, while no torch.compile median is cached (the first request was verify mode).
  bool latency() {
    char title[200];
    std::snprintf(title, sizeof title,
                  "latency: wall of one benchmark-mode evaluation (all checks + timing) of "
                  "09_hinge_loss, %d through the zygote, 2 with a fresh Python",
                  1 + args_.cached);
    open_part(2, title, 2 * est_.measured_s + (1 + args_.cached) * est_.cached_s, est_.basis);
    const double measured = latency_row(*service_, "zygote, baselines measured");
    if (measured < 0) return false;
    std::vector<double> cached;
    for (int i = 1; i <= args_.cached; ++i) {
      const double w =
          latency_row(*service_, "zygote, baselines cached (" + std::to_string(i) + ")");
      if (w < 0) return false;
      cached.push_back(w);
    }
    est_.measured_s = measured;
    if (!cached.empty()) est_.cached_s = mean(cached);
    est_.basis = "this run's 09_hinge_loss latency walls";
    BenchServiceOptions fresh;
    fresh.bench.harness_zygote = false;
    auto plain = BenchService::create(fresh);
    if (!plain) return say("  fresh python: %s\n", plain.error().to_string().c_str()), false;
    for (const char* label : {"fresh python, baselines measured", "fresh python, baselines cached"})
      if (latency_row(**plain, label) < 0) return false;
    return true;
  }

  bool repeatability() {
    char title[200];
    std::snprintf(title, sizeof title,
                  "repeatability (cv): %d benchmark runs per entry, %zu entries; cv = stdev / mean",
                  args_.repeats, names_.size());
    const double n = double(names_.size());
    open_part(
        3, title,
        unbuilt() * est_.build_s + n * (est_.measured_s + (args_.repeats - 1) * est_.cached_s),
        est_.basis + "; walls differ with each kernel's time");
    // Eager timed in every run beside the candidate, as a final evaluation times it.
    BenchServiceOptions cv_options;
    cv_options.reuse_eager_baseline = false;
    auto cv_service = BenchService::create(cv_options);
    if (!cv_service)
      return say("  cv service: %s\n", cv_service.error().to_string().c_str()), false;
    bool ok = true;
    std::vector<double> walls;
    for (const auto& name : names_) {
      const Entry* entry = this->entry(name);
      if (!entry) {
        ok = false;
        continue;
      }
      std::vector<double> se, sc, cand;
      for (int r = 1; r <= args_.repeats; ++r) {
        const auto t0 = Clock::now();
        auto e = (*cv_service)->evaluate(entry->job);
        walls.push_back(since(t0));
        if (!e || !e->passed) {
          say("  %s run %d: %s\n", name.c_str(), r,
              e ? "failed its checks" : e.error().to_string().c_str());
          ok = false;
          break;
        }
        se.push_back(e->result.speedup_vs_eager);
        sc.push_back(e->result.speedup_vs_compile);
        cand.push_back(median_of(e->result.candidate_trial_us));
        say("    %-14s run %2d/%d: wall %.2f s, candidate median %.1f us, vs eager %.3fx, vs "
            "compile %.3fx (%s)\n",
            name.c_str(), r, args_.repeats, walls.back(), cand.back(), se.back(), sc.back(),
            e->result.compile_trial_us.empty() ? "compile cached" : "compile measured");
      }
      if (int(se.size()) != args_.repeats) continue;
      say("  %-14s %d runs: candidate %.1f us, vs eager %.3fx cv %.2f%%, vs compile %.3fx cv "
          "%.2f%%\n",
          name.c_str(), args_.repeats, mean(cand), mean(se), 100 * cv(se), mean(sc), 100 * cv(sc));
    }
    if (!walls.empty()) {
      est_.cached_s = mean(walls);
      est_.basis = "this run's mean wall over the cv runs";
    }
    return ok;
  }

  bool queue() {
    char title[200];
    std::snprintf(title, sizeof title,
                  "queue: GPU busy fraction while %d benchmark requests drain (artifacts built "
                  "before)",
                  args_.queue);
    open_part(4, title, unbuilt() * est_.build_s + args_.queue * est_.cached_s, est_.basis);
    std::vector<const Entry*> mixed;
    for (const auto& name : names_)
      if (const Entry* e = entry(name)) mixed.push_back(e);
    if (mixed.size() != names_.size()) return false;
    UtilSampler util;
    if (util.ok()) util.start();
    double trials_s = 0, harness_s = 0;
    int done = 0;
    std::string failure;
    const auto t0 = Clock::now();
    for (int i = 0; i < args_.queue; ++i) {
      const Entry& entry = *mixed[i % mixed.size()];
      const auto r0 = Clock::now();
      auto e = service_->evaluate(entry.job);
      if (!e) {
        failure = e.error().to_string();
        break;
      }
      auto it = e->result.phases_s.find("trials");
      const double trials = it != e->result.phases_s.end() ? it->second : 0;
      trials_s += trials;
      harness_s += e->result.harness_seconds;
      ++done;
      say("    request %2d/%d %-14s wall %.2f s, harness child %.2f s, trials %.2f s\n", done,
          args_.queue, entry.name.c_str(), since(r0), e->result.harness_seconds, trials);
    }
    const double wall = since(t0);
    const double busy = util.ok() ? util.stop() : 0;
    if (!failure.empty()) say("  request %d: %s\n", done + 1, failure.c_str());
    if (done == 0) return false;
    say("  %d requests in %.1f s (%.2f s each, harness child %.2f s each)\n", done, wall,
        wall / done, harness_s / done);
    if (util.ok()) {
      say("  NVML utilization.gpu: %.1f%% busy (%zu samples, 20 ms apart)\n", 100 * busy,
          util.samples());
    } else {
      say("  NVML not available: no utilization samples\n");
    }
    say("  timed-trial phase: %.1f%% of the drain's wall time\n", 100 * trials_s / wall);
    return failure.empty();
  }

  Args args_;
  DeviceInfo device_;
  std::unique_ptr<CompileService> compiler_;
  std::unique_ptr<BenchService> service_;  ///< made by first_request()
  std::set<std::string> names_;            ///< sorted, as the entries were benchmarked before
  std::map<std::string, Entry> entries_;
  Estimates est_;
};

int run(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h"))
    return std::printf("%s", kUsage), 0;
  Args args;
  if (std::string err = parse_args(argc, argv, args); !err.empty())
    return std::fprintf(stderr, "bench_quality_bench: %s\n%s", err.c_str(), kUsage), 2;
  DeviceList devices = list_devices();
  if (devices.devices.empty()) {
    say("bench_quality_bench: no GPU (%s); nothing measured\n", devices.no_gpu_reason.c_str());
    return 0;
  }
  std::signal(SIGTERM, on_terminate);
  std::signal(SIGINT, on_terminate);
  auto compiler = CompileService::create({});
  if (!compiler) return std::fprintf(stderr, "%s\n", compiler.error().to_string().c_str()), 1;
  QualityBench bench(std::move(args), devices.devices[0], std::move(*compiler));
  return bench.run();
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) { return cuda_agent::run(argc, argv); }
