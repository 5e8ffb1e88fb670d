#include "rollout/compile_only_tools.h"

namespace cuda_agent {

Expected<CompileResult> CompileOnlyTools::compile(const std::vector<SourceFile>& files) {
  return farm_.compile(files);
}

Expected<EvaluationOutcome> CompileOnlyTools::evaluate(BenchMode, const std::string&,
                                                       const std::vector<SourceFile>&,
                                                       const CompileResult& built,
                                                       bool final_evaluation) {
  if (!final_evaluation) return EvaluationOutcome{.report = std::string(kCompileOnlyAnswer)};
  // The episode evaluates only a workspace the farm built; a result without an artifact would
  // mean it did not, and is not rewarded.
  if (built.artifact_hash.empty())
    return EvaluationOutcome{.report = "the compile farm returned no artifact: reward -1"};
  return EvaluationOutcome{.report =
                               "the workspace builds under the compile farm's source and "
                               "symbol policies (artifact " +
                               built.artifact_hash + "): reward +1",
                           .correct = false,
                           .reward_tier = 1};
}

}  // namespace cuda_agent
