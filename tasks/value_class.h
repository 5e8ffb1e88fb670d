// A coarse picture of the values flowing through a synthesized chain, so the synthesizer can
// avoid chains whose output is constant or whose step does nothing: relu after logsigmoid (all
// zeros), hardshrink after softmax (values below the threshold: zeros), hardtanh after logsumexp
// (large positive values: one clamped constant), abs after relu (the identity).
//
// The classes are typical ranges, not bounds: sign (any, >= 0, <= 0) and magnitude (small, about
// 1, large). The GPU filter still measures every task; this only makes fewer candidates fail it.
// Tables are by operator name (tasks/op_catalogue.h); an operator not listed keeps the class of
// its input (reshapes, pooling, elementwise scaling by positive constants, ...).
#pragma once

#include <string_view>

namespace cuda_agent {

struct ValueClass {
  enum class Sign { kAny, kNonNegative, kNonPositive } sign = Sign::kAny;
  enum class Magnitude { kSmall, kNormal, kLarge } magnitude = Magnitude::kNormal;
  friend bool operator==(const ValueClass&, const ValueClass&) = default;
};

/// True when applying `op` to values of class `in` gives a constant or changes nothing.
bool degenerate_after(std::string_view op, ValueClass in);

/// The class of `op`'s output for input class `in`.
ValueClass value_class_after(std::string_view op, ValueClass in);

}  // namespace cuda_agent
