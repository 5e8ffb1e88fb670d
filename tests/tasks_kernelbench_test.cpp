// Importing the KernelBench snapshot (../shared/kernelbench from the source tree: levels 1 and
// 2, 200 files) gives 200 tasks and no errors. Skipped, with a message, where it is absent.
// The bundled sample set (tasks/sample: synthesized tasks that passed the GPU filter) imports
// whole, and its filter report names exactly the files it holds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

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

TEST(TasksSample, EveryBundledTaskImportsAndPassedTheFilter) {
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (it sets CUDA_AGENT_SOURCE_DIR)";
  const std::filesystem::path sample = std::filesystem::path(src) / "tasks" / "sample";
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(sample))
    if (e.path().extension() == ".py") files.insert(e.path().stem().string());
  ASSERT_GE(files.size(), 40u) << "the issue asks for at least 40 bundled tasks";

  std::ifstream in(sample / "filter-report.json");
  ASSERT_TRUE(in) << "tasks/sample has no filter-report.json";
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_NE(report.at("options_key").get<std::string>().find("cuda"), std::string::npos)
      << "the sample must come from a GPU filter run";
  std::set<std::string> passed;
  for (const auto& t : report.at("tasks"))
    if (t.at("passed").get<bool>()) passed.insert(t.at("name").get<std::string>());
  EXPECT_EQ(files, passed) << "tasks/sample and its filter-report.json disagree";

  testing::TempDir tmp("tasks_sample");
  auto r = testing::run_cli("tasks import " + sample.string() + " --store " + tmp.sub("store"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string n = std::to_string(files.size());
  EXPECT_NE(r.output.find("imported " + n + ", unchanged 0, failed 0 (of " + n + " files"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace cuda_agent
