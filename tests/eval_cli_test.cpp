// `cuda-agent eval` without the parts it needs says which part and exits 2, leaving the store
// usable: a bad policy spec, no tasks of the suite, and (on a machine without a GPU) no bench.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cli_runner.h"

namespace cuda_agent {
namespace {

using testing::run_cli;

TEST(EvalCli, MissingPartsAreNamed) {
  const std::string store =
      (std::filesystem::temp_directory_path() / ("eval_cli_test-" + std::to_string(::getpid())))
          .string();
  auto r = run_cli("eval --tasks kernelbench/level1 --store " + store + " --policy gpt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--policy 'gpt': expected replay:FILE"), std::string::npos) << r.output;

  r = run_cli("eval --tasks kernelbench/level1 --store " + store + " --policy openai:http://h/v1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs --model"), std::string::npos) << r.output;

  r = run_cli("eval --tasks kernelbench/level1 --store " + store +
              " --policy replay:/nonexistent/t.jsonl");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no such transcript"), std::string::npos) << r.output;

  r = run_cli("eval --tasks nothing/here --store " + store + " --policy replay:/tmp");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no tasks of suite 'nothing/here'"), std::string::npos) << r.output;

  // The store the failed runs opened is still a store.
  r = run_cli("runs list --store " + store);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::error_code ec;
  std::filesystem::remove_all(store, ec);
}

}  // namespace
}  // namespace cuda_agent
