// The operator catalogue of the fused-operator synthesizer (tasks/synth.h): over a hundred
// operators from torch and torch.nn (elementwise, activations, reductions, normalisations,
// matmul/linear, convolutions, pooling, the softmax family, indexing and reshaping, losses),
// each with its shape rule, its code and its cost.
//
// Shapes are float32 tensors whose dim 0 is the batch. An operator never moves, reduces or
// reads the size of dim 0 (it writes `x.size(0)` or -1 where it needs it), so the synthesizer
// can build a chain at batch 1 and pick the batch size afterwards: every cost here is `per_row`
// (times the batch) plus `fixed` (weights, read once per call).
//
// Threading: the catalogue is built once and then only read.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tasks/rng.h"

namespace cuda_agent {

/// A tensor shape; dim 0 is the batch and is 1 while a chain is built.
using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s);

/// Work of one eager operator call, for the eager-time estimate.
struct OpCost {
  double flops_per_row = 0;       ///< floating-point operations per batch row
  double bytes_per_row = 0;       ///< bytes read + written per batch row
  double fixed_bytes = 0;         ///< bytes read once per call (weights)
  double peak_bytes_per_row = 0;  ///< input + output bytes per row (memory while it runs)
  double param_bytes = 0;         ///< parameters the op owns
};

/// An extra input of forward(): a tensor with the batch as dim 0.
struct ExtraInput {
  std::string name;
  Shape shape;          ///< dim 0 is the batch
  std::string factory;  ///< "randn", "rand", or "randint:<high>" (int64 in [0, high))
};

/// The code a chain of operators becomes (tasks/synth.cpp prints it as a KernelBench file).
/// Names are unique within the chain.
struct ChainCode {
  std::vector<std::pair<std::string, std::string>> init_args;  ///< name, Python literal
  std::vector<std::string> init_lines;     ///< statements in Model.__init__ after super()
  std::vector<std::string> forward_lines;  ///< statements in forward; the value is always `x`
  std::vector<ExtraInput> inputs;          ///< forward parameters after x
  std::set<std::string> used_names;

  /// `hint`, or `hint_2`, `hint_3`, ... if taken (or reserved: x, torch, nn, F, ...).
  std::string unique(const std::string& hint);
  /// An __init__ parameter with this value; returns its name for use in init_lines.
  std::string param(const std::string& hint, const std::string& literal);
  /// An __init__ parameter stored as `self.<name>`; returns "self.<name>" for forward_lines.
  std::string attr(const std::string& hint, const std::string& literal);
  /// A submodule `self.<name> = <expr>`; returns "self.<name>".
  std::string module(const std::string& hint, const std::string& expr);
  /// An extra forward input; returns its name.
  std::string input(const std::string& hint, Shape shape, std::string factory = "randn");
  void line(std::string statement) { forward_lines.push_back(std::move(statement)); }
};

/// One operator: its name, the ranks it takes, and its rule.
struct OpDef {
  /// Canonical name as the validator reports it: "nn.Conv2d", "torch.relu", "F.gelu",
  /// "Tensor.view", "operator.add".
  std::string name;
  std::string category;  ///< elementwise, activation, reduction, norm, linear, conv, pool, ...
  int min_rank = 1;
  int max_rank = 5;
  /// Compute-heavy ops a fused chain usually starts with (conv, matmul, norm).
  bool anchor = false;
  /// Output is no longer a float feature map (a loss, an index): only last in a chain.
  bool terminal = false;
  /// Applies the op to `in`: writes the output shape, appends code and cost. False when it does
  /// not fit `in` (too small, indivisible); the caller then drops `code`'s changes.
  std::function<bool(const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost)> apply;
};

/// Every operator, in a fixed order (the order is part of the synthesizer's determinism).
const std::vector<OpDef>& op_catalogue();

/// Appends the elementwise, activation, reduction, softmax, indexing and loss operators
/// (op_catalogue.cpp) and the module-based ones: linear, conv, pool, norm (op_catalogue_nn.cpp).
void add_pointwise_ops(std::vector<OpDef>& ops);
void add_module_ops(std::vector<OpDef>& ops);

/// Python literal of a shape tuple: "(3, 4)", "(5,)".
std::string tuple_literal(const Shape& s);
/// Python float literal that round-trips: "0.5", "1e-05".
std::string float_literal(double v);

}  // namespace cuda_agent
