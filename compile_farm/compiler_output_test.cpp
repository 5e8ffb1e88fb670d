#include "compile_farm/compiler_output.h"

#include <gtest/gtest.h>

namespace cuda_agent::compile_farm {
namespace {

TEST(CompilerOutput, ParsesPtxasVerbose) {
  const char* out =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z10scale_reluPKfPfx' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z10scale_reluPKfPfx\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 10 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compile time = 12.270 ms\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'plain_c' for 'sm_90'\n"
      "ptxas info    : Function properties for plain_c\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers\n";
  auto k = parse_ptxas(out);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].demangled_name, "scale_relu(float const*, float*, long long)");
  EXPECT_EQ(k[0].registers, 10u);
  EXPECT_EQ(k[0].static_smem_bytes, 2048u);
  EXPECT_EQ(k[0].stack_bytes, 8u);
  EXPECT_EQ(k[0].spill_store_bytes, 4u);
  EXPECT_EQ(k[0].spill_load_bytes, 12u);
  EXPECT_EQ(k[1].demangled_name, "plain_c");
  EXPECT_EQ(k[1].registers, 255u);
}

TEST(CompilerOutput, TrimsToTheFirstErrorsWithContext) {
  std::string out;
  for (int i = 0; i < 50; ++i) {
    out += "kernels/a.cu(" + std::to_string(i + 1) + "): error: identifier \"x" +
           std::to_string(i) + "\" is undefined\n";
    out += "    y = x;\n        ^\n";
    for (int j = 0; j < 30; ++j) out += "          detected during instantiation of ...\n";
  }
  out += "ptxas info    : Used 10 registers\n";
  std::string log = trim_compiler_log(out);
  EXPECT_NE(log.find("kernels/a.cu(1): error: identifier \"x0\""), std::string::npos);
  EXPECT_NE(log.find("kernels/a.cu(10): error"), std::string::npos);
  EXPECT_EQ(log.find("kernels/a.cu(11): error"), std::string::npos);
  EXPECT_NE(log.find("10 of 50 errors"), std::string::npos) << log;
  EXPECT_EQ(log.find("ptxas info"), std::string::npos);
  EXPECT_LT(log.size(), 4000u);
}

TEST(CompilerOutput, ReadsGccAndLinkerDiagnosticsAndWarnings) {
  std::string out =
      "kernels/g.cpp:3:5: error: 'foo' was not declared in this scope\n"
      "    3 |     foo();\n"
      "kernels/a.cu(7): warning #177-D: variable \"t\" was declared but never referenced\n"
      "/usr/bin/ld: obj/a.o: undefined reference to `bar'\n";
  std::string log = trim_compiler_log(out);
  EXPECT_NE(log.find("'foo' was not declared"), std::string::npos);
  EXPECT_NE(log.find("undefined reference"), std::string::npos);
  auto w = compiler_warnings(out);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("#177-D"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent::compile_farm
