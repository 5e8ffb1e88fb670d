// `cuda-agent eval` without the parts it needs says which part and exits 2, leaving the store
// usable: a bad policy spec, no tasks of the suite, and (on a machine without a GPU) no bench.
// And a checkpoint evaluated as a user does on a machine without a GPU: `--policy model:DIR`
// serves it from a policy-engine child, `--reward compile-only` builds every final workspace with
// real nvcc, and every report says what the reward measures.
#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.h"

namespace cuda_agent {
namespace {

using testing::run_cli;
using testing::run_shell;

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

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EvalCli, ServedCheckpointWithCompileOnlyReward) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("eval_cli_model-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tasks");
  fs::copy_file(fs::path(CUDA_AGENT_SOURCE_DIR) / "tasks/sample/00005_pad_hardswish.py",
                dir / "tasks/00005_pad_hardswish.py");
  const std::string store = (dir / "store").string();
  auto r =
      run_cli("tasks import " + (dir / "tasks").string() + " --store " + store + " --suite held");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cli("model init --tiny " + (dir / "model").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = run_cli("eval --tasks held --store " + store + " --policy model:" + (dir / "nope").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no config.json"), std::string::npos) << r.output;
  r = run_cli("eval --tasks held --store " + store + " --policy model:" + (dir / "model").string() +
              " --reward speed");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--reward 'speed': expected full or compile-only"), std::string::npos)
      << r.output;

  // Short episodes: the tiny random policy gains nothing from long replies or the skill document.
  std::ofstream(dir / "m.toml") << "[rollout]\nsystem_prompt = \"brief\"\n"
                                   "max_new_tokens_per_turn = 48\nmax_context_tokens = 8192\n"
                                   "[model]\ndtype = \"fp32\"\n"
                                   "[[nodes]]\nhost = \"localhost\"\ngpus = 0\n"
                                   "roles = [\"coordinator\", \"learner\", \"rollout\", "
                                   "\"compile\"]\n";
  auto eval = [&](const std::string& run, const std::string& report) {
    return run_cli("eval --tasks held --store " + store + " --policy model:" +
                   (dir / "model").string() + " --manifest " + (dir / "m.toml").string() +
                   " --reward compile-only --episodes-per-task 2 --seed 5 --max-turns 1 "
                   "--run-id " +
                   run + " --report-dir " + (dir / report).string());
  };
  r = eval("a", "rep-a");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("compile-only reward: builds +1, else -1"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Over all 2 episodes: mean reward"), std::string::npos) << r.output;
  EXPECT_NE(read_file(dir / "rep-a/summary.html").find("compile-only reward"), std::string::npos);
  // The engine child is gone with the run.
  EXPECT_EQ(
      run_shell("pgrep -f '[p]olicy-engine --model " + (dir / "model").string() + "'").exit_code,
      1);
  // Every row names the stored evaluation record its reward came from, read back from the store
  // (compile-only: no bench, so no audit).
  {
    std::istringstream rows(read_file(dir / "rep-a/episodes.jsonl"));
    int n = 0;
    for (std::string line; std::getline(rows, line);) {
      const auto row = nlohmann::json::parse(line);
      ++n;
      ASSERT_TRUE(row.contains("evaluation")) << line;
      EXPECT_EQ(row["evaluation"], "a/" + row["episode"].get<std::string>()) << line;
      EXPECT_EQ(row["evaluation_reward"], row["reward"]) << line;
      EXPECT_EQ(row["audit_sha256"], "") << line;
    }
    EXPECT_EQ(n, 2);
  }
  // The same seed, the same draws: a second run's episodes sample the same tokens.
  r = eval("b", "rep-b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto turns = [&](const std::string& report) {
    std::string rows = read_file(dir / report / "episodes.jsonl"), out;
    // Only what the policy did: the episode and run ids differ between the runs.
    for (const char* key : {"\"reward\"", "\"turns\"", "\"invalid_tool_calls\""})
      for (std::size_t at = rows.find(key); at != std::string::npos; at = rows.find(key, at + 1))
        out += rows.substr(at, rows.find_first_of(",}", at) - at) + ";";
    return out;
  };
  EXPECT_FALSE(turns("rep-a").empty());
  EXPECT_EQ(turns("rep-a"), turns("rep-b"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
