// The store commands of the cuda-agent executable, run as a user runs them, while this process
// holds the store open as its writer (as a coordinator would during a run).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "messages/trajectory_codec.h"
#include "model/tiny_tokenizer.h"
#include "model/tokenizer.h"
#include "storage/run_store.h"
#include "storage/store_test_util.h"
#include "tests/cli_runner.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using testing::make_episode;
using testing::store_at;
using testing::TempDir;

using testing::CmdResult;
CmdResult run(const std::string& args) { return testing::run_cli(args); }

bool has(const CmdResult& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

TEST(StoreCli, HelpDocumentsTheDefaultStore) {
  for (const char* cmd : {"runs list", "runs show", "trajectories export", "trajectories show"}) {
    CmdResult r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(has(r, "--store")) << cmd;
    EXPECT_TRUE(has(r, StoreOptions{}.dir)) << cmd << ": " << r.output;
  }
}

TEST(StoreCli, MissingAndForeignDirectoriesExit2NamingThem) {
  TempDir tmp("cli_bad");
  const std::string missing = tmp.sub("nothing-here");
  CmdResult r = run("runs list --store " + missing);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, missing + ": the directory does not exist")) << r.output;
  std::ofstream(tmp.sub("notes.txt")) << "not a store";
  r = run("trajectories export --store " + tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, tmp.path() + " is not a run store")) << r.output;
}

TEST(StoreCli, ReadsAStoreWhileItsWriterRuns) {
  TempDir tmp("cli_live");
  const std::string dir = tmp.sub("store");
  auto store = std::move(RunStore::open(store_at(dir), StoreMode::kWrite)).value();
  StoreWrite w;
  RunRecord meta;
  meta.run_id = RunId{"r1"};
  meta.state = "running";
  meta.stage = EpisodeStage::kAgentWarmup;
  meta.policy_version = PolicyVersion{4};
  w.runs.push_back(meta);
  for (int i = 0; i < 30; ++i) {
    w.episodes.push_back(make_episode("r1", "e" + std::to_string(i), "t", i % 4 - 1, 3000 + i));
  }
  w.episodes.push_back(make_episode("r2", "e0", "t", 1));  // same episode id, another run
  w.checkpoints.push_back({.run_id = RunId{"r1"}, .step = 7, .path = "ckpt/7"});
  ASSERT_TRUE(store->write(std::move(w), 10s));

  CmdResult list = run("runs list --store " + dir);
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_TRUE(has(list, "r1")) << list.output;
  EXPECT_TRUE(has(list, "running")) << list.output;
  EXPECT_TRUE(has(list, "r2")) << list.output;

  CmdResult show = run("runs show r1 --store " + dir);
  EXPECT_EQ(show.exit_code, 0) << show.output;
  for (const char* text : {"episodes: 30", "completed 30", "agent_warmup", "store size on disk",
                           "latest step 7", ">= 3", "episodes     tables"}) {
    EXPECT_TRUE(has(show, text)) << text << " missing from:\n" << show.output;
  }
  CmdResult show_json = run("runs show r1 --json --store " + dir);
  ASSERT_EQ(show_json.exit_code, 0) << show_json.output;
  auto j = nlohmann::json::parse(show_json.output);
  EXPECT_EQ(j["stats"]["episodes"], 30);
  EXPECT_GT(j["stats"]["disk_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(run("runs show nope --store " + dir).exit_code, 2);

  // A write acknowledged after the reader started is seen by the next command.
  StoreWrite more;
  more.episodes.push_back(make_episode("r1", "late", "t", 3));
  ASSERT_TRUE(store->write(std::move(more), 10s));
  const std::string out = tmp.sub("r1.jsonl");
  CmdResult exp = run("trajectories export --run r1 --out " + out + " --store " + dir);
  EXPECT_EQ(exp.exit_code, 0) << exp.output;
  EXPECT_TRUE(has(exp, "exported 31 episodes")) << exp.output;
  std::ifstream in(out);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto e = nlohmann::json::parse(line);
    EXPECT_EQ(e["run_id"], "r1");
    EXPECT_FALSE(e["trajectory_capnp_b64"].get<std::string>().empty());
    ++lines;
  }
  EXPECT_EQ(lines, 31);
  CmdResult all = run("trajectories export --store " + dir);
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_TRUE(has(all, "exported 32 episodes to stdout")) << all.output;

  CmdResult ambiguous = run("trajectories show e0 --store " + dir);
  EXPECT_EQ(ambiguous.exit_code, 2) << ambiguous.output;
  EXPECT_TRUE(has(ambiguous, "pass --run")) << ambiguous.output;
  CmdResult one = run("trajectories show e3 --store " + dir);
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_TRUE(has(one, "final reward 2")) << one.output;
  EXPECT_TRUE(has(one, "trajectory 2.9 KiB")) << one.output;
  CmdResult as_json = run("trajectories show e0 --run r2 --json --store " + dir);
  EXPECT_EQ(as_json.exit_code, 0) << as_json.output;
  EXPECT_EQ(nlohmann::json::parse(as_json.output)["run_id"], "r2");
  EXPECT_EQ(run("trajectories show nope --store " + dir).exit_code, 2);
  // Several ids, one store open: each is shown in turn; one that is missing is reported and the
  // others are still shown, and the exit code says something failed.
  CmdResult several = run("trajectories show e3 nope late --run r1 --store " + dir);
  EXPECT_EQ(several.exit_code, 2) << several.output;
  EXPECT_TRUE(has(several, "episode e3\n")) << several.output;
  EXPECT_TRUE(has(several, "episode late\n")) << several.output;
  EXPECT_TRUE(has(several, "nope")) << several.output;
}

// What a policy did, readable: the calls it made and what the tools answered (to diagnose a run
// from its store, as the GPU demo's episodes need).
TEST(StoreCli, ShowTranscriptPrintsTheCallsAndWhatTheToolsAnswered) {
  TempDir tmp("cli_transcript");
  const std::string dir = tmp.sub("store");
  auto store = std::move(RunStore::open(store_at(dir), StoreMode::kWrite)).value();
  // What the policy wrote, as ids of a tokenizer the command is given.
  const std::string tok_dir = tmp.sub("tokenizer");
  ASSERT_TRUE(write_tiny_tokenizer(tok_dir));
  auto tok = Tokenizer::load(tok_dir);
  ASSERT_TRUE(tok) << tok.error().to_string();
  auto ids = tok->encode("I will write the kernel first.");
  ASSERT_TRUE(ids);
  Episode e{.episode_id = EpisodeId{"ep1"},
            .run_id = RunId{"r1"},
            .task_id = TaskId{"t"},
            .status = EpisodeStatus::kTruncated};
  e.turns.push_back({.role = TurnRole::kAssistant,
                     .token_ids = *ids,
                     .logprobs = std::vector<float>(ids->size(), -0.5f),
                     .loss_mask = std::vector<std::uint8_t>(ids->size(), 1),
                     .tool_calls = {{"c0", "write_file", R"({"path":"kernels/k.cu"})"}},
                     .policy_version = PolicyVersion{2},
                     .wall_ms = 1250});
  e.turns.push_back({.role = TurnRole::kTool,
                     .tool_results = {{"c0", "nvcc on kernels/k.cu failed: expected ';'", true}},
                     .wall_ms = 40});
  EpisodeRecord r = make_episode("r1", "ep1", "t", -1);
  r.trajectory_bytes = encode_episode(e);
  StoreWrite w;
  w.episodes.push_back(std::move(r));
  ASSERT_TRUE(store->write(std::move(w), 10s));
  CmdResult out = run("trajectories show ep1 --transcript --store " + dir);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::string tokens =
      "turn 1: the policy (" + std::to_string(ids->size()) + " tokens, version 2, 1.25 s)";
  EXPECT_TRUE(has(out, tokens)) << out.output;
  for (const char* text : {R"(write_file({"path":"kernels/k.cu"}))", "turn 2: the tools (0.04 s)",
                           "[c0, error]", "nvcc on kernels/k.cu failed: expected ';'"})
    EXPECT_TRUE(has(out, text)) << text << " missing from:\n" << out.output;
  EXPECT_FALSE(has(out, "I will write the kernel first.")) << "text only with a tokenizer";
  CmdResult text =
      run("trajectories show ep1 --transcript --tokenizer " + tok_dir + " --store " + dir);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(has(text, "I will write the kernel first.\n--- parsed to:")) << text.output;
}

}  // namespace
}  // namespace cuda_agent
