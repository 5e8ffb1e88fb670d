// The pointwise operators of the task catalogue (tasks/op_catalogue.h) as CUDA C++ float
// expressions, for solutions written from a task's source: the seed corpus (rollout/seed_corpus.h)
// writes a kernel per chain from them, and tests/op_cuda_gpu/check_ops.py checks each against
// torch.
//
//   Expected<std::string> e = op_cuda_expression("F.elu", "0.5", "v");
//   // "(v > 0.f ? v : 0.5f * expm1f(v))"
//
// Covered: the activations and elementwise unary operators of the catalogue (with their
// parameter, a Python literal such as "0.5", "1e-06" or "2", exactly as the synthesized source
// binds it in get_init_inputs()) and the binary torch.add / mul / maximum / minimum, whose second
// operand is another variable. Each expression is what the catalogue's Python computes, not only
// the operator's name: "torch.sqrt" is torch.sqrt(torch.abs(x) + eps), "torch.exp" is
// torch.exp(torch.clamp(x, max=A)), "torch.round" is torch.round(x * A) / A.
//
// Semantics follow torch's CUDA float32 kernels, not textbook formulas: F.gelu is the exact erf
// form (approximate='none'), F.softplus returns x where beta * x > 20 (threshold=20), F.mish is
// x * tanh(log1p(exp(x))), F.celu scales by 1 / alpha before expm1, torch.round rounds half to
// even (rintf), x / A multiplies by the float reciprocal of A as torch does for a Python scalar,
// torch.pow by 2 and 3 multiplies, torch.lerp takes torch's two-sided form. NaN handling is not
// matched (fmaxf drops a NaN where torch.relu keeps it): task inputs are randn.
//
// Threading: free functions over an immutable table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// The catalogue names with a CUDA expression, in catalogue order (unary first, then binary).
const std::vector<std::string>& op_cuda_ops();

/// Whether `op` (a catalogue name) has a CUDA expression.
bool op_cuda_supported(std::string_view op);

/// Whether `op` reads a second tensor (torch.add, torch.mul, torch.maximum, torch.minimum).
bool op_cuda_binary(std::string_view op);

/// Whether `op` takes a parameter (then `param` of op_cuda_expression must be given).
bool op_cuda_takes_param(std::string_view op);

/// A parenthesised float expression of the identifier `var` (and `other` for a binary op) that
/// computes `op` with parameter `param` ("" for an op without one). Errors (kInvalidInput):
/// "tasks.op_cuda_unsupported" naming the op; "tasks.op_cuda_param" for a missing, unexpected or
/// unreadable parameter, quoting it.
Expected<std::string> op_cuda_expression(std::string_view op, std::string_view param,
                                         std::string_view var, std::string_view other = "w");

/// A Python number literal as a CUDA float literal: "0.5" -> "0.5f", "2" -> "2.f",
/// "1e-06" -> "1e-06f", "-0.5" -> "(-0.5f)". Errors: not a finite number.
Expected<std::string> cuda_float_literal(std::string_view python_literal);

}  // namespace cuda_agent
