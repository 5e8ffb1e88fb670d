// local_bench_evaluator against the fake harness (gpu_bench/testdata/fake_harness), through the
// FarmEvaluationTools that make its requests: CPU only.
#include "rollout/local_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/content_hash.h"

namespace cuda_agent {
namespace {

std::shared_ptr<BenchService> fake_bench() {
  BenchServiceOptions o;
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  o.harness_dir = std::string(src ? src : ".") + "/gpu_bench/testdata/fake_harness";
  o.bench.python = ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  o.work_root =
      (std::filesystem::temp_directory_path() / ("local-bench-test-" + std::to_string(::getpid())))
          .string();
  o.health_check = [] { return Status(); };
  auto s = BenchService::create(o);
  EXPECT_TRUE(s) << s.error().to_string();
  return s ? std::shared_ptr<BenchService>(std::move(*s)) : nullptr;
}

CompileResult built() {
  CompileResult r;
  r.artifact = "so";
  r.artifact_hash = content_hash(r.artifact);
  r.toolchain = "nvcc";
  return r;
}

TEST(LocalBench, OutcomeCarriesTierAndAReportForTheAgent) {
  auto bench = fake_bench();
  ASSERT_TRUE(bench);
  // The tools' compile client is not used by evaluate(); connecting does not need a broker.
  auto client = CompileClient::connect({.broker_endpoint = "tcp://127.0.0.1:9"});
  ASSERT_TRUE(client) << client.error().to_string();
  FarmEvaluationTools tools(**client, {}, local_bench_evaluator(bench));
  auto eval = [&](BenchMode mode, const std::string& model_py, const std::vector<SourceFile>& files,
                  const CompileResult& b,
                  bool final) { return tools.evaluate(mode, model_py, files, b, final); };
  auto fast = eval(BenchMode::kBenchmark, "class Model: pass\n",
                   {{"kernels/k.cu", "x"}, {"model_new.py", "# fake: fast\n"}}, built(), false);
  ASSERT_TRUE(fast) << fast.error().to_string();
  EXPECT_TRUE(fast->correct);
  EXPECT_EQ(fast->reward_tier, 3);
  EXPECT_NE(fast->report.find("speedup: 2.000x vs eager"), std::string::npos) << fast->report;
  EXPECT_EQ(fast->report.find("  ok    "), std::string::npos) << "passed checks are left out";

  auto failed = eval(BenchMode::kVerify, "class Model: pass\n",
                     {{"model_new.py", "# fake: fail_check\n"}}, built(), false);
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->correct);
  EXPECT_EQ(failed->reward_tier, -1);
  EXPECT_NE(failed->report.find("FAIL  tolerance[seed=1]"), std::string::npos) << failed->report;
  EXPECT_NE(failed->report.find("first mismatch at flat index 17"), std::string::npos);

  auto missing = eval(BenchMode::kVerify, "m", {{"kernels/k.cu", "x"}}, built(), false);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->reward_tier, -1);

  auto crashed =
      eval(BenchMode::kVerify, "m", {{"model_new.py", "# fake: crash\n"}}, built(), true);
  ASSERT_FALSE(crashed);
  EXPECT_EQ(crashed.error().code, "bench.crashed");
}

}  // namespace
}  // namespace cuda_agent
