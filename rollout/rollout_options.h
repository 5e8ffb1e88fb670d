// Options of the rollout workers and episodes (manifest section [rollout]). DESIGN.md section 6.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct RolloutOptions {
  static constexpr std::string_view kSection = "rollout";
  static constexpr std::string_view kDoc =
      "Rollout workers: run agent episodes with the policy and the compile and bench tools.";

  std::int64_t max_turns = 200;
  std::int64_t max_context_tokens = 131'072;
  std::int64_t episode_wall_ms = 4 * 3'600'000;
  std::int64_t concurrent_episodes = 64;
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t max_new_tokens_per_turn = 8192;

  template <class V>
  void visit(V& v) {
    v({.key = "max_turns", .unit = "turns", .doc = "Turns before an episode is ended.", .min = 1},
      max_turns);
    v({.key = "max_context_tokens",
       .unit = "tokens",
       .doc = "Context length (prompt, model output and tool results) before an episode is ended.",
       .min = 1024},
      max_context_tokens);
    v({.key = "episode_wall_ms",
       .unit = "ms",
       .doc = "Wall-clock budget of one episode, tool time included.",
       .min = 1000},
      episode_wall_ms);
    v({.key = "concurrent_episodes",
       .unit = "episodes",
       .doc = "Episodes one rollout worker runs at once; an episode waiting on a tool holds no "
              "generation slot.",
       .min = 1},
      concurrent_episodes);
    v({.key = "temperature", .doc = "Sampling temperature.", .min = 0.0, .max = 10.0}, temperature);
    v({.key = "top_p", .doc = "Nucleus-sampling mass.", .min = 0.0, .max = 1.0}, top_p);
    v({.key = "max_new_tokens_per_turn",
       .unit = "tokens",
       .doc = "Tokens the policy may generate in one turn.",
       .min = 1},
      max_new_tokens_per_turn);
  }
};

}  // namespace cuda_agent
