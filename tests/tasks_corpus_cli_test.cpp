// `cuda-agent tasks corpus` as a user runs it (cli/tasks_corpus_command.cpp): byte-identical
// output for the same seed, task directories whose held-out operator combinations appear neither
// in the corpus nor among the training tasks, tasks that `tasks import` accepts, and bad input
// refused with exit 2 and a message naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_runner.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The operators of a task file: the "Pointwise-chain task: a -> b." docstring line.
std::string combination_of(const std::string& source) {
  const std::string tag = "Pointwise-chain task: ";
  const std::size_t b = source.find(tag) + tag.size();
  std::string chain = source.substr(b, source.find(".\n", b) - b);
  std::vector<std::string> ops;
  for (std::size_t p = 0;;) {
    const std::size_t q = chain.find(" -> ", p);
    ops.push_back(chain.substr(p, q - p));
    if (q == std::string::npos) break;
    p = q + 4;
  }
  std::sort(ops.begin(), ops.end());
  std::string key;
  for (const std::string& op : ops) key += (key.empty() ? "" : "+") + op;
  return key;
}

class TasksCorpusCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tasks_corpus_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TasksCorpusCli, SameSeedSameBytesAndHeldOutCombinationsAreNew) {
  const std::string base = "tasks corpus --seed 7 --count 300 --train-count 100 --heldout-count 32";
  auto a = run_cli(base + " --out " + (dir_ / "a.jsonl").string() + " --train-tasks " +
                   (dir_ / "train").string() + " --heldout-tasks " + (dir_ / "heldout").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b = run_cli(base + " --out " + (dir_ / "b.jsonl").string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(slurp(dir_ / "a.jsonl"), slurp(dir_ / "b.jsonl"));
  EXPECT_NE(a.output.find("mean compile-only"), std::string::npos) << a.output;

  std::set<std::string> seen;  // combinations of the corpus and the train tasks
  std::istringstream lines(slurp(dir_ / "a.jsonl"));
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    auto j = nlohmann::json::parse(line);
    seen.insert(combination_of(j["task_py"]));
  }
  EXPECT_EQ(count, 300);
  std::size_t train = 0, heldout = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "train")) {
    seen.insert(combination_of(slurp(e.path())));
    ++train;
  }
  std::set<std::string> heldout_combos;
  for (const auto& e : fs::directory_iterator(dir_ / "heldout")) {
    const std::string c = combination_of(slurp(e.path()));
    EXPECT_EQ(seen.count(c), 0u) << e.path() << ": " << c;
    heldout_combos.insert(c);
    ++heldout;
  }
  EXPECT_EQ(train, 100u);
  EXPECT_EQ(heldout, 32u);
  EXPECT_EQ(heldout_combos.size(), 32u);
  for (const auto& e : fs::directory_iterator(dir_ / "train"))
    EXPECT_EQ(e.path().extension(), ".py") << e.path();

  // The task directories import like tasks/sample.
  auto imported = run_cli("tasks import " + (dir_ / "heldout").string() + " --store " +
                          (dir_ / "store").string());
  EXPECT_EQ(imported.exit_code, 0) << imported.output;

  // A second run into the same directories needs --force.
  auto again = run_cli(base + " --out " + (dir_ / "c.jsonl").string() + " --train-tasks " +
                       (dir_ / "train").string());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
}

TEST_F(TasksCorpusCli, BadInputIsNamedWithExitTwo) {
  const std::string out = " --out " + (dir_ / "x.jsonl").string();
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"tasks corpus --count 0" + out, "--count"},
           {"tasks corpus --count 5 --mix fused:1" + out, "\"fused\""},
           {"tasks corpus --count 5 --mix buggy:-1" + out, "buggy:-1"},
           {"tasks corpus --count 5 --system-prompt long" + out, "\"long\""},
           {"tasks corpus --count 5 --out /proc/nope/x.jsonl", "/proc/nope/x.jsonl"},
       }) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "x.jsonl"));
}

}  // namespace
}  // namespace cuda_agent
