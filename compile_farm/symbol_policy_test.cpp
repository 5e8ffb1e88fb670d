#include "compile_farm/symbol_policy.h"

#include <gtest/gtest.h>

namespace cuda_agent::compile_farm {
namespace {

const char* kReadelf =
    " 0x0000000000000001 (NEEDED)             Shared library: [libcudart.so.13]\n"
    " 0x0000000000000001 (NEEDED)             Shared library: [libstdc++.so.6]\n"
    " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n";

std::vector<LauncherPrototype> launcher() { return {{"scale_relu_launch", {}}}; }

TEST(SymbolPolicy, AcceptsWhatAOneKernelSolutionImports) {
  auto s = parse_dynamic_symbols(
      "scale_relu_launch T 14b0 5a\n_ITM_deregisterTMCloneTable w\n_Unwind_Resume@GCC_3.0 U\n"
      "__cudaLaunchKernel@libcudart.so.13 U\n__cudaRegisterFatBinary@libcudart.so.13 U\n"
      "__cxa_guard_acquire@CXXABI_1.3 U\n__gxx_personality_v0@CXXABI_1.3 U\nexpf@GLIBC_2.27 U\n"
      "cudaGetLastError@libcudart.so.13 U\n_ZNSt6vectorIfSaIfEE17_M_realloc_insertEv W 1 1\n",
      kReadelf);
  ASSERT_EQ(s.needed.size(), 3u);
  auto f = check_symbols(s, launcher(), LibraryPolicy::kDefault, "artifact.so");
  EXPECT_TRUE(f.empty()) << format_findings(f);
}

TEST(SymbolPolicy, RefusesImportsByName) {
  for (const char* sym : {"dlopen", "fopen", "open", "socket", "pthread_create", "system",
                          "cudaStreamCreate", "cudaDeviceSetLimit", "execve", "getenv"}) {
    auto s = parse_dynamic_symbols(std::string("scale_relu_launch T 1 1\n") + sym + "@GLIBC U\n",
                                   kReadelf);
    auto f = check_symbols(s, launcher(), LibraryPolicy::kDefault, "artifact.so");
    ASSERT_EQ(f.size(), 1u) << sym;
    EXPECT_EQ(f[0].rule, "symbol.import");
    EXPECT_NE(f[0].message.find(std::string("'") + sym + "'"), std::string::npos);
  }
}

TEST(SymbolPolicy, LibrariesFollowThePolicy) {
  auto s = parse_dynamic_symbols(
      "scale_relu_launch T 1 1\ncublasSgemm_v2 U\n",
      std::string(kReadelf) + "  (NEEDED) Shared library: [libcublas.so.13]\n");
  EXPECT_TRUE(check_symbols(s, launcher(), LibraryPolicy::kDefault, "a.so").empty());
  auto f = check_symbols(s, launcher(), LibraryPolicy::kPure, "a.so");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].rule, "symbol.import");
  EXPECT_EQ(f[1].rule, "symbol.library");
  auto other = parse_dynamic_symbols("scale_relu_launch T 1 1\n",
                                     "  (NEEDED) Shared library: [libpython3.so]\n");
  EXPECT_EQ(check_symbols(other, launcher(), LibraryPolicy::kDefault, "a.so").at(0).rule,
            "symbol.library");
}

TEST(SymbolPolicy, ExportsMustBeLaunchers) {
  auto s = parse_dynamic_symbols("scale_relu_launch T 1 1\n_Z6helperv T 2 2\n_init T 0 0\n", "");
  auto f = check_symbols(s, launcher(), LibraryPolicy::kDefault, "a.so");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "symbol.export");
  auto missing =
      check_symbols(parse_dynamic_symbols("", ""), launcher(), LibraryPolicy::kDefault, "a.so");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].rule, "symbol.launcher");
}

}  // namespace
}  // namespace cuda_agent::compile_farm
