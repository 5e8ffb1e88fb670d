// bench_quality_bench: the GPU bench's timing quality and speed (issue 6), through one long-lived
// BenchService on GPU 0 (the bench worker's path), with honest solutions from
// tests/bench_suite/honest built beforehand by the compile service (compile happens elsewhere).
//
//   CUDA_AGENT_SOURCE_DIR=. build/gpu_bench/bench_quality_bench [--repeats 10] [--queue 12]
//       [--entries 05_softmax,06_layer_norm,09_hinge_loss]
//
// Figures:
//  - repeatability: each entry benchmarked --repeats times in a row (100 timed trials each);
//    the coefficient of variation (stdev / mean) of its speedup vs eager (re-measured every run,
//    interleaved with the candidate) and vs torch.compile (measured in the first run, the
//    service's cached median after that, as a worker does), with the candidate median's spread;
//  - latency: wall time of one benchmark-mode evaluation (which includes every correctness
//    check) of the ~1 ms kernel, first with torch.compile measured, then with it cached (three
//    times), the harness child forked from the service's zygote (gpu_bench/harness_zygote.h;
//    the zygote is made ready by one verify-mode evaluation first, as a worker's first request
//    would); then once more through a second service with a fresh Python per request, for
//    comparison; the harness's breakdown (startup, cuda_init, checks and its phases, baselines,
//    trials, recheck);
//  - GPU busy fraction while a queue of --queue benchmark requests (mixed entries) drains: NVML
//    utilization.gpu (the fraction of each sample period in which a kernel ran) sampled every
//    20 ms from the first request to the last result, averaged; and the same per request from the
//    harness's own breakdown (trials seconds / wall seconds).
// Without a GPU it prints why and exits 0.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "compile_farm/compile_service.h"
#include "gpu_bench/bench_service.h"
#include "gpu_bench/device_probe.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

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
  e.job.mode = BenchMode::kBenchmark;
  e.job.task_id = e.name;
  e.job.task_model_py = slurp(dir / "model.py");
  e.job.model_new_py = slurp(dir / "model_new.py");
  e.job.artifact_hash = built.artifact_hash;
  e.job.artifact = built.artifact;
  e.job.prototypes = built.prototypes;
  e.job.toolchain = built.toolchain;
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
  for (const auto& [k, v] : e.harness.breakdown_s) {
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

int run(int argc, char** argv) {
  int repeats = 10, queue = 12;
  // Kernels of 0.1 to 5 ms on the H200 (tests/bench_suite/honest; measure_honest.py's figures);
  // 09_hinge_loss (~1 ms) is the latency case.
  std::string list = "05_softmax,06_layer_norm,09_hinge_loss";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--repeats") repeats = std::atoi(argv[i + 1]);
    if (a == "--queue") queue = std::atoi(argv[i + 1]);
    if (a == "--entries") list = argv[i + 1];
  }
  if (list.find("09_hinge_loss") == std::string::npos) list += ",09_hinge_loss";
  DeviceList devices = list_devices();
  if (devices.devices.empty()) {
    std::printf("bench_quality_bench: no GPU (%s); nothing measured\n",
                devices.no_gpu_reason.c_str());
    return 0;
  }
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  const fs::path honest = fs::path(src ? src : ".") / "tests/bench_suite/honest";
  auto compiler = CompileService::create({});
  if (!compiler) return std::fprintf(stderr, "%s\n", compiler.error().to_string().c_str()), 1;
  std::map<std::string, Entry> entries;
  std::stringstream names_in(list);
  for (std::string name; std::getline(names_in, name, ',');) {
    const DeviceInfo& d = devices.devices[0];
    auto e = build_entry(**compiler, honest / name,
                         "sm_" + std::to_string(d.cc_major * 10 + d.cc_minor));
    if (!e) return std::fprintf(stderr, "%s: %s\n", name.c_str(), e.error().to_string().c_str()), 1;
    entries[name] = std::move(*e);
  }
  auto service = BenchService::create({});
  if (!service) return std::fprintf(stderr, "%s\n", service.error().to_string().c_str()), 1;
  std::printf(
      "bench_quality_bench: %s, one BenchService (harness child forked from its zygote), "
      "100 timed trials per benchmark\n",
      devices.devices[0].name.c_str());

  // The zygote imports torch once per worker: a verify-mode request makes it ready (and is the
  // worker's first request), without caching any baseline.
  {
    BenchJob warm = entries["09_hinge_loss"].job;
    warm.mode = BenchMode::kVerify;
    auto t0 = Clock::now();
    auto e = (*service)->evaluate(warm);
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!e) return std::fprintf(stderr, "%s\n", e.error().to_string().c_str()), 1;
    std::printf(
        "\nfirst request (verify, includes the zygote's start): wall %.2f s, from zygote %d\n"
        "  zygote: %s\n",
        wall, int(e->from_zygote), (*service)->zygote_info().c_str());
  }

  // Latency, while no torch.compile median is cached.
  std::printf("\nlatency of one benchmark-mode evaluation (all checks + timing), 09_hinge_loss:\n");
  auto latency = [&](BenchService& svc, const char* label) {
    auto t0 = Clock::now();
    auto e = svc.evaluate(entries["09_hinge_loss"].job);
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!e) {
      std::fprintf(stderr, "%s\n", e.error().to_string().c_str());
      return false;
    }
    std::printf(
        "  %-30s wall %.2f s, from zygote %d, candidate median %.1f us, passed %d\n"
        "    harness: %s\n",
        label, wall, int(e->from_zygote), median_of(e->result.candidate_trial_us), int(e->passed),
        breakdown(*e).c_str());
    for (const auto& n : e->harness.notes)
      if (n.rfind("harness zygote", 0) == 0) std::printf("    note: %s\n", n.c_str());
    return true;
  };
  for (const char* label : {"torch.compile measured", "torch.compile cached (1)",
                            "torch.compile cached (2)", "torch.compile cached (3)"})
    if (!latency(**service, label)) return 1;
  {
    BenchServiceOptions fresh;
    fresh.bench.harness_zygote = false;
    auto plain = BenchService::create(fresh);
    if (!plain) return std::fprintf(stderr, "%s\n", plain.error().to_string().c_str()), 1;
    for (const char* label : {"fresh python, compile measured", "fresh python, compile cached"})
      if (!latency(**plain, label)) return 1;
  }

  std::printf("\nrepeatability: %d benchmark runs per entry\n", repeats);
  std::printf("  %-14s %10s %9s %9s %10s %9s\n", "entry", "cand us", "vs eager", "cv", "vs compile",
              "cv");
  for (auto& [name, entry] : entries) {
    std::vector<double> se, sc, cand;
    for (int r = 0; r < repeats; ++r) {
      auto e = (*service)->evaluate(entry.job);
      if (!e || !e->passed) {
        std::printf("  %s run %d: %s\n", name.c_str(), r,
                    e ? "failed its checks" : e.error().to_string().c_str());
        return 1;
      }
      se.push_back(e->result.speedup_vs_eager);
      sc.push_back(e->result.speedup_vs_compile);
      cand.push_back(median_of(e->result.candidate_trial_us));
    }
    std::printf("  %-14s %10.1f %8.3fx %8.2f%% %9.3fx %8.2f%%\n", name.c_str(), mean(cand),
                mean(se), 100 * cv(se), mean(sc), 100 * cv(sc));
  }

  std::printf("\nGPU busy fraction while %d benchmark requests drain (artifacts built before):\n",
              queue);
  UtilSampler util;
  if (util.ok()) util.start();
  std::vector<std::string> names;
  for (auto& [name, _] : entries) names.push_back(name);
  double trials_s = 0, harness_s = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < queue; ++i) {
    auto e = (*service)->evaluate(entries[names[i % names.size()]].job);
    if (!e) return std::fprintf(stderr, "%s\n", e.error().to_string().c_str()), 1;
    auto it = e->harness.breakdown_s.find("trials");
    if (it != e->harness.breakdown_s.end()) trials_s += it->second;
    harness_s += e->wall_seconds;
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("  %d requests in %.1f s (%.2f s each, harness child %.2f s each)\n", queue, wall,
              wall / queue, harness_s / queue);
  if (util.ok()) {
    const std::size_t n = util.samples();
    std::printf("  NVML utilization.gpu: %.1f%% busy (%zu samples, 20 ms apart)\n",
                100 * util.stop(), n);
  } else {
    std::printf("  NVML not available: no utilization samples\n");
  }
  std::printf("  timed-trial phase: %.1f%% of the drain's wall time\n", 100 * trials_s / wall);
  return 0;
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) { return cuda_agent::run(argc, argv); }
