#include "rollout/pool_bench.h"

#include <algorithm>
#include <atomic>

#include "core/clock.h"
#include "rollout/local_bench.h"

namespace cuda_agent {

FarmEvaluationTools::Evaluator pool_bench_evaluator(std::shared_ptr<BenchClient> bench,
                                                    PoolBenchSettings settings) {
  return [bench, settings](BenchMode mode, const std::string& model_py,
                           const std::vector<SourceFile>& files, const CompileResult& built,
                           bool final_evaluation) -> Expected<EvaluationOutcome> {
    static std::atomic<std::uint64_t> n{0};
    auto model_new = std::find_if(files.begin(), files.end(),
                                  [](const SourceFile& f) { return f.path == "model_new.py"; });
    if (model_new == files.end())
      return EvaluationOutcome{"the workspace has no model_new.py (class ModelNew)", false, -1, 0};
    BenchRequest request;
    request.header.request_id =
        RequestId{"episode-bench-" + std::to_string(now_unix_ms()) + "-" + std::to_string(n++)};
    request.header.run_id = settings.run_id;
    request.header.deadline_unix_ms = now_unix_ms() + settings.timeout_ms;
    request.task.task_id = settings.task_id;
    request.artifact.hash = built.artifact_hash;
    request.mode = final_evaluation ? BenchMode::kBenchmark : mode;
    request.options.remeasure_baselines = final_evaluation;
    request.payload = BenchPayload{.task_model_py = model_py,
                                   .shared_object = built.artifact,
                                   .prototypes = built.prototypes,
                                   .model_new_py = model_new->content,
                                   .toolchain = built.toolchain};
    const BenchMode ran = request.mode;
    ASSIGN_OR_RETURN(BenchResult result,
                     bench->evaluate(std::move(request), settings.tags, settings.timeout_ms));
    BenchEvaluation e;
    e.result = std::move(result);
    e.passed = e.result.reward.tier >= 1;  // the worker's verdict, as its reward says
    return evaluation_outcome(e, ran);
  };
}

}  // namespace cuda_agent
