// EvaluationTools on the real services: compile through a compile farm's client
// (compile_farm/compile_client.h, to a remote farm or the embedded one) and verify / benchmark /
// profile through an evaluator that reaches the GPU bench (gpu_bench/).
//
//   FarmEvaluationTools tools(client, {.target_arch = "sm_90"}, bench_evaluator);
//   Episode e = run_episode({..., .tools = &tools});
//
// Threading: as thread-safe as the client and the evaluator (CompileClient is).
#pragma once

#include <functional>
#include <string>

#include "compile_farm/compile_client.h"
#include "compile_farm/compile_options.h"
#include "gpu_bench/bench_types.h"
#include "rollout/episode.h"
#include "rollout/tool_request_ids.h"

namespace cuda_agent {

struct FarmBuildSettings {
  std::string target_arch = "sm_90";
  LibraryPolicy library_policy = LibraryPolicy::kDefault;
  std::int64_t compile_timeout_ms = 300'000;
  /// The episode attempt the calls belong to (episode_request_key): compile request ids are
  /// derived from it (rollout/tool_request_ids.h), so a rerun of the attempt that sends the same
  /// sources is answered from the broker's cache. Empty: fresh ids.
  std::string request_key;
};

/// The settings a run's [compile] options give: its target and library policy (an unknown policy
/// is refused), and a request deadline that leaves room to queue in the farm: the job's wall
/// limit plus a minute, at least the 5-minute default.
Expected<FarmBuildSettings> farm_build_settings(const CompileOptions& compile);

class FarmEvaluationTools final : public EvaluationTools {
 public:
  /// Runs one bench request (rollout/local_bench.h on this machine's GPU, rollout/pool_bench.h
  /// through the bench pool). The request comes made: the mode (a final evaluation is a benchmark
  /// that re-measures the baselines, BenchRunOptions::remeasure_baselines), the task's model.py,
  /// the built solution and its model_new.py inline; the evaluator adds where it goes (task id,
  /// request id, deadline).
  using Evaluator = std::function<Expected<EvaluationOutcome>(BenchRequest request)>;

  FarmEvaluationTools(CompileClient& client, FarmBuildSettings settings, Evaluator evaluator)
      : client_(client),
        settings_(std::move(settings)),
        evaluator_(std::move(evaluator)),
        ids_(settings_.request_key) {}

  Expected<CompileResult> compile(const std::vector<SourceFile>& files) override;
  Expected<EvaluationOutcome> evaluate(BenchMode mode, const std::string& model_py,
                                       const std::vector<SourceFile>& files,
                                       const CompileResult& built, bool final_evaluation) override;

 private:
  CompileClient& client_;
  FarmBuildSettings settings_;
  Evaluator evaluator_;
  ToolRequestIds ids_;
};

/// The report the agent sees, cut to at most `max_lines` lines (the profiler part stays whole).
std::string agent_bench_report(const BenchEvaluation& e, BenchMode mode, std::size_t max_lines);

/// What an episode learns from one evaluation: the agent's report (at most 60 lines), whether it
/// was correct, the reward tier and the speedups. Shared by the local and the pool evaluators.
EvaluationOutcome evaluation_outcome(const BenchEvaluation& e, BenchMode mode);

}  // namespace cuda_agent
