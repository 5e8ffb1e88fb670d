// The seed corpus (rollout/seed_corpus.h): determinism, the line's shape, the tiers each style
// declares, the default mix's compile-only mean, and, with the real compile farm (nvcc), a sample
// of transcripts replayed through run_episode under the compile-only reward: the reward must be
// expected_compile_only for every style, and each tool result the transcript records must be what
// the real tools answered (write/edit/finish and failed builds verbatim; for builds, the launchers,
// kernels and files the farm reported).
#include "rollout/seed_corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "compile_farm/farm.h"
#include "core/log.h"
#include "rollout/agent_tools.h"
#include "rollout/compile_only_tools.h"
#include "rollout/episode.h"
#include "rollout/openai_policy.h"
#include "rollout/replay_policy.h"

namespace cuda_agent {
namespace {

using nlohmann::json;

CorpusTranscript transcript(const SeedCorpusOptions& o, std::uint64_t i) {
  auto t = seed_transcript(o, i);
  EXPECT_TRUE(t) << t.error().message;
  return t ? *t : CorpusTranscript{};
}

TEST(SeedCorpus, SameSeedSameBytesOtherSeedOtherCorpus) {
  const SeedCorpusOptions a{.seed = 4}, b{.seed = 5};
  std::string la, la2, lb;
  for (std::uint64_t i = 0; i < 40; ++i) {
    la += corpus_json_line(transcript(a, i)) + "\n";
    la2 += corpus_json_line(transcript(a, i)) + "\n";
    lb += corpus_json_line(transcript(b, i)) + "\n";
  }
  EXPECT_EQ(la, la2);
  EXPECT_NE(la, lb);
}

// The corpus's shape against an episode's budgets: the demo's 6 turns and 4096 tokens hold every
// transcript; the 3 turns a demo run was once given cut off the longer ones, and the warning
// says how many (issue 25, on the H100).
TEST(SeedCorpus, BudgetsThatCutOffTranscriptsAreNamed) {
  const SeedCorpusOptions o{.seed = 1};
  const std::string path = ::testing::TempDir() + "/shape_corpus.jsonl";
  {
    std::ofstream out(path);
    for (std::uint64_t i = 0; i < 60; ++i) out << corpus_json_line(transcript(o, i)) << "\n";
  }
  auto shape = corpus_shape(path);
  ASSERT_TRUE(shape) << shape.error().to_string();
  ASSERT_EQ(shape->turns.size(), 60u);
  const std::int64_t longest = *std::max_element(shape->turns.begin(), shape->turns.end());
  EXPECT_GE(longest, 4) << "the buggy-then-fixed styles take more turns";
  EXPECT_LE(longest, 6) << "the demo manifest's 6 turns hold every transcript";
  EXPECT_EQ(corpus_budget_warning(*shape, 6, 4096), "");
  const std::string w = corpus_budget_warning(*shape, 3, 4096);
  EXPECT_NE(w.find("corpus transcripts"), std::string::npos) << w;
  EXPECT_NE(w.find("need more than rollout.max_turns = 3 turns (the longest: " +
                   std::to_string(longest) + ")"),
            std::string::npos)
      << w;
  EXPECT_NE(corpus_budget_warning(*shape, 6, 100).find("rollout.max_context_tokens = 100"),
            std::string::npos);
  {
    std::ofstream out(path, std::ios::app);
    out << "not json\n";
  }
  auto bad = corpus_shape(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "corpus.bad_line");
  EXPECT_NE(bad.error().message.find("line 61"), std::string::npos) << bad.error().message;
  std::filesystem::remove(path);
}

TEST(SeedCorpus, LineHasTheContractedShapeAndWhatRolloutSends) {
  for (const char* prompt : {"full", "brief"}) {
    const SeedCorpusOptions o{.seed = 2, .system_prompt = prompt};
    for (std::uint64_t i = 0; i < 30; ++i) {
      const CorpusTranscript t = transcript(o, i);
      const json j = json::parse(corpus_json_line(t));
      std::vector<std::string> keys;
      const auto ordered = nlohmann::ordered_json::parse(corpus_json_line(t));
      for (const auto& [k, v] : ordered.items()) keys.push_back(k);
      EXPECT_EQ(keys, (std::vector<std::string>{"format", "version", "task", "ops", "style",
                                                "expected_tier", "expected_compile_only", "split",
                                                "task_py", "system", "tools", "messages"}));
      EXPECT_EQ(j["format"], "cuda-agent-corpus");
      EXPECT_EQ(j["version"], 1);
      EXPECT_EQ(j["split"], "train");
      EXPECT_EQ(j["task"], t.task.name);
      EXPECT_EQ(j["ops"].get<std::vector<std::string>>(), t.task.ops());
      EXPECT_EQ(
          j["system"],
          std::string(agent_system_prompt(prompt == std::string("brief") ? "brief" : "skill")));
      const PolicyRequest request{.tools = agent_tools()};
      EXPECT_EQ(j["tools"], json::parse(openai_request_body("m", request))["tools"]);
      const json& m = j["messages"];
      ASSERT_GE(m.size(), 7u);
      EXPECT_EQ(m[0]["role"], "user");
      EXPECT_EQ(m[0]["content"], task_prompt(j["task_py"]));
      // Every assistant message is followed by one tool message per call.
      std::size_t k = 1;
      while (k < m.size()) {
        ASSERT_EQ(m[k]["role"], "assistant") << k;
        ASSERT_TRUE(m[k]["content"].is_string());
        const json& calls = m[k]["tool_calls"];
        ASSERT_GE(calls.size(), 1u);
        for (const json& c : calls) {
          EXPECT_TRUE(c["arguments"].is_object());
          EXPECT_TRUE(c["name"].is_string());
        }
        for (std::size_t c = 0; c < calls.size(); ++c) EXPECT_EQ(m[k + 1 + c]["role"], "tool");
        k += 1 + calls.size();
      }
      EXPECT_EQ(m[m.size() - 2]["tool_calls"][0]["name"], "finish");
      EXPECT_EQ(m[1]["tool_calls"][1]["arguments"]["path"], "model_new.py");
    }
  }
}

TEST(SeedCorpus, StylesDeclareTheirTiersAndTheDefaultMixMeansZero) {
  const SeedCorpusOptions o{.seed = 8};
  std::map<std::string, int> seen;
  double compile_only_sum = 0;
  const int n = 600;
  for (int i = 0; i < n; ++i) {
    const CorpusTranscript t = transcript(o, static_cast<std::uint64_t>(i));
    const std::size_t len = t.task.steps.size();
    ++seen[to_string(t.style)];
    compile_only_sum += t.expected_compile_only;
    switch (t.style) {
      case CorpusStyle::kFusedVectorized: EXPECT_EQ(t.expected_tier, len >= 2 ? 3 : 1); break;
      case CorpusStyle::kFusedScalar: EXPECT_EQ(t.expected_tier, len >= 2 ? 2 : 1); break;
      case CorpusStyle::kPerOpKernels:
      case CorpusStyle::kSerial: EXPECT_EQ(t.expected_tier, 1); break;
      case CorpusStyle::kBuggy: EXPECT_EQ(t.expected_tier, -1); break;
      case CorpusStyle::kBuggyFixed: EXPECT_GE(t.expected_tier, 1); break;
    }
    EXPECT_EQ(t.expected_compile_only, t.style == CorpusStyle::kBuggy ? -1 : 1);
    const std::size_t edits = [&] {
      std::size_t e = 0;
      for (const ChatMessage& m : t.messages)
        for (const ChatToolCall& c : m.tool_calls) e += c.name == "edit_file";
      return e;
    }();
    EXPECT_EQ(edits, t.style == CorpusStyle::kBuggyFixed ? 1u : 0u);
  }
  EXPECT_EQ(seen.size(), kCorpusStyleCount);
  EXPECT_NEAR(compile_only_sum / n, 0.0, 0.12);

  SeedCorpusOptions gpu{.seed = 8, .style_weights = gpu_style_mix()};
  double tier_sum = 0;
  for (int i = 0; i < 200; ++i)
    tier_sum += transcript(gpu, static_cast<std::uint64_t>(i)).expected_tier;
  EXPECT_GT(tier_sum / 200, 1.0);
}

TEST(SeedCorpus, MixesParseAndBadOnesAreNamed) {
  auto w = parse_style_mix("fused_scalar:1,buggy:3");
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)[static_cast<std::size_t>(CorpusStyle::kBuggy)], 3);
  EXPECT_EQ((*w)[static_cast<std::size_t>(CorpusStyle::kSerial)], 0);
  EXPECT_EQ(*parse_style_mix("gpu"), gpu_style_mix());
  auto unknown = parse_style_mix("fused:1");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, "corpus.unknown_style");
  EXPECT_NE(unknown.error().message.find("\"fused\""), std::string::npos);
  EXPECT_EQ(parse_style_mix("buggy:-1").error().code, "corpus.bad_mix");
  EXPECT_EQ(parse_style_mix("buggy:0").error().code, "corpus.bad_mix");
  auto prompt = seed_transcript({.system_prompt = "long"}, 0);
  ASSERT_FALSE(prompt);
  EXPECT_EQ(prompt.error().code, "corpus.system_prompt");
}

TEST(SeedCorpus, BugsBreakTheLineTheyNameAndTheFixRestoresTheSolution) {
  const SeedCorpusOptions o{.seed = 3};
  for (std::uint64_t i = 0; i < 20; ++i) {
    const CorpusTranscript t = transcript(o, i);
    for (SolutionStyle st : {SolutionStyle::kFusedVectorized, SolutionStyle::kFusedScalar,
                             SolutionStyle::kPerOpKernels, SolutionStyle::kSerial}) {
      auto s = write_solution(t.task, st);
      ASSERT_TRUE(s);
      ASSERT_EQ(s->step_lines.size(), t.task.steps.size());
      for (BugKind kind : {BugKind::kUndeclaredIdentifier, BugKind::kMissingSemicolon}) {
        auto bug = inject_bug(*s, kind, i % s->step_lines.size());
        if (!bug && bug.error().code == "corpus.bug_not_unique") {
          // Only a missing ';' can leave a line found elsewhere too; the corpus then takes `val`.
          EXPECT_EQ(kind, BugKind::kMissingSemicolon) << bug.error().message;
          continue;
        }
        ASSERT_TRUE(bug) << bug.error().message;
        std::string fixed = bug->broken_cu;
        const std::size_t at = fixed.find(bug->bad_line);
        ASSERT_NE(at, std::string::npos);
        EXPECT_EQ(fixed.find(bug->bad_line, at + 1), std::string::npos) << "edit_file needs one";
        fixed.replace(at, bug->bad_line.size(), bug->good_line);
        EXPECT_EQ(fixed, s->cu);
      }
    }
  }
}

// ---- with the real compile farm ----

// Plays the transcript's assistant turns and keeps the first request (system, user, tools).
class Recording final : public PolicyBackend {
 public:
  explicit Recording(std::unique_ptr<ReplayPolicy> replay) : replay_(std::move(replay)) {}
  Expected<PolicyTurn> next(const PolicyRequest& request) override {
    if (!first_) first_ = request;
    return replay_->next(request);
  }
  std::string describe() const override { return "recording"; }
  std::optional<PolicyRequest> first_;

 private:
  std::unique_ptr<ReplayPolicy> replay_;
};

// The lines of `report` from `header` up to the next line without two leading spaces.
std::vector<std::string> section(const std::string& report, const std::string& header) {
  std::vector<std::string> out;
  std::istringstream in(report);
  bool on = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(header, 0) == 0) {
      on = true;
      continue;
    }
    if (on && line.rfind("  ", 0) != 0) break;
    if (on) out.push_back(line);
  }
  return out;
}

class SeedCorpusBuild : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    (void)setup_logging({.level = "warn"});
    if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return;
    auto farm = EmbeddedCompileFarm::start({}, 2);
    ASSERT_TRUE(farm) << farm.error().to_string();
    farm_ = std::move(*farm).release();
    auto client = CompileClient::connect({.broker_endpoint = farm_->client_endpoint()});
    ASSERT_TRUE(client) << client.error().to_string();
    client_ = std::move(*client).release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete farm_;
  }
  void SetUp() override {
    if (!farm_) GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  }
  static EmbeddedCompileFarm* farm_;
  static CompileClient* client_;
};
EmbeddedCompileFarm* SeedCorpusBuild::farm_ = nullptr;
CompileClient* SeedCorpusBuild::client_ = nullptr;

TEST_F(SeedCorpusBuild, ReplayedTranscriptsEarnTheirCompileOnlyRewardAndShowTheRealToolText) {
  // A sample covering every style, and for the buggy ones every solution style and both bugs.
  const SeedCorpusOptions o{.seed = 21, .style_weights = {1, 1, 1, 1, 2, 2}};
  std::vector<CorpusTranscript> sample;
  std::set<std::string> covered;
  for (std::uint64_t i = 0; i < 400 && covered.size() < 14; ++i) {
    CorpusTranscript t = transcript(o, i);
    const bool buggy = t.style == CorpusStyle::kBuggy || t.style == CorpusStyle::kBuggyFixed;
    std::string key = to_string(t.style);
    if (buggy) {
      key += std::string("/") + to_string(t.solution_style);
      key += t.messages[5].content.find("expected a") != std::string::npos ? "/semi" : "/ident";
    }
    if (t.style == CorpusStyle::kBuggyFixed) key = "buggy_fixed" + key.substr(key.rfind('/'));
    if (covered.insert(key).second) sample.push_back(std::move(t));
  }
  ASSERT_GE(covered.size(), 12u);
  std::map<std::string, int> checked;
  for (const CorpusTranscript& t : sample) {
    SCOPED_TRACE(t.task.name + " " + to_string(t.style) + "/" + to_string(t.solution_style));
    std::string replay;
    for (const ChatMessage& m : t.messages) {
      if (m.role != ChatRole::kAssistant) continue;
      json calls = json::array();
      for (const ChatToolCall& c : m.tool_calls)
        calls.push_back({{"name", c.name}, {"arguments", json::parse(c.arguments_json)}});
      replay +=
          json{{"role", "assistant"}, {"content", m.content}, {"tool_calls", calls}}.dump() + "\n";
    }
    auto policy = ReplayPolicy::parse(replay, t.task.name);
    ASSERT_TRUE(policy) << policy.error().to_string();
    Recording recording(std::move(*policy));
    CompileOnlyTools tools(*client_, {});
    Episode e = run_episode({.episode_id = EpisodeId{"corpus"},
                             .run_id = RunId{"corpus"},
                             .task_id = TaskId{t.task.name},
                             .model_py = t.task.source,
                             .policy = &recording,
                             .tools = &tools,
                             .system_prompt = t.system});
    EXPECT_EQ(e.status, EpisodeStatus::kCompleted);
    EXPECT_EQ(e.final_reward, t.expected_compile_only) << e.turns.back().tool_results[0].content;
    ASSERT_TRUE(recording.first_);
    EXPECT_EQ(recording.first_->messages[0].content, t.system);
    EXPECT_EQ(recording.first_->messages[1].content, t.messages[0].content);
    // The real tool results, in order, against the transcript's tool messages.
    std::vector<std::string> real;
    for (std::size_t k = 2; k + 1 < e.turns.size(); ++k)
      for (const ToolResult& r : e.turns[k].tool_results) real.push_back(r.content);
    std::vector<const ChatMessage*> mine;
    std::vector<std::string> call_names;
    for (const ChatMessage& m : t.messages) {
      if (m.role == ChatRole::kTool) mine.push_back(&m);
      for (const ChatToolCall& c : m.tool_calls) call_names.push_back(c.name);
    }
    ASSERT_EQ(real.size(), mine.size());
    for (std::size_t k = 0; k < real.size(); ++k) {
      const std::string& want = mine[k]->content;
      if (call_names[k] != "compile" || want.rfind("nvcc on", 0) == 0) {
        EXPECT_EQ(want, real[k]) << call_names[k];
      } else {
        EXPECT_EQ(section(want, "launchers"), section(real[k], "launchers")) << real[k];
        auto paths = [](const std::vector<std::string>& rows) {
          std::vector<std::string> out;
          for (const std::string& r : rows) out.push_back(r.substr(2, r.find(' ', 2) - 2));
          return out;
        };
        EXPECT_EQ(paths(section(want, "files:")), paths(section(real[k], "files:"))) << real[k];
        auto names = [](const std::vector<std::string>& rows) {  // after the numeric columns
          std::vector<std::string> out;
          for (const std::string& r : rows) out.push_back(r.size() > 34 ? r.substr(34) : r);
          return out;
        };
        EXPECT_EQ(names(section(want, "kernels:")), names(section(real[k], "kernels:")))
            << want << "\n----- real -----\n"
            << real[k];
      }
      if (std::getenv("SEED_CORPUS_PRINT") && call_names[k] == "compile")
        std::printf("---- corpus ----\n%s---- real ----\n%s", want.c_str(), real[k].c_str());
      ++checked[call_names[k]];
    }
  }
  EXPECT_GT(checked["compile"], 10);
  EXPECT_GT(checked["edit_file"], 0);
}

}  // namespace
}  // namespace cuda_agent
