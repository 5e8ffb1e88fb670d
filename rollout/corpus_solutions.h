// The solutions the seed corpus (rollout/seed_corpus.h) puts in its transcripts: for a
// pointwise-chain task (tasks/pointwise_chain.h), kernels/chain.cu and model_new.py written in
// one of four styles whose reward tier on a GPU is known before anything runs, and the two ways
// the corpus breaks a kernel so that nvcc refuses it.
//
//   ASSIGN_OR_RETURN(CorpusSolution s, write_solution(task, SolutionStyle::kFusedVectorized));
//   ASSIGN_OR_RETURN(InjectedBug bug, inject_bug(s, BugKind::kUndeclaredIdentifier, 1));
//
// Every style computes each step with tasks/op_cuda.h's expression for it, one line per step
// ("v = <expr>;") after a line naming the operator ("// <op>"), in float32; names do not depend on
// the task (chain_kernel, chain_launch, step2_kernel); launchers are extern "C" with a trailing
// cudaStream_t (DESIGN.md section 4), model_new.py's ModelNew takes Model's __init__ parameters
// (the harness builds it as ModelNew(*get_init_inputs())) and calls the launchers without the
// stream.
//
// Threading: free functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "messages/compile_codec.h"
#include "tasks/pointwise_chain.h"

namespace cuda_agent {

enum class SolutionStyle {
  kFusedVectorized,  ///< one kernel for the chain, float4 loads in a grid-stride loop
  kFusedScalar,      ///< one kernel for the chain, one element per thread
  kPerOpKernels,     ///< a kernel and a launch per operator, intermediates in torch tensors
  kSerial,           ///< the fused chain in a single block: <<<1, 256>>>
};
const char* to_string(SolutionStyle style);

/// What a solution declares about itself: its files and what its build must report.
struct CorpusSolution {
  SolutionStyle style = SolutionStyle::kFusedScalar;
  std::string cu_path;  ///< "kernels/chain.cu"
  std::string cu;       ///< its text
  std::string model_new;
  std::vector<std::string> launchers;  ///< extern "C" names, in declaration order
  /// Every __global__ function as the farm's ptxas report demangles it, in definition order:
  /// "chain_tail(float const*, float*, long long, long long)".
  std::vector<std::string> kernels;
  /// 1-based line numbers in `cu` of the per-step lines "v = <expr>;", in step order
  /// (per-op kernels: one per kernel).
  std::vector<int> step_lines;
  std::string summary;  ///< one sentence: what the kernel does and why ("one pass over memory")

  std::vector<SourceFile> files() const { return {{cu_path, cu}, {"model_new.py", model_new}}; }
};

/// The solution of `task` in `style`. Errors: an operator without a CUDA expression
/// (tasks.op_cuda_*), which a pointwise-chain task never has.
Expected<CorpusSolution> write_solution(const PointwiseChainTask& task, SolutionStyle style);

enum class BugKind {
  kUndeclaredIdentifier,  ///< the step reads `val`, which is declared nowhere
  kMissingSemicolon,      ///< the step's statement loses its ';'
};
const char* to_string(BugKind kind);

/// A solution broken on one step line, what nvcc says about it, and the edit that fixes it.
struct InjectedBug {
  std::string broken_cu;  ///< the .cu text with the bug
  std::string bad_line;   ///< the broken line as it is in broken_cu, indentation dropped
  std::string good_line;  ///< the line it replaced, indentation dropped (edit_file's `new`)
  /// nvcc's diagnostics for broken_cu as it prints them (error line, the source line, the caret,
  /// the closing count), reconstructed: nvcc 13.0 prints exactly this for
  /// these two bugs (rollout/seed_corpus_test.cpp compares it with the real farm's message).
  std::string nvcc_output;
};

/// Breaks step line `step` (0-based, < solution.step_lines.size()) of the solution's .cu.
/// Errors: corpus.bug_step (no such step), corpus.bug_not_unique (the broken line occurs more
/// than once in the broken text, so an edit quoting it would be ambiguous: try the other kind).
Expected<InjectedBug> inject_bug(const CorpusSolution& solution, BugKind kind, std::size_t step);

}  // namespace cuda_agent
