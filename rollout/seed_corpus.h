// The seed corpus (issue 25): complete agent transcripts on pointwise-chain tasks
// (tasks/pointwise_chain.h) whose reward tier is known before anything runs, for a learner to
// start a small policy from, plus the RL training tasks and held-out tasks beside it
// (`cuda-agent tasks corpus`, cli/tasks_corpus_command.cpp).
//
//   SeedCorpusOptions o{.seed = 1};
//   ASSIGN_OR_RETURN(CorpusTranscript t, seed_transcript(o, 17));
//   out << corpus_json_line(t) << "\n";
//
// One JSON object per line (the contract with the learner; add-only):
//   {"format":"cuda-agent-corpus","version":1,"task":"00017_relu_gelu",
//    "ops":["torch.relu","F.gelu"],"style":"fused_vectorized","expected_tier":3,
//    "expected_compile_only":1,"split":"train","task_py":"<model.py>","system":"<system prompt>",
//    "tools":[<the tool objects rollout sends the engine>],
//    "messages":[{"role":"user","content":"<task prompt>"},
//                {"role":"assistant","content":"...","tool_calls":[{"name":"write_file",
//                 "arguments":{"path":"kernels/chain.cu","content":"..."}}]},
//                {"role":"tool","content":"<result>"}, ...]}
//
// What is real and what is written: the system text is agent_system_prompt(kind), the tools are
// agent_tools() as openai_request_body() sends them, the user message is task_prompt(model.py),
// and the write_file / edit_file results come from a real Workspace replaying the calls. The
// finish result is run_episode's text. The compile results are the closest honest text: a
// failed build is the farm's message ("nvcc on <file> failed:" and compile_farm's
// trim_compiler_log of nvcc's diagnostics, reconstructed by rollout/corpus_solutions.h); a
// successful one is compile_report_text of a CompileResult whose launchers come from the farm's
// own parser (compile_farm/prototypes.h) and whose kernels are the solution's __global__
// functions, with what only nvcc knows (registers, artifact hash and size, seconds) set to
// representative values: registers as sm_90 builds of these kernels report them, the artifact
// hash a content hash of the sources (not of a shared object), the size (21 to 30 KiB) and the
// seconds drawn from typical ranges.
// rollout/seed_corpus_test.cpp replays transcripts through run_episode with the real farm
// and checks each of these against what the tools really return.
//
// Styles and their tiers (DESIGN.md section 5; expected_tier on a GPU, expected_compile_only
// under rollout/compile_only_tools.h):
//   fused_vectorized  +3 for 2- and 3-op chains (one pass over memory where eager makes one per
//                     op; torch.compile fuses too, so +2 is possible), +1 for one op (eager is
//                     one pass as well)                                       compile-only +1
//   fused_scalar      +2 for 2- and 3-op chains, +1 for one op                compile-only +1
//   per_op_kernels    +1 (eager's own plan: a launch and a pass per op)       compile-only +1
//   serial            +1 (one block of 256 threads for the whole tensor)      compile-only +1
//   buggy             -1: a kernel nvcc refuses (an undeclared identifier or a missing ';'),
//                     compiled, the error seen, then finish                   compile-only -1
//   buggy_fixed       the same first write, the error, an edit_file that fixes the line, a
//                     compile that builds, finish: the fixed solution's tier  compile-only +1
//
// The tiers are expectations, not measurements of the bench: on an H100 at the family's default
// sizes (CUDA events, no L2 flush; tests/op_cuda_gpu/check_corpus.py --time) fused 2- and 3-op
// chains ran 1.6x to 4.4x eager and 1.07x to 2.1x torch.compile, per-op kernels 0.7x to 1.2x
// eager, serial about 100x slower. A one-op task whose catalogue code is several torch calls
// (torch.round(x * A) / A, torch.exp(torch.clamp(...)), torch.sqrt(torch.abs(x) + A)) can beat
// eager fused, so its +1 may come out +2. Every solution that should build was checked correct
// against its task on the H100 (80 of 80).
//
// Determinism: transcript i depends only on the options and i (tasks/rng.h generators), so the
// same options give byte-identical lines.
//
// Threading: free functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "messages/compile_codec.h"
#include "model/chat_format.h"
#include "rollout/corpus_solutions.h"
#include "tasks/pointwise_chain.h"

namespace cuda_agent {

inline constexpr std::string_view kCorpusFormat = "cuda-agent-corpus";
inline constexpr int kCorpusVersion = 1;

enum class CorpusStyle {
  kFusedVectorized,
  kFusedScalar,
  kPerOpKernels,
  kSerial,
  kBuggy,
  kBuggyFixed,
};
inline constexpr std::size_t kCorpusStyleCount = 6;
const char* to_string(CorpusStyle style);
/// "fused_vectorized", ..., "buggy_fixed". Errors: corpus.unknown_style naming the known ones.
Expected<CorpusStyle> parse_corpus_style(std::string_view name);

/// Weights of the styles, indexed by CorpusStyle (normalised when drawn).
using StyleWeights = std::array<double, kCorpusStyleCount>;

/// The default mix, for a run without a GPU: half the transcripts do not build (buggy 0.5), so
/// the mean compile-only reward is 0; the other half: fused_vectorized 0.15, fused_scalar 0.1,
/// per_op_kernels 0.1, serial 0.05, buggy_fixed 0.1.
StyleWeights cpu_style_mix();
/// For a GPU run: more of the fast styles, a few failures (fused_vectorized 0.3, fused_scalar
/// 0.2, per_op_kernels 0.15, serial 0.15, buggy 0.1, buggy_fixed 0.1).
StyleWeights gpu_style_mix();
/// "cpu", "gpu", or "style:weight,..." (styles left out weigh 0; weights >= 0, some > 0).
/// Errors: corpus.bad_mix quoting the part, corpus.unknown_style.
Expected<StyleWeights> parse_style_mix(std::string_view text);

struct SeedCorpusOptions {
  /// Seeds the tasks (PointwiseChainOptions::seed is set from it) and the styles.
  std::uint64_t seed = 0;
  /// The system message: "skill" (the skill document; "full" is the same) or "brief"
  /// (agent_system_prompt). Default: skill, what `[rollout] system_prompt` defaults to.
  std::string system_prompt = "skill";
  StyleWeights style_weights = cpu_style_mix();
  /// The task family; its seed is replaced by `seed`.
  PointwiseChainOptions chain;
};

/// The tier a style earns on a GPU for a chain of `chain_length` operators (table above);
/// for buggy_fixed, pass the fixed solution's style.
int expected_tier(CorpusStyle style, std::size_t chain_length);
/// +1 when the final workspace builds, -1 when not.
int expected_compile_only(CorpusStyle style);

struct CorpusTranscript {
  PointwiseChainTask task;  ///< a train-split task: transcript i is on train task i
  CorpusStyle style = CorpusStyle::kFusedScalar;
  SolutionStyle solution_style = SolutionStyle::kFusedScalar;  ///< what the kernel is written as
  int expected_tier = -1;
  int expected_compile_only = -1;
  std::string system;
  std::vector<ChatMessage> messages;    ///< user, then assistant and tool messages in order
  std::vector<SourceFile> final_files;  ///< the workspace at finish, as the farm takes it
};

/// Transcript `index`. Errors: bad options (tasks.chain_options, corpus.bad_mix,
/// corpus.system_prompt).
Expected<CorpusTranscript> seed_transcript(const SeedCorpusOptions& options, std::uint64_t index);

/// The transcript as one JSON line (no trailing newline), the shape above.
std::string corpus_json_line(const CorpusTranscript& transcript);

/// The tool objects rollout sends the engine: openai_request_body's "tools" for agent_tools().
std::string corpus_tools_json();

/// What a policy that imitates a corpus needs from an episode's budgets: each transcript's turns
/// (assistant messages) and context (the episode's own estimate, about four bytes a token, of the
/// system text, messages and tool calls).
struct CorpusShape {
  std::vector<std::int64_t> turns, tokens;  ///< per transcript, in file order
};
/// Reads a corpus file (one transcript per line, the shape above). Errors: corpus.read (the file),
/// corpus.bad_line (a line that is not a transcript, by number).
Expected<CorpusShape> corpus_shape(const std::string& path);

/// A warning when an episode's budgets cut off transcripts of the corpus: how many need more
/// turns than `max_turns` or more context than `max_context_tokens`. A policy that imitates them
/// ends those episodes truncated, scored on an unfinished workspace, with no slack for a single
/// extra turn (found on the H100: rollout.max_turns = 3 under a corpus whose median transcript
/// has 3 turns, every episode -1). Empty when every transcript fits.
std::string corpus_budget_warning(const CorpusShape& shape, std::int64_t max_turns,
                                  std::int64_t max_context_tokens);

}  // namespace cuda_agent
