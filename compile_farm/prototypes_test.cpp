#include "compile_farm/prototypes.h"

#include <gtest/gtest.h>

namespace cuda_agent::compile_farm {
namespace {

Expected<std::vector<LauncherPrototype>> parse(std::string content) {
  return parse_launchers({{"kernels/a.cu", std::move(content)}});
}

TEST(Prototypes, ReadsTheDesignExample) {
  auto p = parse(
      "extern \"C\" void scale_relu_launch(const float* x, float* y, long long n, "
      "cudaStream_t s) {\n  k<<<1,1,0,s>>>(x, y, n);\n}\n");
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ(p->size(), 1u);
  const LauncherPrototype& l = (*p)[0];
  EXPECT_EQ(l.name, "scale_relu_launch");
  ASSERT_EQ(l.params.size(), 4u);
  EXPECT_EQ(l.params[0].name, "x");
  EXPECT_EQ(l.params[0].c_type, "const float*");
  EXPECT_EQ(l.params[0].kind, ParamKind::kPointer);
  EXPECT_EQ(l.params[1].kind, ParamKind::kPointer);
  EXPECT_EQ(l.params[2].c_type, "long long");
  EXPECT_EQ(l.params[2].name, "n");
  EXPECT_EQ(l.params[2].kind, ParamKind::kInteger);
  EXPECT_EQ(l.params[3].kind, ParamKind::kStream);
  EXPECT_EQ(pointer_dtype(l.params[0].c_type), "float32");
}

TEST(Prototypes, BlocksDeclarationsAndAllTypes) {
  auto p = parse_launchers(
      {{"kernels/api.h",
        "extern \"C\" {\nvoid a(const __half* __restrict__ x, __nv_bfloat16* y, int64_t n, float "
        "alpha, double beta, bool flag, unsigned int m, cudaStream_t);\n"
        "cudaError_t b(void);\n}\n"},
       {"kernels/a.cu",
        "#include \"api.h\"\nextern \"C\" void a(const __half* __restrict__ x, __nv_bfloat16* y, "
        "int64_t n, float alpha, double beta, bool flag, unsigned int m, cudaStream_t) {}\n"
        "extern \"C\" cudaError_t b(void) { return cudaSuccess; }\n"}});
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ(p->size(), 2u);
  const auto& a = (*p)[0].params;
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(pointer_dtype(a[0].c_type), "float16");
  EXPECT_EQ(pointer_dtype(a[1].c_type), "bfloat16");
  EXPECT_EQ(a[3].kind, ParamKind::kFloating);
  EXPECT_EQ(a[5].kind, ParamKind::kInteger);
  EXPECT_EQ(a[6].c_type, "unsigned int");
  EXPECT_EQ(a[7].kind, ParamKind::kStream);
  EXPECT_TRUE((*p)[1].params.empty());
}

TEST(Prototypes, UnsupportedTypesNameLauncherParameterAndType) {
  auto p = parse("\n\nextern \"C\" void f(float* x, void* scratch, cudaStream_t s) {}\n");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, "compile.prototype");
  EXPECT_NE(p.error().message.find("kernels/a.cu:3"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("launcher 'f' parameter 2 ('void* scratch')"), std::string::npos)
      << p.error().message;
  for (const char* bad :
       {"extern \"C\" void f(float& x) {}", "extern \"C\" void f(float** x) {}",
        "extern \"C\" void f(cudaStream_t s, int n) {}",
        "extern \"C\" void f(std::vector<float> v) {}",
        "extern \"C\" float* f(int n) { return 0; }", "extern \"C\" __global__ void k(float* x) {}",
        "extern \"C\" void f(struct S s) {}"})
    EXPECT_FALSE(parse(bad)) << bad;
}

TEST(Prototypes, ConflictingDeclarationsAndNoLauncherAreErrors) {
  auto p = parse_launchers({{"kernels/a.h", "extern \"C\" void f(float* x);\n"},
                            {"kernels/a.cu", "extern \"C\" void f(double* x) {}\n"}});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("declared twice"), std::string::npos);
  auto none = parse("__global__ void k() {}\n");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, "compile.no_launcher");
}

}  // namespace
}  // namespace cuda_agent::compile_farm
