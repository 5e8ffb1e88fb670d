// One episode (DESIGN.md section 6): the agent improves one task's solution over many turns with
// real compile, verify, benchmark and profile feedback, then a fresh evaluation of the final
// workspace with seeds it never saw decides the reward.
//
//   EpisodeSpec spec{.task_id = id, .model_py = source, .policy = &policy, .tools = &tools};
//   Episode e = run_episode(spec);        // the trajectory, ready for the run store
//
// The loop: the skill document and the task prompt; then, turn by turn, the policy's reply is
// recorded as an assistant turn and its tool calls run in order (file tools on the in-memory
// Workspace, compile through EvaluationTools, verify / benchmark / profile through
// EvaluationTools after a compile of the current files); each result goes back as a tool message
// and a tool turn. A malformed call (arguments that are not a JSON object, an unknown tool, a
// <tool_call> block that does not parse, a reply with no call at all) gets an error observation
// and is counted in counters.invalid_tool_calls, never ends the episode. Repeating the same call
// with the same files (compile, verify, benchmark, read, list) counts as a wasted loop.
//
// Tokens: a model turn keeps the sampled ids and logprobs as the backend gives them (loss mask 1),
// with the policy version the backend reports for it (else spec.policy_version). A backend that
// also reports the prompt's ids (cuda-agent-engine) makes the trajectory token-exact: the ids new
// since the previous model turn go, with loss mask 0, on the turn before it (the task prompt, or
// the tool results); a prompt that does not extend the stored ids (the history re-tokenized) ends
// the episode as aborted ("policy.history_retokenized").
//
// Ends: finish() -> completed; turns, context tokens or wall time spent -> truncated; the policy
// backend failing -> aborted (no final evaluation, reward 0). Completed and truncated episodes get
// the final evaluation: reward = its tier (-1 when the workspace does not build or is wrong).
//
// Threading: run_episode blocks its thread; the tools and policy must be usable from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "messages/bench_codec.h"
#include "messages/trajectory_codec.h"
#include "rollout/policy.h"
#include "rollout/rollout_options.h"
#include "rollout/workspace.h"

namespace cuda_agent {

/// What verify, benchmark and profile report to the agent, and what the final evaluation decides.
struct EvaluationOutcome {
  std::string report;           ///< the observation the agent sees: concise, for a kernel engineer
  bool correct = false;         ///< every correctness check passed
  int reward_tier = -1;         ///< -1 / +1 / +2 / +3 (DESIGN.md section 5)
  double continuous = 0;        ///< continuous speedup reward, when computed
  double speedup_vs_eager = 0;  ///< benchmark mode; 0 when not timed
  double speedup_vs_compile = 0;  ///< benchmark mode; 0 when not timed
  /// The bench's whole result when a GPU bench ran it (checks, trial times, reward, audit): an
  /// evaluation stored from the episode keeps its artifact hash, audit and baselines from here
  /// (gpu_bench/bench_store.h evaluation_write), as `cuda-agent bench --store` does.
  std::optional<BenchResult> bench;
};

/// The evaluation side of the tools: the compile farm and the GPU bench pool in production.
class EvaluationTools {
 public:
  virtual ~EvaluationTools() = default;
  /// Builds the files (an Error for a failed build: its message is what the agent sees).
  virtual Expected<CompileResult> compile(const std::vector<SourceFile>& files) = 0;
  /// Verifies / benchmarks / profiles a built workspace against `model_py`. `final_evaluation`:
  /// the full protocol with fresh seeds the agent never saw. A solution that fails checks is an
  /// outcome (tier -1), not an Error; an Error means the evaluation could not run.
  virtual Expected<EvaluationOutcome> evaluate(BenchMode mode, const std::string& model_py,
                                               const std::vector<SourceFile>& files,
                                               const CompileResult& built,
                                               bool final_evaluation) = 0;
  /// What the final reward measures when it is not the full protocol (e.g. a compile-only run,
  /// rollout/compile_only_tools.h); run_episode puts it at the head of the final evaluation's
  /// report on every path, so the stored trajectory says it. Empty (the default): the full
  /// protocol.
  virtual std::string reward_note() const { return {}; }
};

struct EpisodeBudgets {
  std::int64_t max_turns = 200;
  std::int64_t max_context_tokens = 131'072;
  std::int64_t wall_ms = 4 * 3'600'000;
};

struct EpisodeSpec {
  EpisodeId episode_id;
  RunId run_id;
  TaskId task_id;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  std::string model_py;  ///< the task's reference
  PolicyBackend* policy = nullptr;
  EvaluationTools* tools = nullptr;
  EpisodeBudgets budgets;
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t max_new_tokens_per_turn = 8192;
  std::uint64_t seed = 0;
  PolicyVersion policy_version{0};
  /// The system message; empty: the agent skill document (agent_system_prompt).
  std::string system_prompt;
};

/// An episode of the task `model_py` with `policy` and `tools` under a run's [rollout] settings:
/// budgets (turns, context, wall time), sampling (temperature, top_p, new tokens per turn) and
/// the system prompt (agent_system_prompt([rollout] system_prompt)). Ids, stage, seed and version
/// are the caller's.
EpisodeSpec episode_spec(const RolloutOptions& rollout, const std::string& model_py,
                         PolicyBackend* policy, EvaluationTools* tools);

/// The prompt that opens an episode: the task and what to do.
std::string task_prompt(const std::string& model_py);

/// What the compile tool shows the agent: the compile report without the lines about the build
/// machine (toolchain, host, sandbox); the agent needs its kernels, not our set-up.
std::string compile_observation(const CompileResult& r);

/// Runs the episode to its end. Never throws; problems of the policy end the episode as aborted
/// with the error in the last tool turn. `final_outcome`, when given, receives the final
/// evaluation (tier -1 and no report when there was none).
Episode run_episode(const EpisodeSpec& spec, EvaluationOutcome* final_outcome = nullptr);

}  // namespace cuda_agent
