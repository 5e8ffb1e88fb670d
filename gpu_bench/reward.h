// The reward of one evaluation (DESIGN.md section 5): CUDA Agent's tiers, or a continuous speedup
// reward for ablations. Pure functions of the checks and the trial times, so a stored audit
// record can be re-scored.
//
//   BenchReward r = compute_reward({.passed = true, .timed = true, .speedup_vs_eager = 1.3,
//                                   .speedup_vs_compile = 0.9}, RewardRule{});   // tier +2
#pragma once

#include <string>
#include <vector>

#include "messages/bench_codec.h"

namespace cuda_agent {

struct RewardRule {
  /// Relative speedup that counts as faster: +2 needs speedup_vs_eager > 1 + faster_threshold,
  /// +3 also speedup_vs_compile > 1 + faster_threshold. Default: 0.05 (more than 5% faster).
  double faster_threshold = 0.05;
  /// "tiers" (default) or "continuous". Both fill `tier`; `continuous` is filled only for
  /// "continuous": ln(speedup over eager) for a correct timed candidate, -1 for a failed one, 0
  /// for a correct one that was not timed.
  std::string mode = "tiers";
};

struct RewardInputs {
  bool passed = false;            ///< every check passed (and no policy rule was broken)
  bool timed = false;             ///< benchmark mode produced candidate and baseline medians
  double speedup_vs_eager = 0;    ///< median eager / median candidate; 0 when not measured
  double speedup_vs_compile = 0;  ///< median torch.compile / median candidate; 0 when absent
};

/// -1 failed, +1 correct, +2 correct and faster than eager, +3 faster than eager and compile.
/// A missing baseline (speedup 0) never counts as beaten.
BenchReward compute_reward(const RewardInputs& in, const RewardRule& rule);

/// Whether a policy violation makes the evaluation fail. Everything does except rules that only
/// flag a result ("implausible_speedup", kConstantOutputTask, kOutputUnverified).
bool violation_fails(const PolicyViolation& v);

/// Whether the harness found that a stored answer cannot be told from this solution's output
/// (kConstantOutputTask: the task's output is constant; kOutputUnverified: the solution does not
/// follow the reference on moved inputs; messages/bench_codec.h): such an evaluation earns no
/// speed credit (tier at most +1).
bool denies_speed_credit(const std::vector<PolicyViolation>& violations);

}  // namespace cuda_agent
