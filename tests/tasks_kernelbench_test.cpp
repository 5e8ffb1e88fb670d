// Importing the KernelBench snapshot (../shared/kernelbench from the source tree: levels 1 and
// 2, 200 files) gives 200 tasks and no errors. Skipped, with a message, where it is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "storage/store_test_util.h"
#include "tests/cli_runner.h"

namespace cuda_agent {
namespace {

TEST(TasksKernelBench, ImportsAllTwoHundredFilesWithoutErrors) {
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (it sets CUDA_AGENT_SOURCE_DIR)";
  const std::filesystem::path kb = std::filesystem::path(src) / ".." / "shared" / "kernelbench";
  if (!std::filesystem::is_directory(kb / "level1") ||
      !std::filesystem::is_directory(kb / "level2")) {
    GTEST_SKIP() << "no KernelBench snapshot at " << kb.string() << " (levels 1 and 2)";
  }
  testing::TempDir tmp("tasks_kernelbench");
  auto r = testing::run_cli("tasks import " + kb.string() + " --store " + tmp.sub("store"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("imported 200, unchanged 0, failed 0 (of 200 files and rows)"),
            std::string::npos)
      << r.output;
  r = testing::run_cli("tasks list --suite kernelbench/level2 --store " + tmp.sub("store"));
  EXPECT_NE(r.output.find("100 tasks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kernelbench/level2/1_Conv2D_ReLU_BiasAdd-"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace cuda_agent
