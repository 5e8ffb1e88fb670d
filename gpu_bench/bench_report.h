// Reports of one bench evaluation: text for a kernel engineer (`cuda-agent bench`) and the agent,
// JSON for scripts. They show the checks (failures with their errors), candidate / eager /
// torch.compile times with their spread, speedups, the reward tier and why, resources per kernel
// (from the compile farm's ptxas report), policy findings with their reasons, the precision flags,
// and where the time went.
//
//   std::printf("%s", bench_report_text(evaluation, {.task_id = "level1/19_ReLU"}).c_str());
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "gpu_bench/bench_types.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

/// What the report adds beyond the evaluation itself.
struct BenchReportContext {
  std::string task_id;
  std::string mode;                      ///< "verify", "benchmark" or "profile"
  std::vector<KernelResources> kernels;  ///< ptxas resources of the build
  double faster_threshold = 0.05;        ///< for explaining the tier
  double compile_seconds = 0;            ///< the build (0: not shown)
  bool compile_cache_hit = false;
};

std::string bench_report_text(const BenchEvaluation& e, const BenchReportContext& ctx);
std::string bench_report_json(const BenchEvaluation& e, const BenchReportContext& ctx,
                              int indent = 2);
/// {"ok": false, "error": {...}} for an evaluation that could not run.
std::string bench_error_json(const Error& error, int indent = 2);

}  // namespace cuda_agent
