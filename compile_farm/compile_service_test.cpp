// The compile service with the real nvcc of this machine (no GPU needed): builds, caches, errors,
// the policy and hostile sources. Each test prints what the service said when it fails.
#include "compile_farm/compile_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "compile_farm/build_steps.h"
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

// Issue 27 item 6: the same solution built by two services (two work roots, so two job
// directories; two nvcc processes, so two tmpxft pids) gives the same bytes, with -lineinfo too
// (whose line tables name the working directory and each source's modification time). Before, the
// artifact embedded both and its hash differed from build to build.
TEST_F(CompileServiceTest, TheSameSolutionBuildsToTheSameBytesInAnotherService) {
  std::set<std::string> hashes;
  for (int n = 0; n < 2; ++n) {
    CompileServiceOptions o;
    o.use_cache = false;
    auto other = CompileService::create(o);
    ASSERT_TRUE(other) << other.error().to_string();
    auto req = request({{"kernels/scale_relu.cu", std::string(kKernel) + "// reproducible\n"},
                        {"kernels/b.cu", "__global__ void k_b(float* p) { p[0] = 1.f; }\n"}});
    req.extra_flags = {"-lineinfo"};
    auto r = (*other)->compile(req);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_FALSE(r->cache_hit);
    EXPECT_EQ(r->artifact.find("tmpxft_0000"), r->artifact.find("tmpxft_00000000_"));
    EXPECT_EQ(r->artifact.find("job-"), std::string::npos)
        << "the job directory is in the artifact";
    hashes.insert(r->artifact_hash);
  }
  EXPECT_EQ(hashes.size(), 1u) << "two builds of one solution gave different artifacts";
}

// The second evaluation of an unchanged solution is a job-cache hit: no compiler process starts
// and the service answers within 10 ms (best of three, so a busy machine's scheduler hiccup is not
// a failure).
TEST_F(CompileServiceTest, AnUnchangedSolutionIsAnsweredFromTheCacheWithoutNvcc) {
  auto files = std::vector<SourceFile>{{"kernels/scale_relu.cu", std::string(kKernel) + "// hit\n"},
                                       {"model_new.py", "import kernels\n"}};
  auto first = service_->compile(request(files));
  ASSERT_TRUE(first) << first.error().to_string();
  const CompileJobStats before = service_->stats();
  double best = 1e9;
  std::reverse(files.begin(), files.end());  // the order of the files is not part of the key
  files[0].content = "import kernels  # model_new.py is the bench's input, not the compiler's\n";
  for (int n = 0; n < 3; ++n) {
    auto again = service_->compile(request(files));
    ASSERT_TRUE(again) << again.error().to_string();
    EXPECT_TRUE(again->cache_hit);
    EXPECT_EQ(again->artifact_hash, first->artifact_hash);
    best = std::min(best, again->total_seconds);
  }
  const CompileJobStats after = service_->stats();
  EXPECT_EQ(after.objects_compiled, before.objects_compiled) << "a cache hit started nvcc";
  EXPECT_EQ(after.object_cache_hits, before.object_cache_hits);
  EXPECT_EQ(after.job_cache_hits - before.job_cache_hits, 3u);
  EXPECT_LE(best, 0.010) << "second evaluation took " << best * 1000 << " ms";
}

}  // namespace

// The job cache key holds everything that changes the artifact, and nothing else: a changed byte,
// path, flag (or flag order), arch, policy, toolchain or extra directory is another key; the order
// of the files and model_new.py are not.
TEST(JobCacheKey, ChangesWithEverythingThatChangesTheArtifact) {
  using compile_farm::build_identity;
  using compile_farm::job_cache_key;
  compile_farm::Toolchain tc;
  tc.id = "toolchain-a";
  const std::string id = build_identity(tc, {}, {});
  const CompileRequest base = request({{"kernels/a.cu", kKernel},
                                       {"kernels/b.cuh", "#define B 1\n"},
                                       {"model_new.py", "import kernels\n"}});
  const std::string key = job_cache_key(base, id);
  EXPECT_EQ(key.size(), 64u);

  std::map<std::string, std::string> variants;
  auto with = [&](const char* what, auto edit) {
    CompileRequest r = base;
    edit(r);
    variants[what] = job_cache_key(r, id);
  };
  with("a byte", [](CompileRequest& r) { r.files[0].content[10] ^= 1; });
  with("a header byte", [](CompileRequest& r) { r.files[1].content = "#define B 2\n"; });
  with("a path", [](CompileRequest& r) { r.files[0].path = "kernels/c.cu"; });
  with("a file more", [](CompileRequest& r) { r.files.push_back({"kernels/d.cuh", ""}); });
  with("a flag", [](CompileRequest& r) { r.extra_flags = {"--use_fast_math"}; });
  with("flag order", [](CompileRequest& r) { r.extra_flags = {"-O2", "-O3"}; });
  with("flag order'", [](CompileRequest& r) { r.extra_flags = {"-O3", "-O2"}; });
  with("the arch", [](CompileRequest& r) { r.target_arch = "sm_90a"; });
  with("the policy", [](CompileRequest& r) { r.library_policy = LibraryPolicy::kPure; });
  // A flag and a file's text cannot stand in for each other (every part is framed and counted).
  with("flag as file", [](CompileRequest& r) {
    r.extra_flags = {"kernels/a.cu"};
    r.files.erase(r.files.begin());
  });
  std::set<std::string> distinct = {key};
  for (const auto& [what, k] : variants) {
    EXPECT_NE(k, key) << what << " did not change the key";
    distinct.insert(k);
  }
  EXPECT_EQ(distinct.size(), variants.size() + 1) << "two different edits gave one key";

  compile_farm::Toolchain other = tc;
  other.id = "toolchain-b";  // another nvcc or g++ version, or another build recipe
  EXPECT_NE(job_cache_key(base, build_identity(other, {}, {})), key);
  EXPECT_NE(job_cache_key(base, build_identity(tc, {"/opt/cudnn/include"}, {})), key);
  EXPECT_NE(job_cache_key(base, build_identity(tc, {}, {"/opt/cudnn/lib"})), key);

  CompileRequest same = base;
  std::reverse(same.files.begin(), same.files.end());
  same.files[0].content = "import kernels, torch\n";  // model_new.py
  same.header.request_id = RequestId{"another request"};
  EXPECT_EQ(job_cache_key(same, id), key);
}

// nvcc's pid in its intermediate file names is zeroed wherever the object holds it; nothing else.
TEST(MakeReproducible, ZeroesTheTmpxftPidOnly) {
  using namespace std::string_literals;
  std::string object =
      "\x7f"
      "ELF\0"
      "tmpxft_0000450c_00000000-6_k.cudafe1.cpp\0"
      "_GLOBAL__sub_I_tmpxft_00a1b2c3_00000000_6_k.cudafe1.cpp\0"
      "tmpxft_0000450C_ tmpxft_12345 tmpxft_0000450c-x tmpxft_"s;
  const std::size_t size = object.size();
  EXPECT_EQ(compile_farm::make_reproducible(object), 2u);
  EXPECT_EQ(object.size(), size);
  EXPECT_NE(object.find("tmpxft_00000000_00000000-6_k.cudafe1.cpp"), std::string::npos);
  EXPECT_NE(object.find("_GLOBAL__sub_I_tmpxft_00000000_00000000_6_k"), std::string::npos);
  EXPECT_NE(object.find("tmpxft_0000450C_ tmpxft_12345 tmpxft_0000450c-x tmpxft_"),
            std::string::npos);
  EXPECT_EQ(compile_farm::make_reproducible(object), 0u) << "already normalised";
}

}  // namespace cuda_agent
