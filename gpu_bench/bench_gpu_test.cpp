// GPU test (ctest label `gpu`; skips with a message where there is no GPU): the real harness on
// the local GPU, fed by the real compile service. The DESIGN.md section 4 example must pass and
// earn a tier; attacks from gpu_bench/harness/tests/smoke must get tier -1 with the reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compile_farm/compile_service.h"
#include "gpu_bench/bench_report.h"
#include "gpu_bench/bench_service.h"
#include "gpu_bench/device_probe.h"

namespace cuda_agent {
namespace {

std::string src(const std::string& rel) {
  const char* root = std::getenv("CUDA_AGENT_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class BenchGpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    DeviceList list = list_devices();
    if (list.devices.empty()) {
      skip_ = "no GPU: " + list.no_gpu_reason;
      return;
    }
    auto compiler = CompileService::create({});
    ASSERT_TRUE(compiler) << compiler.error().to_string();
    CompileRequest req;
    req.target_arch =
        "sm_" + std::to_string(list.devices[0].cc_major * 10 + list.devices[0].cc_minor);
    req.files = {
        {"kernels/scale_relu.cu", src("gpu_bench/testdata/scale_relu/kernels/scale_relu.cu")}};
    auto built = (*compiler)->compile(req);
    ASSERT_TRUE(built) << built.error().to_string();
    built_ = new CompileResult(std::move(*built));
  }
  static void TearDownTestSuite() {
    delete built_;
    built_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(built_, nullptr);
    BenchServiceOptions o;
    o.bench.timed_trials = 30;
    o.bench.warmup_trials = 3;
    o.bench.verify_input_sets = 3;
    auto s = BenchService::create(o);
    ASSERT_TRUE(s) << s.error().to_string();
    service_ = std::move(*s);
  }
  BenchJob job(const std::string& model_new, BenchMode mode) {
    return {.request = bench_request(mode, "testdata/scale_relu",
                                     src("gpu_bench/testdata/scale_relu/model.py"), *built_,
                                     src(model_new))};
  }
  static inline std::string skip_;
  static inline CompileResult* built_ = nullptr;
  std::unique_ptr<BenchService> service_;
};

TEST_F(BenchGpu, DesignExamplePassesAndIsTimed) {
  auto e =
      service_->evaluate(job("gpu_bench/testdata/scale_relu/model_new.py", BenchMode::kBenchmark));
  ASSERT_TRUE(e) << e.error().to_string();
  std::printf("%s", bench_report_text(*e, {.task_id = "testdata/scale_relu",
                                           .mode = "benchmark",
                                           .kernels = built_->kernels})
                        .c_str());
  EXPECT_TRUE(e->passed);
  EXPECT_GE(e->result.reward.tier, 1);
  EXPECT_EQ(e->result.candidate_trial_us.size(), 30u);
  EXPECT_EQ(e->result.eager_trial_us.size(), 30u);
  // The torch.compile baseline runs in the sandbox too (its uid has no passwd entry).
  EXPECT_EQ(e->result.compile_trial_us.size(), 30u);
  EXPECT_GT(e->result.speedup_vs_compile, 0.0);
  EXPECT_GT(e->result.speedup_vs_eager, 0.5);
  EXPECT_FALSE(e->result.audit.gpu_name.empty());
  EXPECT_FALSE(e->result.audit.torch_version.empty());
  // Forked from the service's harness zygote (torch imported once, CUDA initialised per job).
  EXPECT_TRUE(e->from_zygote) << e->sandbox;
  auto startup = e->result.phases_s.find("startup");
  ASSERT_NE(startup, e->result.phases_s.end());
  EXPECT_LT(startup->second, 0.5) << "a forked harness should not import torch again";
}

TEST_F(BenchGpu, FreshChildPathStillWorks) {
  BenchServiceOptions o;
  o.bench.timed_trials = 10;
  o.bench.warmup_trials = 2;
  o.bench.verify_input_sets = 2;
  o.bench.harness_zygote = false;
  auto s = BenchService::create(o);
  ASSERT_TRUE(s) << s.error().to_string();
  auto e = (*s)->evaluate(job("gpu_bench/testdata/scale_relu/model_new.py", BenchMode::kBenchmark));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_TRUE(e->passed);
  EXPECT_FALSE(e->from_zygote);
}

TEST_F(BenchGpu, AttacksGetTierMinusOneWithAReason) {
  struct Case {
    const char* file;
    const char* reason;
  };
  for (Case c : {Case{"torch_op.py", "forbidden_op"}, Case{"no_launch.py", "no_kernel_launched"},
                 Case{"uninit_tail.py", "tolerance"}, Case{"import_os.py", "ast.forbidden_import"},
                 Case{"wrong_dtype.py", "float16"}}) {
    auto e = service_->evaluate(
        job(std::string("gpu_bench/harness/tests/smoke/") + c.file, BenchMode::kVerify));
    ASSERT_TRUE(e) << c.file << ": " << e.error().to_string();
    EXPECT_EQ(e->result.reward.tier, -1) << c.file;
    EXPECT_TRUE(e->from_zygote) << c.file << ": " << e->sandbox;
    std::string text = bench_report_text(*e, {});
    EXPECT_NE(text.find(c.reason), std::string::npos) << c.file << "\n" << text;
  }
}

}  // namespace
}  // namespace cuda_agent
