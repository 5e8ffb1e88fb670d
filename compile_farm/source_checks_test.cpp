#include "compile_farm/source_checks.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cuda_agent::compile_farm {
namespace {

std::vector<Finding> check(std::string path, std::string content,
                           LibraryPolicy policy = LibraryPolicy::kDefault) {
  return check_sources({{std::move(path), std::move(content)}}, policy);
}

// The one finding of a check, or a failure.
Finding only(const std::vector<Finding>& f) {
  EXPECT_EQ(f.size(), 1u) << format_findings(f);
  return f.empty() ? Finding{} : f[0];
}

TEST(SourceChecks, AcceptsTheDesignExample) {
  auto f = check("kernels/scale_relu.cu", R"(#include <cuda_runtime.h>
__global__ void scale_relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(2.f * x[i], 0.f);
}
extern "C" void scale_relu_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)");
  EXPECT_TRUE(f.empty()) << format_findings(f);
}

TEST(SourceChecks, ForbiddenHeadersNameFileLineAndRule) {
  Finding f = only(check("kernels/a.cu", "// ok\n#include <torch/extension.h>\n"));
  EXPECT_EQ(f.file, "kernels/a.cu");
  EXPECT_EQ(f.line, 2);
  EXPECT_EQ(f.rule, "include.forbidden");
  for (const char* h : {"<thread>", "<pthread.h>", "<unistd.h>", "<sys/mman.h>", "<fstream>",
                        "<dlfcn.h>", "<ATen/ATen.h>", "<c10/core/Device.h>",
                        "<pybind11/pybind11.h>", "<cuda.h>", "<nvrtc.h>", "\"fcntl.h\""})
    EXPECT_EQ(only(check("kernels/a.cu", std::string("#include ") + h + "\n")).rule,
              "include.forbidden")
        << h;
}

TEST(SourceChecks, LibraryHeadersDependOnThePolicy) {
  EXPECT_TRUE(check("kernels/g.cpp", "#include <cublas_v2.h>\n").empty());
  EXPECT_EQ(only(check("kernels/g.cpp", "#include <cublas_v2.h>\n", LibraryPolicy::kPure)).rule,
            "include.library");
  EXPECT_EQ(only(check("kernels/g.cpp", "#include <cudnn.h>\n", LibraryPolicy::kPure)).rule,
            "include.library");
}

TEST(SourceChecks, IncludePathsStayInsideTheSolution) {
  EXPECT_EQ(only(check("kernels/a.cu", "#include \"/etc/passwd\"\n")).rule, "include.path");
  EXPECT_EQ(only(check("kernels/a.cu", "#include \"../../secret.h\"\n")).rule, "include.path");
  EXPECT_EQ(only(check("kernels/a.cu", "#include <../x.h>\n")).rule, "include.path");
  EXPECT_EQ(only(check("kernels/a.cu", "#define P \"/etc/passwd\"\n#include P\n")).rule,
            "include.path");
  EXPECT_EQ(only(check("kernels/a.cu", "#include_next <cuda_runtime.h>\n")).rule, "include.path");
  // A header of the solution, next to the file or from the root, is fine.
  auto ok =
      check_sources({{"kernels/a.cu", "#include \"common.cuh\"\n#include \"kernels/common.cuh\"\n"},
                     {"kernels/common.cuh", "#pragma once\n"}},
                    LibraryPolicy::kDefault);
  EXPECT_TRUE(ok.empty()) << format_findings(ok);
}

TEST(SourceChecks, ForbiddenCallsButNotInCommentsStringsOrMembers) {
  Finding f =
      only(check("kernels/a.cu", "void f() {\n  cudaStream_t s;\n  cudaStreamCreate(&s);\n}\n"));
  EXPECT_EQ(f.rule, "call.forbidden");
  EXPECT_EQ(f.line, 3);
  for (const char* call :
       {"system(\"ls\");", "void* h = dlopen(\"x\", 0);", "fork();",
        "cudaDeviceSetLimit(cudaLimitStackSize, 1);", "cudaGraphLaunch(g, 0);", "getenv(\"HOME\");",
        "cudaCtxResetPersistingL2Cache();", "FILE* f = fopen(\"x\", \"r\");"})
    EXPECT_EQ(only(check("kernels/a.cpp", std::string("void f() { ") + call + " }\n")).rule,
              "call.forbidden")
        << call;
  EXPECT_TRUE(check("kernels/a.cu",
                    "// system(\"ls\") in a comment\n/* fork() */\n"
                    "const char* s = \"dlopen\";\nstruct S { int system; };\n"
                    "int g(S s) { return s.system; }\n")
                  .empty());
}

// Gaps the attack suite found (tests/bench_suite/README.md): other streams named as constants,
// L2 persistence through launch attributes, run-time code loading, file calls the symbol check
// alone caught, symbol aliases.
TEST(SourceChecks, OtherStreamsLaunchAttributesLoadersAndAliases) {
  for (const char* code :
       {"k<<<1, 1, 0, cudaStreamPerThread>>>(p);", "cudaStream_t s = cudaStreamLegacy;",
        "cudaLaunchAttribute a; a.id = cudaLaunchAttributeAccessPolicyWindow;",
        "a.val.accessPolicyWindow.hitRatio = 1.f;", "w.hitProp = cudaAccessPropertyPersisting;",
        "cudaLibraryLoadFromFile(&l, \"k.cubin\", "
        "0, 0, 0, 0, 0, 0);",
        "FILE* f = fopen64(\"ref.bin\", \"r\");", "int fd = open(\"/tmp/x\", 0);",
        "cudaUserObjectCreate(&o, p, cb, 1, 0);", "#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1"}) {
    auto f = check("kernels/a.cu", std::string("void f(float* p) {\n  ") + code + "\n}\n");
    ASSERT_FALSE(f.empty()) << code;
    EXPECT_EQ(f[0].rule, "call.forbidden") << code;
    EXPECT_EQ(f[0].line, 2) << code;
  }
  EXPECT_EQ(
      only(check("kernels/a.cu",
                 "extern \"C\" void* h(const char*, int) __attribute__((weakref(\"dlopen\")));\n"))
          .rule,
      "call.forbidden");
  // Names that merely contain the words are fine.
  EXPECT_TRUE(check("kernels/a.cu", "int opened = 0; int reopen(int x) { return x; }\n").empty());
}

TEST(SourceChecks, InlineAssemblyOnlyInDeviceCode) {
  EXPECT_TRUE(check("kernels/a.cu",
                    "__device__ unsigned lane() {\n  unsigned r;\n"
                    "  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n"
                    "  return r;\n}\n")
                  .empty());
  EXPECT_TRUE(
      check("kernels/a.cu", "__global__ void k() {\n  if (1) { asm(\"trap;\"); }\n}\n").empty());
  Finding f = only(check("kernels/a.cu", "void host() {\n  __asm__(\"syscall\");\n}\n"));
  EXPECT_EQ(f.rule, "asm.host");
  EXPECT_EQ(f.line, 2);
  EXPECT_EQ(only(check("kernels/a.cpp", "void h() { asm(\"nop\"); }\n")).rule, "asm.host");
}

TEST(SourceChecks, LaunchWithoutTheStreamIsAWarning) {
  auto f = check("kernels/a.cu", "__global__ void k() {}\nvoid l() { k<<<1, 32>>>(); }\n");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].error);
  EXPECT_EQ(f[0].rule, "launch.stream");
  EXPECT_FALSE(has_errors(f));
}

TEST(SourceChecks, FilePathsAndSizes) {
  EXPECT_EQ(only(check("../evil.cu", "")).rule, "file.path");
  EXPECT_EQ(only(check("/etc/x.cu", "")).rule, "file.path");
  EXPECT_EQ(only(check("kernels/sub/x.cu", "")).rule, "file.path");
  EXPECT_EQ(only(check("kernels/x.sh", "")).rule, "file.path");
  EXPECT_EQ(only(check("kernels/x.cu", std::string("a\0b", 3))).rule, "file.size");
  EXPECT_EQ(only(check("kernels/x.cu", std::string((1 << 20) + 1, ' '))).rule, "file.size");
  EXPECT_TRUE(check("model_new.py", "import torch\n").empty());
}

TEST(SourceChecks, RawStringsAndContinuationsDoNotConfuseTheScanner) {
  auto f = check("kernels/a.cpp",
                 "const char* r = R\"x(#include <thread> system(\"ls\") )x\";\n"
                 "// a comment \\\n   fork();\n"
                 "int n = 1'000'000;\n"
                 "void g() { fork(); }\n");
  Finding one = only(f);
  EXPECT_EQ(one.line, 5);
}

// Issue 27 item 1: __has_include("/abs") answered whether any host file exists. It takes the
// path rule of #include; a macro argument or alias is refused as #include's is.
TEST(SourceChecks, HasIncludeFollowsTheIncludePathRule) {
  for (const char* probe :
       {"#if __has_include(\"/etc/passwd\")\n#endif\n", "#if __has_include(\"../x\")\n#endif\n",
        "#if __has_include(</etc/shadow>)\n#endif\n",
        "#if __has_include( \"kernels/../../x.h\" )\n#endif\n",
        "#define P \"/etc/passwd\"\n#if __has_include(P)\n#endif\n",
        "#define H __has_include\n#if H(\"/etc/passwd\")\n#endif\n",
        "#if __has_include_next(<cuda_runtime.h>)\n#endif\n",
        "#if __has_embed(\"/etc/passwd\")\n#endif\n"}) {
    auto f = check("kernels/a.cu", probe);
    ASSERT_FALSE(f.empty()) << probe;
    EXPECT_EQ(f[0].rule, "include.path") << probe;
  }
  EXPECT_EQ(only(check("kernels/a.cu", "// x\n#if __has_include(\"/etc/passwd\")\n#endif\n")).line,
            2);
  // The honest forms stay allowed.
  auto ok = check("kernels/a.cu",
                  "#if defined(__has_include)\n#if __has_include(<cuda_fp8.h>)\n#endif\n#endif\n"
                  "#ifdef __has_include\n#endif\n#if __has_include(\"kernels/common.cuh\")\n"
                  "#endif\n#if defined __has_include\n#endif\n");
  EXPECT_TRUE(ok.empty()) << format_findings(ok);
}

// `#pragma GCC dependency "f"` stats a host file and names it in a fatal error when it is missing:
// the same oracle, in the directive and in _Pragma.
TEST(SourceChecks, PragmaDependencyIsRefused) {
  EXPECT_EQ(only(check("kernels/a.cu", "#pragma GCC dependency \"/etc/shadow\"\n")).rule,
            "include.path");
  EXPECT_EQ(only(check("kernels/a.cu", "_Pragma(\"GCC dependency \\\"/etc/shadow\\\"\")\n")).rule,
            "include.path");
  EXPECT_TRUE(check("kernels/a.cu", "#pragma once\n#pragma unroll\n_Pragma(\"unroll\")\n").empty());
}

// The host copy of a __host__ __device__ function goes to the host assembler: its .incbin put
// /etc/passwd's bytes into the artifact (checked by hand with nvcc 12). Inline assembly there is
// host assembly; the file directives are refused wherever they appear.
TEST(SourceChecks, AssemblerCannotReadFiles) {
  const char* incbin = "asm(\".pushsection .rodata\\n.incbin \\\"/etc/passwd\\\"\\n.popsection\");";
  for (const char* head : {"__host__ __device__ void f()", "__device__ __host__ void f()",
                           "#define HD __host__ __device__\nHD void f()",
                           "#define H __host__\n#define HD H __device__\nHD void f()"}) {
    auto f = check("kernels/a.cu", std::string(head) + " {\n" + incbin + "\n}\n");
    ASSERT_FALSE(f.empty()) << head;
    EXPECT_TRUE(std::all_of(f.begin(), f.end(), [](const Finding& x) {
      return x.rule == "asm.host";
    })) << format_findings(f);
  }
  // Even in device code the directive is refused (ptxas has none, so nothing honest uses it).
  EXPECT_EQ(
      only(check("kernels/a.cu", "__device__ void f() { asm(\".incbin \\\"x\\\"\"); }\n")).rule,
      "asm.host");
  EXPECT_EQ(only(check("kernels/a.cu", "const char* s = \". include \\\"x\\\"\";\n")).rule,
            "asm.host");
  EXPECT_TRUE(check("kernels/a.cu", "const char* s = \"e.g. include the header\";\n").empty());
  // A __device__ function's PTX stays allowed, and so does a __host__ __device__ one without asm.
  auto ok = check("kernels/a.cu",
                  "#define HD __host__ __device__\nHD inline float sq(float x) { return x * x; }\n"
                  "__device__ unsigned lane() {\n  unsigned r;\n"
                  "  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n  return r;\n}\n");
  EXPECT_TRUE(ok.empty()) << format_findings(ok);
}

}  // namespace
}  // namespace cuda_agent::compile_farm
