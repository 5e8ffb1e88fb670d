// A seeded pseudo-random generator whose outputs are the same on every platform and standard
// library: std::mt19937_64's sequence is fixed by the C++ standard, but std's distributions are
// not, so the ones here are written out. The synthesizer (tasks/synth.h) depends on this for
// "same seed, same tasks".
//
// Threading: an Rng is a value; use one per thread.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace cuda_agent {

/// SplitMix64 of `x`: a well-mixed 64-bit value (used to derive one seed per task).
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t next() { return engine_(); }

  /// Uniform in [0, n), n > 0, without modulo bias (rejection sampling).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    std::uint64_t v;
    do {
      v = next();
    } while (v >= limit);
    return v % n;
  }

  /// Uniform integer in [lo, hi].
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }

  /// Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  bool chance(double p) { return unit() < p; }

  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

  /// Index drawn with probability proportional to `weights` (all >= 0, sum > 0).
  std::size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double r = unit() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return i;
      r -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace cuda_agent
