// The operator -> CUDA expression table (see op_cuda.h). Each template names the variable X, the
// second operand Y and the parameter A (as a CUDA float literal); templates use no other capitals.
// The torch kernel each entry follows is named where it is not the textbook formula.
#include "tasks/op_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace cuda_agent {
namespace {

struct OpTemplate {
  const char* op;
  const char* expr;  // X: the variable, Y: the second operand, A: the parameter
  bool param = false;
  bool binary = false;
};

// In catalogue order (tasks/op_catalogue.cpp add_pointwise_ops). torch.pow and torch.lerp pick
// their template by the parameter's value (below).
const std::vector<OpTemplate>& templates() {
  static const std::vector<OpTemplate> kTable = {
      {"torch.relu", "fmaxf(X, 0.f)"},
      {"torch.sigmoid", "(1.f / (1.f + expf(-X)))"},
      {"torch.tanh", "tanhf(X)"},
      // approximate='none': x * 0.5 * (1 + erf(x / sqrt(2)))
      {"F.gelu", "(X * 0.5f * (1.f + erff(X * 0.70710678118654752f)))"},
      {"F.silu", "(X / (1.f + expf(-X)))"},
      {"F.mish", "(X * tanhf(log1pf(expf(X))))"},
      // elu: x > 0 ? x : expm1(x) * alpha
      {"F.elu", "(X > 0.f ? X : expm1f(X) * A)", true},
      {"F.selu",
       "(X > 0.f ? X * 1.05070098735548049342f : expm1f(X) * (1.67326324235437728482f * "
       "1.05070098735548049342f))"},
      // at::celu is elu with input_scale = 1 / alpha
      {"F.celu", "(X > 0.f ? X : expm1f(X * (1.f / A)) * A)", true},
      // threshold = 20: x where beta * x > 20
      {"F.softplus", "((X * A) > 20.f ? X : log1pf(expf(X * A)) / A)", true},
      {"F.softsign", "(X / (fabsf(X) + 1.f))"},
      // torch multiplies by one_sixth = 1.0f / 6.0f
      {"F.hardswish", "(X * fminf(fmaxf(X + 3.f, 0.f), 6.f) * (1.f / 6.f))"},
      {"F.hardsigmoid", "(fminf(fmaxf(X + 3.f, 0.f), 6.f) * (1.f / 6.f))"},
      // F.hardtanh(x, min_val=-A, max_val=A)
      {"F.hardtanh", "fminf(fmaxf(X, -A), A)", true},
      {"F.relu6", "fminf(fmaxf(X, 0.f), 6.f)"},
      {"F.leaky_relu", "(X > 0.f ? X : X * A)", true},
      // min(x, 0) - log1p(exp(-|x|))
      {"F.logsigmoid", "(fminf(X, 0.f) - log1pf(expf(-fabsf(X))))"},
      {"F.tanhshrink", "(X - tanhf(X))"},
      {"F.softshrink", "(X > A ? X - A : (X < -A ? X + A : 0.f))", true},
      {"F.hardshrink", "((X >= -A && X <= A) ? 0.f : X)", true},
      {"torch.abs", "fabsf(X)"},
      // torch.exp(torch.clamp(x, max=A))
      {"torch.exp", "expf(fminf(X, A))", true},
      {"torch.neg", "(-X)"},
      {"torch.square", "(X * X)"},
      {"torch.sin", "sinf(X)"},
      {"torch.cos", "cosf(X)"},
      {"torch.erf", "erff(X)"},
      // torch.sqrt(torch.abs(x) + A), torch.log(...), torch.rsqrt(...)
      {"torch.sqrt", "sqrtf(fabsf(X) + A)", true},
      {"torch.log", "logf(fabsf(X) + A)", true},
      {"torch.rsqrt", "rsqrtf(fabsf(X) + A)", true},
      // torch.clamp(x, min=-A, max=A)
      {"torch.clamp", "fminf(fmaxf(X, -A), A)", true},
      {"torch.clamp_min", "fmaxf(X, A)", true},
      // torch.round(x * A) / A: round half to even; division by a scalar is a multiplication by
      // its float reciprocal in torch
      {"torch.round", "(rintf(X * A) * (1.f / A))", true},
      {"torch.pow", "powf(X, A)", true},
      {"operator.mul", "(X * A)", true},
      {"operator.add", "(X + A)", true},
      {"operator.sub", "(X - A)", true},
      {"operator.truediv", "(X * (1.f / A))", true},
      // torch.where(x > 0, x, x * A)
      {"torch.where", "(X > 0.f ? X : X * A)", true},
      // torch.lerp(x, torch.tanh(x), A); the form depends on |A| < 0.5 (below)
      {"torch.lerp", "(X + A * (tanhf(X) - X))", true},
      {"torch.add", "(X + Y)", false, true},
      {"torch.mul", "(X * Y)", false, true},
      {"torch.maximum", "fmaxf(X, Y)", false, true},
      {"torch.minimum", "fminf(X, Y)", false, true},
  };
  return kTable;
}

const OpTemplate* find(std::string_view op) {
  for (const OpTemplate& t : templates())
    if (op == t.op) return &t;
  return nullptr;
}

Error param_error(std::string_view op, std::string_view param, const char* why) {
  return make_error(ErrorCategory::kInvalidInput, "tasks.op_cuda_param",
                    std::string(op) + ": parameter \"" + std::string(param) + "\" " + why);
}

std::string substitute(std::string_view text, std::string_view var, std::string_view other,
                       std::string_view param) {
  std::string out;
  for (char c : text) {
    if (c == 'X') {
      out += var;
    } else if (c == 'Y') {
      out += other;
    } else if (c == 'A') {
      out += param;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& op_cuda_ops() {
  static const std::vector<std::string> kOps = [] {
    std::vector<std::string> ops;
    for (const OpTemplate& t : templates()) ops.emplace_back(t.op);
    return ops;
  }();
  return kOps;
}

bool op_cuda_supported(std::string_view op) { return find(op) != nullptr; }

bool op_cuda_binary(std::string_view op) {
  const OpTemplate* t = find(op);
  return t && t->binary;
}

bool op_cuda_takes_param(std::string_view op) {
  const OpTemplate* t = find(op);
  return t && t->param;
}

Expected<std::string> cuda_float_literal(std::string_view python_literal) {
  const std::string s(python_literal);
  char* end = nullptr;
  const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) ||
      s.find_first_not_of("+-0123456789.eE") != std::string::npos)
    return make_error(ErrorCategory::kInvalidInput, "tasks.op_cuda_param",
                      "\"" + s + "\" is not a finite Python number literal");
  std::string body = s[0] == '+' ? s.substr(1) : s;
  body += body.find_first_of(".eE") == std::string::npos ? ".f" : "f";
  return body[0] == '-' ? "(" + body + ")" : body;
}

Expected<std::string> op_cuda_expression(std::string_view op, std::string_view param,
                                         std::string_view var, std::string_view other) {
  const OpTemplate* t = find(op);
  if (!t)
    return make_error(ErrorCategory::kInvalidInput, "tasks.op_cuda_unsupported",
                      "no CUDA expression for \"" + std::string(op) +
                          "\" (a pointwise catalogue operator is needed; see op_cuda_ops())");
  if (!t->param) {
    if (!param.empty()) return param_error(op, param, "given, but the operator takes none");
    return substitute(t->expr, var, other, "");
  }
  if (param.empty()) return param_error(op, param, "missing");
  auto literal = cuda_float_literal(param);
  if (!literal) return param_error(op, param, "is not a finite number");
  const double value = std::strtod(std::string(param).c_str(), nullptr);
  std::string_view expr = t->expr;
  if (op == "torch.pow") {  // torch's pow_tensor_scalar multiplies for 2 and 3
    if (value == 2) expr = "(X * X)";
    if (value == 3) expr = "(X * X * X)";
  }
  if (op == "torch.lerp" && std::fabs(value) >= 0.5)  // torch: end - (end - self) * (1 - w)
    expr = "(tanhf(X) - (tanhf(X) - X) * (1.f - A))";
  return substitute(expr, var, other, *literal);
}

}  // namespace cuda_agent
