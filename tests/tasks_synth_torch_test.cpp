// Synthesized programs run under PyTorch (on the CPU, batch 2) and give the output shape their
// docstring states: the shape rules of the operator catalogue checked against torch itself.
// Skipped, with a message, where python3 cannot import torch (CI's Debian machine has no
// python3-torch; `apt-get install python3-torch` or a GPU node's PyTorch enables it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "storage/store_test_util.h"
#include "tests/cli_runner.h"

namespace cuda_agent {
namespace {

TEST(TasksSynthTorch, ProgramsRunWithThePromisedShapes) {
  // The first interpreter that has torch: PATH's python3 (a GPU node's PyTorch), then the
  // system one (Debian's python3-torch when PATH holds another Python).
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string probe =
        std::string("timeout 120 ") + candidate + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    GTEST_SKIP() << "no python3 here can import torch; install python3-torch to run this test";
  }
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (it sets CUDA_AGENT_SOURCE_DIR)";
  testing::TempDir tmp("tasks_synth_torch");
  // Long chains weigh more than by default, so more operator pairs meet.
  auto r = testing::run_cli("tasks synth --count 60 --seed 4242 --mix 1:1,2:1,3:1,4:1,5:1 --out " +
                            tmp.sub("set"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Bounded: `timeout` kills the interpreter if a task hangs.
  const std::string cmd = "timeout 600 " + python + " " + std::string(src) +
                          "/tests/fixtures/run_synth_tasks.py " + tmp.sub("set") + " 2 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_EQ(status, 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(ran (\d+) bad (\d+) constant (\d+))")))
      << out;
  EXPECT_EQ(m[1], "60") << out;
  EXPECT_EQ(m[2], "0") << out;
  std::printf("%s", out.c_str());  // the constant-output count is for the GPU filter to act on
}

}  // namespace
}  // namespace cuda_agent
