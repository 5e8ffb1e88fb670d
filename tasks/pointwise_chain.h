// A task family a small model can learn: chains of 1 to 3 distinct pointwise operators of the
// catalogue that have a CUDA expression (tasks/op_cuda.h), on one 2-D float32 input of 16 Mi to
// 64 Mi elements by default (and a second input of the same shape per binary operator), printed as
// KernelBench-format Python (class Model(nn.Module), get_inputs(), get_init_inputs()). Each
// operator's code and parameter come from the catalogue's own rule (OpDef::apply), so a chain
// reads like a synthesized task (tasks/synth.h) and its parameters are the catalogue's choices.
//
//   PointwiseChainOptions o{.seed = 7};
//   ASSIGN_OR_RETURN(PointwiseChainTask t, pointwise_chain_task(o, ChainSplit::kTrain, 3));
//   write(t.name + ".py", t.source);            // "00003_relu_gelu.py"
//
// Splits: an operator combination (the set of operator names, order ignored) belongs to the
// held-out split when a hash of it and the seed falls in 1/heldout_one_in of the range, else to
// the train split; pointwise_chain_task draws chains until one of the asked split comes up. So a
// held-out task's combination never appears among train tasks of the same seed (the seed corpus
// and the RL training tasks are both drawn from the train split), in any order.
//
// Determinism: task i of (seed, split) depends only on them and the catalogue: std::mt19937_64
// seeded with splitmix64 of (seed, split, i), distributions from tasks/rng.h.
//
// Threading: free functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "tasks/op_catalogue.h"

namespace cuda_agent {

struct PointwiseChainOptions {
  std::uint64_t seed = 0;
  /// Weights of chain lengths 1..3 (normalised). Default: mostly two- and three-op chains.
  std::vector<double> length_weights = {0.2, 0.5, 0.3};
  /// One combination in this many is held out. Default: 8.
  std::uint64_t heldout_one_in = 8;
  /// Column counts of the (batch_size, cols) input; batch_size * cols is one of
  /// elements_choices. Defaults: 256..4096 columns, 16 Mi to 64 Mi elements (64 to 256 MiB per
  /// tensor; eager 0.1 to 1 ms on an H100). Smaller tensors are launch-bound there: at 1 to 4 Mi
  /// elements a fused kernel measured about as fast as eager, so the tiers of seed_corpus.h
  /// would not hold; at 16 to 64 Mi a fused 2- or 3-op chain measured 1.6x to 4.4x eager.
  std::vector<std::int64_t> cols_choices = {256, 512, 1024, 2048, 4096};
  std::vector<std::int64_t> elements_choices = {16 << 20, 32 << 20, 64 << 20};
  /// Draws per task before giving up (tasks.chain_exhausted).
  int max_attempts = 10'000;
};

enum class ChainSplit { kTrain, kHeldOut };
const char* to_string(ChainSplit split);  ///< "train", "heldout"

/// One operator of a chain as the source applies it.
struct ChainStep {
  std::string op;          ///< catalogue name: "F.elu"
  std::string param_name;  ///< Model.__init__ parameter ("alpha"), empty if none
  std::string param;       ///< its Python literal ("0.5"), empty if none
  std::string input;       ///< the second input of a binary op ("y"), empty otherwise
};

struct PointwiseChainTask {
  std::uint64_t index = 0;
  ChainSplit split = ChainSplit::kTrain;
  std::string name;                 ///< "00003_relu_gelu" (the file stem)
  std::vector<ChainStep> steps;     ///< in forward order
  std::vector<std::string> inputs;  ///< forward's parameters: "x", then one per binary step
  std::vector<std::pair<std::string, std::string>> init_args;  ///< name, Python literal
  std::int64_t rows = 0, cols = 0;  ///< every input and the output are (rows, cols) float32
  std::string source;               ///< the KernelBench-format program

  std::vector<std::string> ops() const;
  /// The combination key: sorted operator names joined by '+'.
  std::string combination() const;
};

/// The combination key of `ops` (sorted, '+'-joined).
std::string op_combination(std::vector<std::string> ops);

/// Whether `combination` (op_combination's key) is held out under `options`.
bool combination_held_out(const PointwiseChainOptions& options, const std::string& combination);

/// Task `index` of `split`. Errors: kInvalidInput tasks.chain_options for bad options,
/// kInternal tasks.chain_exhausted when max_attempts draws found none of the split.
Expected<PointwiseChainTask> pointwise_chain_task(const PointwiseChainOptions& options,
                                                  ChainSplit split, std::uint64_t index);

/// `count` tasks of `split` with pairwise different combinations: draws 0, 1, 2, ... of the split
/// in order, each kept when its combination is new, the k-th kept renumbered k (index and name).
/// A function of the options and count only; a shorter count gives a prefix.
Expected<std::vector<PointwiseChainTask>> distinct_chain_tasks(const PointwiseChainOptions& options,
                                                               ChainSplit split,
                                                               std::uint64_t count);

}  // namespace cuda_agent
