#include "rollout/local_bench.h"

#include <algorithm>

namespace cuda_agent {

FarmEvaluationTools::Evaluator local_bench_evaluator(std::shared_ptr<BenchService> bench,
                                                     std::string task_id) {
  return [bench, task_id](BenchMode mode, const std::string& model_py,
                          const std::vector<SourceFile>& files, const CompileResult& built,
                          bool final_evaluation) -> Expected<EvaluationOutcome> {
    auto model_new = std::find_if(files.begin(), files.end(),
                                  [](const SourceFile& f) { return f.path == "model_new.py"; });
    if (model_new == files.end())
      return EvaluationOutcome{"the workspace has no model_new.py (class ModelNew)", false, -1, 0};
    BenchJob job;
    job.mode = final_evaluation ? BenchMode::kBenchmark : mode;
    job.task_id = task_id;
    job.task_model_py = model_py;
    job.artifact_hash = built.artifact_hash;
    job.artifact = built.artifact;
    job.prototypes = built.prototypes;
    job.model_new_py = model_new->content;
    job.toolchain = built.toolchain;
    job.overrides.remeasure_baselines = final_evaluation;
    ASSIGN_OR_RETURN(BenchEvaluation e, bench->evaluate(job));
    return evaluation_outcome(e, job.mode);
  };
}

}  // namespace cuda_agent
