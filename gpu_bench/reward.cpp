#include "gpu_bench/reward.h"

#include <cmath>

namespace cuda_agent {

BenchReward compute_reward(const RewardInputs& in, const RewardRule& rule) {
  BenchReward r;
  if (!in.passed) {
    r.tier = -1;
    r.continuous = rule.mode == "continuous" ? -1.0 : 0.0;
    return r;
  }
  r.tier = 1;
  const double bar = 1.0 + rule.faster_threshold;
  if (in.timed && in.speedup_vs_eager > bar) {
    r.tier = 2;
    if (in.speedup_vs_compile > bar) r.tier = 3;
  }
  if (rule.mode == "continuous")
    r.continuous = in.timed && in.speedup_vs_eager > 0 ? std::log(in.speedup_vs_eager) : 0.0;
  return r;
}

bool violation_fails(const PolicyViolation& v) {
  return v.rule != "implausible_speedup" && v.rule != kConstantOutputTask &&
         v.rule != kOutputUnverified;
}

bool denies_speed_credit(const std::vector<PolicyViolation>& violations) {
  for (const PolicyViolation& v : violations)
    if (v.rule == kConstantOutputTask || v.rule == kOutputUnverified) return true;
  return false;
}

}  // namespace cuda_agent
