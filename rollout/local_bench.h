// The bench side of FarmEvaluationTools on this machine's GPU: an Evaluator that runs the GPU
// bench harness through a BenchService (gpu_bench/bench_service.h) and turns the evaluation into
// what the agent sees (the bench report) and what the reward uses (tier, continuous).
//
//   auto bench = std::shared_ptr<BenchService>(std::move(*BenchService::create({.device = 0})));
//   FarmEvaluationTools tools(client, {}, local_bench_evaluator(bench));
//
// Final evaluations draw fresh seeds (the harness's own) and re-measure the baselines; the
// agent's own benchmark calls reuse the service's eager and torch.compile medians of the task
// once it has timed them beside a candidate that passed (BenchServiceOptions::
// reuse_eager_baseline, reuse_compile_baseline).
//
// Threading: as the BenchService (calls are serialised on its GPU).
#pragma once

#include <memory>

#include "gpu_bench/bench_service.h"
#include "rollout/farm_tools.h"

namespace cuda_agent {

/// `task_id` names the task in reports and audit records (may be empty).
FarmEvaluationTools::Evaluator local_bench_evaluator(std::shared_ptr<BenchService> bench,
                                                     std::string task_id = "");

}  // namespace cuda_agent
