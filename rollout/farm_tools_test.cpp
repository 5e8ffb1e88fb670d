// The build settings a run's [compile] options give (rollout/farm_tools.h farm_build_settings):
// one place for `eval` and the rollout worker.
#include "rollout/farm_tools.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(FarmBuildSettings, ComeFromTheCompileOptions) {
  CompileOptions o;
  o.target_arch = "sm_100";
  o.library_policy = "pure";
  o.job_wall_ms = 600'000;
  auto s = farm_build_settings(o);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->target_arch, "sm_100");
  EXPECT_EQ(s->library_policy, LibraryPolicy::kPure);
  EXPECT_EQ(s->compile_timeout_ms, 660'000);  // the job's wall limit and a minute to queue
  o.job_wall_ms = 120'000;
  EXPECT_EQ(farm_build_settings(o)->compile_timeout_ms, 300'000);  // never under the default
}

TEST(FarmBuildSettings, AnUnknownLibraryPolicyIsRefused) {
  CompileOptions o;
  o.library_policy = "anything";
  auto s = farm_build_settings(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "compile.library_policy");
}

}  // namespace
}  // namespace cuda_agent
