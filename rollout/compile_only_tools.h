// EvaluationTools for a run without a GPU: the reward is compile-only. Compiles go to the compile
// farm as with FarmEvaluationTools (rollout/farm_tools.h); nothing is run on a GPU, so no bench
// pool is needed. Selected by [rollout] reward = "compile-only" (rollout/rollout_options.h);
// `cuda-agent train` sets it on a machine without a GPU (examples/single-machine-cpu.toml).
//
//   CompileOnlyTools tools(client, {.target_arch = "sm_90"});
//   Episode e = run_episode({..., .tools = &tools});   // final reward: +1 builds, -1 does not
//
// The reward stays on the protocol's scale (DESIGN.md section 5): +1 when the final workspace
// builds under the farm's source and symbol policies (the farm's static source checks and the
// symbol check of the built shared object), -1 otherwise (no model_new.py, a compile or policy
// failure). The model_new.py AST allow-list is not applied: it runs in the bench harness, which
// needs a GPU. verify, benchmark and profile calls are answered with kCompileOnlyAnswer and tier
// -1, correct = false (nothing was checked). What was measured is said in the final evaluation's
// report (reward_note(), at its head, so the stored trajectory's final tool result records it on
// every path), and an evaluation record of such an episode has verified = false and no speedups.
//
// Threading: as thread-safe as the client (CompileClient is).
#pragma once

#include <string>
#include <string_view>

#include "rollout/farm_tools.h"

namespace cuda_agent {

/// What verify, benchmark and profile answer on a compile-only run.
inline constexpr std::string_view kCompileOnlyAnswer =
    "compile-only reward: no GPU on this run; correctness and speed are not measured";

/// The head of every final evaluation report on a compile-only run.
inline constexpr std::string_view kCompileOnlyRewardNote =
    "compile-only reward (no GPU on this run): +1 when the final workspace builds under the "
    "compile farm's source and symbol policies, -1 otherwise; correctness and speed are not "
    "measured";

class CompileOnlyTools final : public EvaluationTools {
 public:
  CompileOnlyTools(CompileClient& client, FarmBuildSettings settings)
      : farm_(client, std::move(settings), /*evaluator=*/{}) {}

  /// Through the compile farm, as FarmEvaluationTools::compile.
  Expected<CompileResult> compile(const std::vector<SourceFile>& files) override;
  /// Runs nothing: kCompileOnlyAnswer for the agent's calls; for the final evaluation (reached
  /// only once the workspace built), tier +1.
  Expected<EvaluationOutcome> evaluate(BenchMode mode, const std::string& model_py,
                                       const std::vector<SourceFile>& files,
                                       const CompileResult& built, bool final_evaluation) override;
  std::string reward_note() const override { return std::string(kCompileOnlyRewardNote); }

 private:
  FarmEvaluationTools farm_;
};

}  // namespace cuda_agent
