// The operator tables of value_class.h.
#include "tasks/value_class.h"

#include <algorithm>
#include <initializer_list>

namespace cuda_agent {
namespace {

using Sign = ValueClass::Sign;
using Magnitude = ValueClass::Magnitude;

bool in(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

// Zero (or the identity) on one sign: constant on <= 0, nothing on >= 0.
bool is_gate(std::string_view op) { return in(op, {"torch.relu", "F.relu6", "torch.clamp_min"}); }

// Saturate to a constant when every value is far out on one side.
bool is_saturating(std::string_view op) {
  return in(op, {"torch.tanh", "torch.sigmoid", "F.hardtanh", "F.hardsigmoid", "F.softsign",
                 "torch.clamp", "torch.erf", "F.logsigmoid", "F.relu6", "F.tanhshrink"});
}

}  // namespace

bool degenerate_after(std::string_view op, ValueClass v) {
  if (is_gate(op) || op == "torch.abs") {
    if (v.sign == Sign::kNonNegative) return true;                       // the identity
    if (v.sign == Sign::kNonPositive && op != "torch.abs") return true;  // all zeros
  }
  if (in(op, {"F.hardshrink", "F.softshrink"}) && v.magnitude == Magnitude::kSmall) return true;
  // The minimum of gated (>= 0) values is their zero; the maximum of <= 0 values likewise.
  if (in(op, {"torch.min", "torch.amin"}) && v.sign == Sign::kNonNegative) return true;
  if (in(op, {"torch.max", "torch.amax"}) && v.sign == Sign::kNonPositive) return true;
  // logsumexp of log-probabilities is log(1) = 0.
  if (op == "torch.logsumexp" && v.sign == Sign::kNonPositive) return true;
  if (is_saturating(op) && v.magnitude == Magnitude::kLarge && v.sign != Sign::kAny) return true;
  return false;
}

ValueClass value_class_after(std::string_view op, ValueClass v) {
  using S = Sign;
  using M = Magnitude;
  if (in(op, {"torch.softmax", "F.softmin", "F.normalize"})) {
    return {op == "F.normalize" ? v.sign : S::kNonNegative, M::kSmall};
  }
  if (in(op, {"torch.sigmoid", "F.hardsigmoid"})) return {S::kNonNegative, M::kNormal};
  if (in(op, {"F.logsigmoid"})) {
    return {S::kNonPositive, v.sign == S::kNonNegative ? M::kSmall : M::kNormal};
  }
  if (in(op, {"torch.log_softmax"})) return {S::kNonPositive, M::kLarge};
  if (in(op, {"torch.relu", "F.relu6", "torch.abs", "torch.square", "torch.exp", "torch.sqrt",
              "F.softplus", "torch.rsqrt", "nn.LPPool2d"})) {
    const M m = op == "F.relu6" ? std::min(v.magnitude, M::kNormal) : v.magnitude;
    return {S::kNonNegative, op == "torch.exp" || op == "torch.rsqrt" ? M::kNormal : m};
  }
  if (in(op, {"torch.norm", "torch.logsumexp", "torch.sum", "torch.cumsum"})) {
    const S s = op == "torch.norm" || op == "torch.logsumexp" ? S::kNonNegative : v.sign;
    return {s, M::kLarge};
  }
  if (in(op, {"torch.var", "torch.std"})) return {S::kNonNegative, v.magnitude};
  if (in(op, {"torch.tanh", "F.hardtanh", "torch.clamp", "F.softsign", "torch.erf", "torch.sin",
              "torch.cos", "F.tanhshrink"})) {
    return {op == "torch.cos" ? S::kAny : v.sign, std::min(v.magnitude, M::kNormal)};
  }
  if (in(op, {"torch.neg"})) {
    const S s = v.sign == S::kNonNegative   ? S::kNonPositive
                : v.sign == S::kNonPositive ? S::kNonNegative
                                            : S::kAny;
    return {s, v.magnitude};
  }
  // Activations that are (nearly) the identity on positive values keep a >= 0 class.
  if (in(op,
         {"F.gelu", "F.silu", "F.mish", "F.elu", "F.selu", "F.celu", "F.leaky_relu", "nn.PReLU"}) &&
      v.sign == S::kNonNegative) {
    return v;
  }
  // Layers with fresh weights or statistics: zero-mean values of about unit scale (a small input
  // stays small through a convolution or matmul).
  if (in(op, {"nn.BatchNorm1d",
              "nn.BatchNorm2d",
              "nn.BatchNorm3d",
              "nn.LayerNorm",
              "nn.GroupNorm",
              "nn.InstanceNorm1d",
              "nn.InstanceNorm2d",
              "nn.InstanceNorm3d",
              "torch.log",
              "F.gelu",
              "F.silu",
              "F.mish",
              "F.elu",
              "F.selu",
              "F.celu",
              "F.leaky_relu",
              "nn.PReLU",
              "torch.where",
              "torch.add",
              "torch.mul",
              "torch.maximum",
              "torch.minimum",
              "operator.add",
              "operator.sub",
              "operator.add(parameter)",
              "F.glu",
              "torch.lerp",
              "torch.pow"})) {
    return {S::kAny, M::kNormal};
  }
  if (in(op, {"nn.Conv1d", "nn.Conv2d", "nn.Conv3d", "nn.ConvTranspose1d", "nn.ConvTranspose2d",
              "nn.ConvTranspose3d", "nn.Linear", "F.linear", "torch.matmul", "torch.einsum",
              "torch.addmm", "torch.bmm"})) {
    return {S::kAny, v.magnitude == M::kSmall ? M::kSmall : M::kNormal};
  }
  return v;  // reshapes, pooling, positive scaling, reductions that keep the range
}

}  // namespace cuda_agent
