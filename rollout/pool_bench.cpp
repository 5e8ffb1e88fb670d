#include "rollout/pool_bench.h"

#include <algorithm>
#include <memory>

#include "core/clock.h"
#include "core/content_hash.h"
#include "rollout/local_bench.h"

namespace cuda_agent {

FarmEvaluationTools::Evaluator pool_bench_evaluator(std::shared_ptr<BenchClient> bench,
                                                    PoolBenchSettings settings) {
  auto ids = std::make_shared<ToolRequestIds>(settings.request_key);
  return [bench, settings, ids](BenchMode mode, const std::string& model_py,
                                const std::vector<SourceFile>& files, const CompileResult& built,
                                bool final_evaluation) -> Expected<EvaluationOutcome> {
    auto model_new = std::find_if(files.begin(), files.end(),
                                  [](const SourceFile& f) { return f.path == "model_new.py"; });
    if (model_new == files.end())
      return EvaluationOutcome{"the workspace has no model_new.py (class ModelNew)", false, -1, 0};
    BenchRequest request;
    request.header.request_id = ids->next("bench", ContentHasher()
                                                       .add(settings.task_id)
                                                       .add(model_py)
                                                       .add(built.artifact_hash)
                                                       .add(model_new->content)
                                                       .add(std::to_string(static_cast<int>(mode)))
                                                       .add(final_evaluation ? "final" : "agent")
                                                       .hex());
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
                     bench->call(std::move(request), settings.tags, settings.timeout_ms));
    BenchEvaluation e;
    e.result = std::move(result);
    e.passed = e.result.reward.tier >= 1;  // the worker's verdict, as its reward says
    return evaluation_outcome(e, ran);
  };
}

}  // namespace cuda_agent
