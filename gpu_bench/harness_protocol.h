// The JSON contract between the bench worker (C++) and its Python harness child
// (gpu_bench/harness/harness.py). docs/formats/harness.md is the contract in words; this header is
// its C++ side: write a request, parse a result.
//
//   HarnessRequest req{.mode = BenchMode::kVerify, .task_model_py = "/job/model.py", ...};
//   write_file(job / "request.json", harness_request_json(req));
//   ... run the harness ...
//   Expected<HarnessResult> r = parse_harness_result(read_file(job / "result.json"));
//
// Parsing never trusts the file (the harness process ran untrusted code): anything malformed is an
// Error "bench.result" of category internal, never an exception; unknown fields are ignored;
// numbers that JSON cannot hold travel as the strings "inf", "-inf" and "nan".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "messages/bench_codec.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

inline constexpr std::string_view kHarnessRequestFormat = "cuda-agent-harness-request";
inline constexpr std::string_view kHarnessResultFormat = "cuda-agent-harness-result";
inline constexpr int kHarnessFormatVersion = 1;

/// The harness's evaluation options (request "options"); see docs/formats/harness.md.
struct HarnessOptions {
  std::string tolerance_profile = "cuda-agent";
  std::int64_t verify_input_sets = 5;
  std::int64_t warmup_trials = 10;
  std::int64_t timed_trials = 100;
  std::int64_t input_sets = 8;
  double checked_trial_fraction = 0.1;
  bool allow_tf32 = false;
  double implausible_speedup = 50.0;
  bool measure_eager = true;    ///< false when the worker has a cached eager baseline
  bool measure_compile = true;  ///< false when the worker has a cached torch.compile baseline
  bool poison_memory = true;
  double input_memory_fraction = 0.25;  ///< of free GPU memory, for the timed input sets
  std::int64_t rss_limit_bytes = 0;     ///< harness resident memory limit; 0: none
  /// Profile mode under Nsight Compute: bracket the profiled calls with cudaProfilerStart/Stop
  /// instead of running the PyTorch profiler (the two cannot share the GPU's counters).
  bool ncu_region = false;
};

/// What the harness reads: paths inside the job directory, the launcher prototypes, the mode.
struct HarnessRequest {
  BenchMode mode = BenchMode::kVerify;
  std::string task_model_py;  ///< path of the task's model.py
  std::string model_new_py;   ///< path of the solution's model_new.py
  std::string library;        ///< path of the built shared object
  std::vector<LauncherPrototype> prototypes;
  int device = 0;  ///< CUDA device index as the harness sees it
  std::vector<std::uint64_t> seeds;
  HarnessOptions options;
};

std::string harness_request_json(const HarnessRequest& request);

/// Summary statistics of one contender's trial times, microseconds.
struct TrialSpread {
  double median = 0;
  double min = 0;
  double max = 0;
  double iqr = 0;  ///< interquartile range
  double cv = 0;   ///< coefficient of variation (stdev / mean)
};

/// The harness's result, parsed. `result` holds what BenchResult carries (checks, trials,
/// violations, the audit fields the harness knows, the profile report); the rest is for reports.
struct HarnessResult {
  bool ok = false;  ///< the evaluation ran (the candidate may still have failed)
  std::optional<Error> error;
  bool passed = false;        ///< every check passed
  bool device_fault = false;  ///< the CUDA context broke (sticky error): health-check the GPU
  BenchResult result;
  std::map<std::string, TrialSpread> spreads;  ///< "candidate", "eager", "compile"
  std::vector<std::string> notes;
  std::vector<std::uint64_t> seeds;
  double idle_overhead_us = 0;
  std::string compile_baseline_error;  ///< why there is no torch.compile baseline, if none
  std::string cuda_runtime;            ///< torch.version.cuda
  int sm_clock_max_mhz = 0;
  int mem_clock_max_mhz = 0;
};

Expected<HarnessResult> parse_harness_result(std::string_view json_text);

/// Median of trial times (0 for none).
double median_of(std::vector<double> values);

}  // namespace cuda_agent
