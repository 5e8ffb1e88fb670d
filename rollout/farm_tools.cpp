#include "rollout/farm_tools.h"

#include <algorithm>
#include <sstream>

#include "core/clock.h"
#include "core/content_hash.h"
#include "gpu_bench/bench_report.h"

namespace cuda_agent {

Expected<FarmBuildSettings> farm_build_settings(const CompileOptions& compile) {
  ASSIGN_OR_RETURN(LibraryPolicy policy, parse_library_policy(compile.library_policy));
  FarmBuildSettings s;
  s.target_arch = compile.target_arch;
  s.library_policy = policy;
  s.compile_timeout_ms = std::max(s.compile_timeout_ms, compile.job_wall_ms + 60'000);
  return s;
}

Expected<CompileResult> FarmEvaluationTools::compile(const std::vector<SourceFile>& files) {
  CompileRequest r;
  ContentHasher digest;
  digest.add(settings_.target_arch).add(std::to_string(static_cast<int>(settings_.library_policy)));
  for (const SourceFile& f : files) digest.add(f.path).add(f.content);
  r.header.request_id = ids_.next("compile", digest.hex());
  r.header.deadline_unix_ms = now_unix_ms() + settings_.compile_timeout_ms;
  r.files = files;
  r.target_arch = settings_.target_arch;
  r.library_policy = settings_.library_policy;
  return client_.call(std::move(r));
}

Expected<EvaluationOutcome> FarmEvaluationTools::evaluate(BenchMode mode,
                                                          const std::string& model_py,
                                                          const std::vector<SourceFile>& files,
                                                          const CompileResult& built,
                                                          bool final_evaluation) {
  if (!evaluator_)
    return make_error(ErrorCategory::kUnavailable, "episode.no_bench",
                      "no GPU bench is connected to this rollout worker");
  auto model_new = std::find_if(files.begin(), files.end(),
                                [](const SourceFile& f) { return f.path == "model_new.py"; });
  if (model_new == files.end())
    return EvaluationOutcome{"the workspace has no model_new.py (class ModelNew)", false, -1, 0};
  BenchRequest request = bench_request(final_evaluation ? BenchMode::kBenchmark : mode, "",
                                       model_py, built, model_new->content);
  request.options.remeasure_baselines = final_evaluation;
  return evaluator_(std::move(request));
}

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
