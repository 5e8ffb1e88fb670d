// Option structs and their one registry. Every part has an options struct (`compile_farm/
// compile_options.h`, ...) with documented defaults and units in the names; each lists its
// fields once, in a `visit` member, and everything else comes from that list: the manifest
// loader (cluster/manifest.h) reads and checks them, `cuda-agent manifest defaults` prints them
// as a commented TOML file, and docs/MANIFEST.md is that output.
//
//   struct RolloutOptions {
//     static constexpr std::string_view kSection = "rollout";
//     std::int64_t max_turns = 200;
//     template <class V> void visit(V& v) {
//       v({.key = "max_turns", .unit = "turns", .doc = "Turns before an episode ends.", .min = 1},
//         max_turns);
//     }
//   };
//
// A visitor is called as `v(const FieldInfo&, T&)` for T in {bool, std::int64_t, double,
// std::string, std::vector<std::string>}.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace cuda_agent {

/// Describes one option: its key in the manifest section, unit, documentation and valid range.
struct FieldInfo {
  std::string_view key;
  /// Unit of a number ("ms", "bytes", "turns"); empty when it has none.
  std::string_view unit = {};
  /// One or two sentences: what it controls and its trade-off. The default is printed from the
  /// struct's initial value, never written here.
  std::string_view doc = {};
  /// For strings: the allowed values; empty means any string.
  std::initializer_list<std::string_view> choices = {};
  /// For numbers: the inclusive valid range.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

}  // namespace cuda_agent
