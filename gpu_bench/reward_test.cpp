#include "gpu_bench/reward.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cuda_agent {
namespace {

TEST(Reward, FailedIsMinusOneWhateverTheSpeed) {
  EXPECT_EQ(
      compute_reward(
          {.passed = false, .timed = true, .speedup_vs_eager = 9, .speedup_vs_compile = 9}, {})
          .tier,
      -1);
}

TEST(Reward, CorrectButUntimedIsOne) { EXPECT_EQ(compute_reward({.passed = true}, {}).tier, 1); }

TEST(Reward, TiersUseTheThresholdStrictly) {
  RewardRule rule;                                                   // 5%
  EXPECT_EQ(compute_reward({true, true, 1.05, 2.0}, rule).tier, 1);  // not *more* than 5%
  EXPECT_EQ(compute_reward({true, true, 1.06, 1.0}, rule).tier, 2);
  EXPECT_EQ(compute_reward({true, true, 1.06, 1.05}, rule).tier, 2);
  EXPECT_EQ(compute_reward({true, true, 1.06, 1.06}, rule).tier, 3);
  EXPECT_EQ(compute_reward({true, true, 0.5, 3.0}, rule).tier, 1);  // +3 needs eager beaten too
}

TEST(Reward, ThresholdIsConfigurable) {
  RewardRule rule;
  rule.faster_threshold = 0.5;
  EXPECT_EQ(compute_reward({true, true, 1.4, 1.4}, rule).tier, 1);
  EXPECT_EQ(compute_reward({true, true, 1.6, 1.6}, rule).tier, 3);
  rule.faster_threshold = 0;
  EXPECT_EQ(compute_reward({true, true, 1.01, 0}, rule).tier, 2);  // missing compile baseline
}

TEST(Reward, ContinuousIsLogSpeedup) {
  RewardRule rule;
  rule.mode = "continuous";
  EXPECT_NEAR(compute_reward({true, true, 2.0, 1.0}, rule).continuous, std::log(2.0), 1e-12);
  EXPECT_EQ(compute_reward({false, true, 2.0, 1.0}, rule).continuous, -1.0);
  EXPECT_EQ(compute_reward({true, false, 0, 0}, rule).continuous, 0.0);
  EXPECT_EQ(compute_reward({true, true, 2.0, 1.0}, RewardRule{}).continuous, 0.0);
}

TEST(Reward, OnlyAuditFlagsDoNotFail) {
  EXPECT_FALSE(violation_fails({"implausible_speedup", ""}));
  EXPECT_FALSE(violation_fails({"constant_output_task", ""}));
  EXPECT_TRUE(violation_fails({"ignores_weights", ""}));
  EXPECT_FALSE(violation_fails({"output_unverified", ""}));
  EXPECT_TRUE(violation_fails({"ignores_inputs", ""}));
  EXPECT_TRUE(denies_speed_credit({{"implausible_speedup", ""}, {"constant_output_task", ""}}));
  EXPECT_TRUE(denies_speed_credit({{"output_unverified", ""}}));
  EXPECT_FALSE(denies_speed_credit({{"implausible_speedup", ""}}));
  EXPECT_TRUE(violation_fails({"forbidden_op", ""}));
  EXPECT_TRUE(violation_fails({"ast.forbidden_import", ""}));
}

}  // namespace
}  // namespace cuda_agent
