#include "rollout/local_bench.h"

#include <algorithm>
#include <sstream>

#include "gpu_bench/bench_report.h"

namespace cuda_agent {

std::string agent_bench_report(const BenchEvaluation& e, BenchMode mode, std::size_t max_lines) {
  BenchReportContext ctx;
  ctx.mode = std::string(to_string(mode));
  std::istringstream in(bench_report_text(e, ctx));
  std::string out;
  std::string line;
  std::size_t n = 0;
  std::size_t dropped = 0;
  while (std::getline(in, line)) {
    // Passed checks are noise to the agent; failures, times, reward and findings are not.
    if (line.rfind("  ok    ", 0) == 0 || line.rfind("sandbox:", 0) == 0 ||
        line.rfind("note:", 0) == 0) {
      continue;
    }
    if (n >= max_lines) {
      ++dropped;
      continue;
    }
    out += line + "\n";
    ++n;
  }
  if (dropped) out += "(" + std::to_string(dropped) + " more lines)\n";
  return out;
}

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

EvaluationOutcome evaluation_outcome(const BenchEvaluation& e, BenchMode mode) {
  EvaluationOutcome out;
  out.report = agent_bench_report(e, mode, 60);
  out.correct = e.passed;
  out.reward_tier = e.result.reward.tier;
  out.continuous = e.result.reward.continuous;
  out.speedup_vs_eager = e.result.speedup_vs_eager;
  out.speedup_vs_compile = e.result.speedup_vs_compile;
  out.bench = e.result;
  return out;
}

}  // namespace cuda_agent
