// The compile service with the real nvcc of this machine (no GPU needed): builds, caches, errors,
// the policy and hostile sources. Each test prints what the service said when it fails.
#include "compile_farm/compile_service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/log.h"

namespace cuda_agent {
namespace {

const char* kKernel = R"(#include <cuda_runtime.h>
__global__ void scale_relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(2.f * x[i], 0.f);
}
extern "C" void scale_relu_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)";

CompileRequest request(std::vector<SourceFile> files) {
  CompileRequest r;
  r.header.request_id = RequestId{"r"};
  r.files = std::move(files);
  r.target_arch = "sm_90";
  return r;
}

class CompileServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    (void)setup_logging({.level = "warn"});
    CompileServiceOptions o;
    o.compile.job_wall_ms = 60'000;
    o.compile.job_cpu_seconds = 20;
    o.compile.job_output_bytes = 64 << 20;
    auto s = CompileService::create(o);
    if (!s) {
      skip_reason_ = s.error().to_string();
      return;
    }
    service_ = std::move(*s).release();
  }
  static void TearDownTestSuite() { delete service_; }
  void SetUp() override {
    if (!service_) GTEST_SKIP() << "no CUDA toolkit here: " << skip_reason_;
  }
  static CompileService* service_;
  static std::string skip_reason_;
};
CompileService* CompileServiceTest::service_ = nullptr;
std::string CompileServiceTest::skip_reason_;

TEST_F(CompileServiceTest, BuildsTheDesignExampleAndCachesIt) {
  auto r = service_->compile(
      request({{"kernels/scale_relu.cu", kKernel}, {"model_new.py", "import kernels\n"}}));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->cache_hit);
  EXPECT_EQ(r->artifact_hash.size(), 64u);
  EXPECT_EQ(r->artifact.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(r->artifact_size_bytes, r->artifact.size());
  ASSERT_EQ(r->prototypes.size(), 1u);
  EXPECT_EQ(r->prototypes[0].name, "scale_relu_launch");
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].demangled_name, "scale_relu(float const*, float*, long long)");
  EXPECT_GT(r->kernels[0].registers, 0u);
  ASSERT_EQ(r->file_timings.size(), 1u);
  EXPECT_GT(r->file_timings[0].seconds, 0.1);
  EXPECT_NE(r->toolchain.find("nvcc"), std::string::npos);

  auto again = service_->compile(request({{"kernels/scale_relu.cu", kKernel}}));
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->artifact_hash, r->artifact_hash);
  EXPECT_LT(again->total_seconds, 0.5);
}

TEST_F(CompileServiceTest, AnEditRebuildsOnlyTheChangedFile) {
  auto files = [](const std::string& tag) {
    std::vector<SourceFile> f = {{"kernels/scale_relu.cu", kKernel}};
    for (const char* name : {"b", "c"})
      f.push_back({std::string("kernels/") + name + ".cu",
                   std::string("__global__ void k_") + name + "(float* p) { p[0] = 1.f; }\n"});
    f[2].content += "// " + tag + "\n";
    return f;
  };
  auto before = service_->stats();
  ASSERT_TRUE(service_->compile(request(files("one"))));
  auto mid = service_->stats();
  auto r = service_->compile(request(files("two")));
  ASSERT_TRUE(r) << r.error().to_string();
  auto after = service_->stats();
  EXPECT_EQ(after.objects_compiled - mid.objects_compiled, 1u);
  EXPECT_EQ(after.object_cache_hits - mid.object_cache_hits, 2u);
  EXPECT_GE(mid.objects_compiled - before.objects_compiled, 2u);
  EXPECT_EQ(r->kernels.size(), 3u);
}

TEST_F(CompileServiceTest, CompilerErrorsComeBackTrimmedWithFileAndLine) {
  auto r = service_->compile(
      request({{"kernels/bad.cu",
                "extern \"C\" void f(float* x, cudaStream_t s) {\n  undefined_thing(x);\n}\n"}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "compile.failed");
  EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput);
  EXPECT_NE(r.error().message.find("kernels/bad.cu(2): error"), std::string::npos)
      << r.error().message;
}

TEST_F(CompileServiceTest, PolicyFindingsAndBadRequests) {
  auto r =
      service_->compile(request({{"kernels/a.cu", std::string("#include <thread>\n") + kKernel}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "compile.policy");
  EXPECT_NE(r.error().message.find("kernels/a.cu:1: include.forbidden"), std::string::npos);

  auto req = request({{"kernels/a.cu", kKernel}});
  req.target_arch = "sm_90; rm -rf /";
  EXPECT_EQ(service_->compile(req).error().code, "compile.request");
  req = request({{"kernels/a.cu", kKernel}});
  req.extra_flags = {"-Xcompiler=-fplugin=/tmp/x.so"};
  EXPECT_EQ(service_->compile(req).error().code, "compile.policy");
  // A reserved macro would move every launch to the per-thread default stream.
  req.extra_flags = {"-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1"};
  auto reserved = service_->compile(req);
  ASSERT_FALSE(reserved);
  EXPECT_NE(reserved.error().message.find("reserved macro"), std::string::npos);
  req.extra_flags = {"-DTILE=64"};
  EXPECT_TRUE(service_->compile(req)) << "an ordinary macro is fine";
}

TEST_F(CompileServiceTest, TheSymbolCheckCatchesAHandDeclaredImport) {
  auto r = service_->compile(request(
      {{"kernels/a.cu",
        std::string(kKernel) +
            "extern \"C\" int unlink(const char*);\n"
            "extern \"C\" void sneaky(int n, cudaStream_t s) { unlink(\"/etc/passwd\"); }\n"}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "compile.policy");
  EXPECT_NE(r.error().message.find("imports 'unlink'"), std::string::npos) << r.error().message;
}

TEST_F(CompileServiceTest, HostileSourcesAreStoppedAndTheServiceKeepsServing) {
  // A diagnostic flood: a million #pragma messages from six lines of macros.
  std::string flood =
      "#define P _Pragma(\"message(\\\"flood flood flood flood flood flood\\\")\")\n"
      "#define P1 P P P P P P P P P P\n#define P2 P1 P1 P1 P1 P1 P1 P1 P1 P1 P1\n"
      "#define P3 P2 P2 P2 P2 P2 P2 P2 P2 P2 P2\n#define P4 P3 P3 P3 P3 P3 P3 P3 P3 P3 P3\n"
      "#define P5 P4 P4 P4 P4 P4 P4 P4 P4 P4 P4\n#define P6 P5 P5 P5 P5 P5 P5 P5 P5 P5 P5\n"
      "P6\n";
  // Runaway template recursion.
  std::string recursion =
      "template <int N> struct R { static constexpr long v = R<N + 1>::v + 1; };\n"
      "long x = R<0>::v;\n";
  // A multi-gigabyte initialised static array.
  std::string huge =
      "__device__ char big[3ull << 30] = {1};\n"
      "__global__ void k(unsigned char* o, long long i) { o[0] = big[i]; }\n"
      "extern \"C\" void touch(unsigned char* o, long long i, cudaStream_t s) {\n"
      "  k<<<1, 1, 0, s>>>(o, i);\n}\n";
  struct Case {
    const char* name;
    std::string body;
    std::set<std::string> codes;  // the typed errors that count as stopped
  };
  for (const Case& c : {Case{"flood", flood, {"compile.output_limit", "compile.file_limit"}},
                        Case{"recursion", recursion, {"compile.failed", "compile.cpu_limit"}},
                        Case{"huge", huge, {"compile.memory_limit", "compile.file_limit"}}}) {
    const char* name = c.name;
    auto r = service_->compile(request({{"kernels/a.cu", std::string(kKernel) + c.body}}));
    ASSERT_FALSE(r) << name;
    EXPECT_TRUE(c.codes.count(r.error().code)) << name << ": " << r.error().to_string();
    EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput)
        << name << ": " << r.error().to_string();
    EXPECT_LT(r.error().message.size(), 64u << 10) << name;
    std::printf("%s -> %s: %s\n", name, r.error().code.c_str(),
                r.error().message.substr(0, 200).c_str());
  }
  auto outside = service_->compile(request({{"kernels/a.cu", "#include \"/etc/shadow\"\n"}}));
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, "compile.policy");
  auto ok =
      service_->compile(request({{"kernels/ok.cu", std::string(kKernel) + "// still serving\n"}}));
  EXPECT_TRUE(ok) << ok.error().to_string();
}

}  // namespace
}  // namespace cuda_agent
