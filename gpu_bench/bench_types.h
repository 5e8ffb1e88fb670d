// What one bench evaluation takes in and gives back, in memory: the job (the task, the built
// solution, the options) and the evaluation (BenchResult with its audit record, and what a report
// adds). Shared by the bench that runs jobs (gpu_bench/bench_service.h) and the clients that
// report and store evaluations (gpu_bench/bench_report.h, gpu_bench/bench_store.h), so a client
// does not link the bench.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu_bench/harness_protocol.h"
#include "messages/bench_codec.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

/// Eager and torch.compile medians measured earlier for the same task, GPU, torch version and
/// precision flags (the run store's baseline cache).
struct CachedBaseline {
  double eager_us = 0;
  double compile_us = 0;  ///< 0: unknown
};

/// One evaluation's inputs: the request exactly as it travels to a bench worker, and the baseline
/// medians when the caller has them. The request's payload (the task's model.py and the built
/// solution) is required; its options' zero or empty fields take the service's BenchOptions; a
/// header deadline of 0 leaves only options.bench.harness_wall_ms; seeds empty: the harness draws
/// them; task.task_id names the task in reports ("level1/19_ReLU").
struct BenchJob {
  BenchRequest request;
  std::optional<CachedBaseline> baseline;  ///< set: baselines are not re-measured
};

/// A request to evaluate `built` with `model_new_py` against the task `task_model_py` in `mode`,
/// the task and the solution inline (BenchRequest::payload), every option at its default.
BenchRequest bench_request(BenchMode mode, std::string task_id, std::string task_model_py,
                           const CompileResult& built, std::string model_new_py);

/// A finished evaluation: BenchResult (checks, trials, speedups, reward, audit, violations) and
/// what a report adds (spreads, the time breakdown, notes).
struct BenchEvaluation {
  BenchResult result;
  bool passed = false;         ///< every check passed and no failing violation
  HarnessResult harness;       ///< the parsed result (its `result` moved into `result` above)
  std::string harness_output;  ///< the child's stdout/stderr, trimmed
  std::string sandbox;         ///< how the child was confined, in words
  bool from_zygote = false;    ///< the harness child was forked from the zygote
};

}  // namespace cuda_agent
