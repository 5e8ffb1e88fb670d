#include "rollout/local_bench.h"

#include <utility>

namespace cuda_agent {

FarmEvaluationTools::Evaluator local_bench_evaluator(std::shared_ptr<BenchService> bench,
                                                     std::string task_id) {
  return [bench, task_id](BenchRequest request) -> Expected<EvaluationOutcome> {
    request.task.task_id = task_id;
    const BenchMode mode = request.mode;
    ASSIGN_OR_RETURN(BenchEvaluation e, bench->evaluate(BenchJob{.request = std::move(request)}));
    return evaluation_outcome(e, mode);
  };
}

}  // namespace cuda_agent
