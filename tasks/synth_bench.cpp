// tasks_synth_bench: how fast `cuda-agent tasks synth` makes a training set (docs/BENCHMARKS.md).
//
// 1. Synthesis of 6,000 tasks (the size of CUDA-Agent-Ops-6K), seed 2026, default options: wall
//    time of synthesize() on one thread, median of 5 runs, in tasks/s. Checked first: every run
//    gives byte-identical sources, each task is 1-5 ops with an estimate inside the accept
//    window, and the chain-length shares are within 0.03 of the default mix.
// 2. Static validation of the same 6,000 programs through the python3 validator (the other cost
//    of `tasks synth --store`): one run, wall time, in tasks/s; every program must pass.
// The interpreter is argv[1] when given (a pyenv shim on PATH adds ~0.7 s per child start).
// Printed: the figures, the machine's core count, and how they were measured.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tasks/python_validator.h"
#include "tasks/synth.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "tasks_synth_bench: FAILED: %s\n", what.c_str());
  std::exit(1);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int run(const char* python) {
  constexpr std::uint64_t kCount = 6000;
  constexpr int kReps = 5;
  SynthOptions o;
  o.seed = 2026;

  std::vector<double> seconds;
  std::vector<SynthTask> reference;
  for (int rep = 0; rep < kReps; ++rep) {
    const auto start = Clock::now();
    auto tasks = synthesize(o, 0, kCount, nullptr);
    seconds.push_back(seconds_since(start));
    if (!tasks) fail(tasks.error().to_string());
    if (rep == 0) {
      reference = std::move(tasks).value();
      continue;
    }
    for (std::size_t i = 0; i < kCount; ++i) {
      if ((*tasks)[i].source != reference[i].source) {
        fail("run " + std::to_string(rep) + " differs at task " + std::to_string(i));
      }
    }
  }
  std::vector<int> lengths(6, 0);
  std::size_t bytes = 0;
  for (const SynthTask& t : reference) {
    if (t.ops.empty() || t.ops.size() > 5) fail(t.name + ": chain length out of range");
    if (t.estimated_ms < o.accept_min_ms || t.estimated_ms > o.accept_max_ms) {
      fail(t.name + ": estimate outside the accept window");
    }
    ++lengths[t.ops.size()];
    bytes += t.source.size();
  }
  for (int l = 1; l <= 5; ++l) {
    const double share = lengths[l] / static_cast<double>(kCount);
    if (std::abs(share - o.length_weights[static_cast<std::size_t>(l - 1)]) > 0.03) {
      fail("chain length " + std::to_string(l) + " share " + std::to_string(share));
    }
  }
  std::sort(seconds.begin(), seconds.end());
  const double med = seconds[seconds.size() / 2];
  std::printf(
      "synthesis: %llu tasks (seed %llu, default mix), median of %d runs: %.3f s = "
      "%.0f tasks/s (min %.3f s, max %.3f s); %.1f MB of Python; chain lengths",
      static_cast<unsigned long long>(kCount), static_cast<unsigned long long>(o.seed), kReps, med,
      kCount / med, seconds.front(), seconds.back(), bytes / 1e6);
  for (int l = 1; l <= 5; ++l) std::printf(" %d:%d", l, lengths[l]);
  std::printf("\n");

  std::vector<SourceToCheck> sources;
  for (const SynthTask& t : reference) sources.push_back({.name = t.name, .source = t.source});
  const auto start = Clock::now();
  ValidatorOptions vo;
  if (python) vo.python = python;
  auto reports = PythonValidator(vo).check(sources, nullptr);
  const double validate_s = seconds_since(start);
  if (!reports) fail(reports.error().to_string());
  for (std::size_t i = 0; i < reports->size(); ++i) {
    if (!(*reports)[i].ok) fail(reference[i].name + " failed validation");
  }
  std::printf(
      "validation: %llu programs through %s -I (ast only, batches of %zu), one "
      "run: %.2f s = %.0f tasks/s; all passed\n",
      static_cast<unsigned long long>(kCount), vo.python.c_str(), vo.batch_files, validate_s,
      kCount / validate_s);
  std::printf(
      "measured on %u hardware threads; synthesis is single-threaded wall time of "
      "synthesize(), validation is wall time of PythonValidator::check (one child at a "
      "time)\n",
      std::thread::hardware_concurrency());
  return 0;
}

}  // namespace
}  // namespace cuda_agent

// Usage: tasks_synth_bench [PYTHON]   (default: python3 from PATH)
int main(int argc, char** argv) { return cuda_agent::run(argc > 1 ? argv[1] : nullptr); }
