#include "gpu_bench/bench_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;

BenchEvaluation evaluation(bool passed) {
  BenchEvaluation e;
  e.passed = passed;
  e.result.candidate_trial_us = {50, 52, 51};
  e.result.eager_trial_us = {100, 101, 99};
  e.result.compile_trial_us = {80, 80, 81};
  e.result.speedup_vs_eager = 100.0 / 51;
  e.result.reward.tier = passed ? 3 : -1;
  e.result.audit.task_hash = "t1";
  e.result.audit.artifact_hash = "a1";
  e.result.audit.gpu_name = "NVIDIA H200";
  e.result.audit.torch_version = "2.11.0";
  e.result.audit.precision_flags = {"tf32=False", "cudnn.tf32=False"};
  return e;
}

TEST(BenchStore, EvaluationAndBaselineRoundTrip) {
  StoreOptions so;
  so.dir =
      (fs::temp_directory_path() / ("bench-store-test-" + std::to_string(::getpid()))).string();
  fs::remove_all(so.dir);
  {
    auto store = RunStore::open(so, StoreMode::kWrite);
    ASSERT_TRUE(store) << store.error().to_string();
    const BaselineKey key = baseline_key(evaluation(true).result.audit);
    EXPECT_EQ(key.precision, "tf32=False;cudnn.tf32=False");
    auto none = find_baseline(**store, key);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->has_value());
    StoreWrite w = evaluation_write(
        evaluation(true), {EvaluationId{"e1"}, RunId{"r"}, TaskId{"level1/x"}, EpisodeId{}});
    ASSERT_EQ(w.baselines.size(), 1u);
    ASSERT_TRUE((*store)->write(std::move(w), std::chrono::seconds(10)));
    auto found = find_baseline(**store, key);
    ASSERT_TRUE(found);
    ASSERT_TRUE(found->has_value());
    EXPECT_DOUBLE_EQ((*found)->eager_us, 100.0);
    EXPECT_DOUBLE_EQ((*found)->compile_us, 80.0);
    auto ev = (*store)->get_evaluation(EvaluationId{"e1"});
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->reward, 3);
    EXPECT_TRUE(ev->verified);
    auto audit = decode_audit_record(ev->audit);
    ASSERT_TRUE(audit);
    EXPECT_EQ(audit->gpu_name, "NVIDIA H200");
    // A failed evaluation is stored but feeds no baseline.
    EXPECT_TRUE(evaluation_write(evaluation(false),
                                 {EvaluationId{"e2"}, RunId{"r"}, TaskId{"level1/x"}, EpisodeId{}})
                    .baselines.empty());
  }
  fs::remove_all(so.dir);
}

}  // namespace
}  // namespace cuda_agent
