#include "rollout/pool_bench.h"

#include <memory>

#include "core/clock.h"
#include "core/content_hash.h"

namespace cuda_agent {

FarmEvaluationTools::Evaluator pool_bench_evaluator(std::shared_ptr<BenchClient> bench,
                                                    PoolBenchSettings settings) {
  auto ids = std::make_shared<ToolRequestIds>(settings.request_key);
  return [bench, settings, ids](BenchRequest request) -> Expected<EvaluationOutcome> {
    const BenchPayload& p = *request.payload;
    request.header.request_id =
        ids->next("bench", ContentHasher()
                               .add(settings.task_id)
                               .add(p.task_model_py)
                               .add(request.artifact.hash)
                               .add(p.model_new_py)
                               .add(std::to_string(static_cast<int>(request.mode)))
                               .add(request.options.remeasure_baselines ? "final" : "agent")
                               .hex());
    request.header.run_id = settings.run_id;
    request.header.deadline_unix_ms = now_unix_ms() + settings.timeout_ms;
    request.task.task_id = settings.task_id;
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
