// The bench side of FarmEvaluationTools through the GPU bench pool (gpu_bench/bench_pool.h): an
// Evaluator that sends the task's model.py and the built solution to a bench worker through the
// pool's broker and turns the reply into what the agent sees and what the reward uses. The remote
// twin of local_bench_evaluator (rollout/local_bench.h), used by `cuda-agent serve
// rollout-worker`.
//
//   auto bench = std::shared_ptr<BenchClient>(std::move(*BenchClient::connect({.broker_endpoint =
//       "tcp://coordinator:5553"})));
//   FarmEvaluationTools tools(compile_client, {}, pool_bench_evaluator(bench, {.task_id = id}));
//
// Final evaluations re-measure the baselines with the worker's own fresh seeds; the agent's own
// verify / benchmark / profile calls run in the mode asked. A solution that fails checks is an
// outcome (tier -1); a bench that could not run it (no worker, deadline, harness crash) is an
// Error, which ends the tool call with that error, not the episode.
//
// Threading: as BenchClient (call() may be called from any thread concurrently).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu_bench/bench_client.h"
#include "rollout/farm_tools.h"

namespace cuda_agent {

struct PoolBenchSettings {
  /// Names the task in the request and in audit records (may be empty).
  std::string task_id;
  /// The run the requests belong to (RequestHeader::run_id).
  RunId run_id;
  /// Capability tags a bench worker must have, e.g. {"gpu:NVIDIA H200"}. Default: any GPU.
  std::vector<std::string> tags = {"gpu"};
  /// Deadline of one evaluation, queueing included. Default: 10 min.
  std::int64_t timeout_ms = 600'000;
  /// The episode attempt the evaluations belong to (episode_request_key): request ids are
  /// derived from it and what each sends (rollout/tool_request_ids.h), so a rerun of the attempt
  /// that sends the same artifact is answered from the broker's cache. Empty: fresh ids.
  std::string request_key;
};

FarmEvaluationTools::Evaluator pool_bench_evaluator(std::shared_ptr<BenchClient> bench,
                                                    PoolBenchSettings settings);

}  // namespace cuda_agent
