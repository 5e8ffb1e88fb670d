#include "rollout/farm_tools.h"

#include "core/clock.h"
#include "core/content_hash.h"

namespace cuda_agent {

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
  return client_.compile(std::move(r));
}

Expected<EvaluationOutcome> FarmEvaluationTools::evaluate(BenchMode mode,
                                                          const std::string& model_py,
                                                          const std::vector<SourceFile>& files,
                                                          const CompileResult& built,
                                                          bool final_evaluation) {
  if (!evaluator_)
    return make_error(ErrorCategory::kUnavailable, "episode.no_bench",
                      "no GPU bench is connected to this rollout worker");
  return evaluator_(mode, model_py, files, built, final_evaluation);
}

}  // namespace cuda_agent
