// An episode end to end with the replay backend and real compilation (the embedded compile farm
// and nvcc): the transcript writes a kernel with a compile error, compiles, reads the error,
// fixes it, writes model_new.py, verifies, benchmarks, makes one malformed call and finishes. The
// bench is scripted here (a test-only evaluator behind FarmEvaluationTools' interface); the real
// GPU bench runs this path on the GPU machine. Also: budgets, and a policy that fails; and the
// compile-only reward (rollout/compile_only_tools.h) on the same farm: +1 for the transcript's
// final workspace, -1 for one the source policy refuses, and what was measured in every report.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "compile_farm/farm.h"
#include "core/log.h"
#include "rollout/compile_only_tools.h"
#include "rollout/episode.h"
#include "rollout/episode_test_transcript.h"
#include "rollout/farm_tools.h"
#include "rollout/replay_policy.h"

namespace cuda_agent {
namespace {

using nlohmann::json;
using namespace episode_test;  // NOLINT(google-build-using-namespace): the shared transcript

// The scripted bench: correct and tier 3 when the built artifact exports the launcher that
// model_new.py calls; records every call.
struct ScriptedBench {
  std::vector<std::pair<BenchMode, bool>> calls;
  // How long a final evaluation (the one that re-measures the baselines) takes.
  std::chrono::milliseconds final_delay{0};
  FarmEvaluationTools::Evaluator evaluator() {
    return [this](BenchRequest request) -> Expected<EvaluationOutcome> {
      const BenchMode mode = request.mode;
      calls.emplace_back(mode, request.options.remeasure_baselines);
      if (request.options.remeasure_baselines) std::this_thread::sleep_for(final_delay);
      EXPECT_TRUE(request.payload);
      if (!request.payload) return EvaluationOutcome{"no payload", false, -1, 0};
      const BenchPayload& p = *request.payload;
      EXPECT_EQ(p.task_model_py, kModelPy);
      const bool calls_launcher =
          p.model_new_py.find("kernels.scale_relu_launch") != std::string::npos;
      const bool exported = !p.prototypes.empty() && p.prototypes[0].name == "scale_relu_launch";
      if (!calls_launcher || !exported) return EvaluationOutcome{"checks failed", false, -1, 0};
      return EvaluationOutcome{mode == BenchMode::kVerify
                                   ? "5/5 input sets correct"
                                   : "1.8x faster than eager, 1.3x than compile",
                               true, 3, 1.3};
    };
  }
};

class EpisodeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    (void)setup_logging({.level = "warn"});
    if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return;
    auto farm = EmbeddedCompileFarm::start({}, 1);
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
  EpisodeSpec spec(PolicyBackend* policy, EvaluationTools* tools) {
    return {.episode_id = EpisodeId{"e1"},
            .run_id = RunId{"test"},
            .task_id = TaskId{"t/relu"},
            .model_py = kModelPy,
            .policy = policy,
            .tools = tools};
  }
  static EmbeddedCompileFarm* farm_;
  static CompileClient* client_;
};
EmbeddedCompileFarm* EpisodeTest::farm_ = nullptr;
CompileClient* EpisodeTest::client_ = nullptr;

TEST_F(EpisodeTest, WriteCompileFailFixVerifyBenchmarkFinish) {
  auto policy = ReplayPolicy::parse(transcript(), "transcript");
  ASSERT_TRUE(policy) << policy.error().to_string();
  ScriptedBench bench;
  bench.final_delay = std::chrono::milliseconds(40);
  FarmEvaluationTools tools(*client_, {}, bench.evaluator());
  Episode e = run_episode(spec(policy->get(), &tools));

  EXPECT_EQ(e.status, EpisodeStatus::kCompleted);
  EXPECT_EQ(e.final_reward, 3) << "the final evaluation decides the reward";
  EXPECT_GE(e.turns.back().wall_ms, 40u) << "the final evaluation's turn carries its time";
  EXPECT_EQ(e.counters.turns, 7u);
  EXPECT_EQ(e.counters.invalid_tool_calls, 1u) << "the benchmark call with broken arguments";
  EXPECT_EQ(e.counters.wasted_loops, 0u);
  // system, user, then (assistant, tool) x 7, then the final evaluation
  ASSERT_EQ(e.turns.size(), 2u + 14u + 1u);
  const Turn& compile_result = e.turns[5];
  ASSERT_EQ(compile_result.tool_results.size(), 1u);
  EXPECT_TRUE(compile_result.tool_results[0].is_error);
  EXPECT_NE(compile_result.tool_results[0].content.find("kernels/scale_relu.cu(4)"),
            std::string::npos)
      << compile_result.tool_results[0].content;
  EXPECT_NE(compile_result.tool_results[0].content.find("\"zero\" is undefined"),
            std::string::npos);
  const Turn& fixed = e.turns[7];
  ASSERT_EQ(fixed.tool_results.size(), 2u);
  EXPECT_FALSE(fixed.tool_results[1].is_error) << fixed.tool_results[1].content;
  EXPECT_NE(fixed.tool_results[1].content.find("scale_relu_launch"), std::string::npos);
  EXPECT_NE(fixed.tool_results[1].content.find("regs"), std::string::npos);
  EXPECT_EQ(fixed.tool_results[1].content.find("sandbox:"), std::string::npos);
  EXPECT_EQ(e.turns[9].tool_results[1].content, "5/5 input sets correct");
  EXPECT_TRUE(e.turns[11].tool_results[0].is_error);
  ASSERT_EQ(bench.calls.size(), 3u);  // verify, benchmark, final
  EXPECT_TRUE(bench.calls.back().second);
  EXPECT_EQ(e.turns.back().tool_results[0].call_id, "final_evaluation");

  // The trajectory keeps the sampled tokens exactly, and survives the wire codec byte for byte.
  const Turn& first = e.turns[2];
  EXPECT_EQ(first.token_ids, (std::vector<std::uint32_t>{11, 12, 13}));
  EXPECT_EQ(first.loss_mask, (std::vector<std::uint8_t>{1, 1, 1}));
  EXPECT_EQ(first.tool_calls[0].call_id, "call_0_0");
  auto decoded = decode_episode(encode_episode(e));
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  EXPECT_EQ(encode_episode(*decoded), encode_episode(e));
  EXPECT_EQ(decoded->turns[2].logprobs, first.logprobs);
}

TEST_F(EpisodeTest, TurnBudgetTruncatesAndTheFinalEvaluationStillDecides) {
  std::string t;
  for (int i = 0; i < 5; ++i) t += assistant({call("list_files", json::object())});
  auto policy = ReplayPolicy::parse(t, "t");
  ScriptedBench bench;
  FarmEvaluationTools tools(*client_, {}, bench.evaluator());
  EpisodeSpec s = spec(policy->get(), &tools);
  s.budgets.max_turns = 3;
  Episode e = run_episode(s);
  EXPECT_EQ(e.status, EpisodeStatus::kTruncated);
  EXPECT_EQ(e.counters.turns, 3u);
  EXPECT_EQ(e.counters.wasted_loops, 2u) << "list_files three times with nothing changed";
  EXPECT_EQ(e.final_reward, -1) << "no model_new.py";
  EXPECT_NE(e.turns.back().tool_results[0].content.find("no model_new.py"), std::string::npos);
  EXPECT_TRUE(bench.calls.empty());
}

TEST_F(EpisodeTest, APolicyFailureAbortsWithoutReward) {
  auto policy = ReplayPolicy::parse(assistant({call("list_files", json::object())}), "short");
  ScriptedBench bench;
  FarmEvaluationTools tools(*client_, {}, bench.evaluator());
  Episode e = run_episode(spec(policy->get(), &tools));
  EXPECT_EQ(e.status, EpisodeStatus::kAborted);
  EXPECT_EQ(e.final_reward, 0);
  EXPECT_NE(e.turns.back().tool_results[0].content.find("policy.replay_exhausted"),
            std::string::npos);
}

TEST_F(EpisodeTest, NoCallAndUnknownToolsAreAnsweredAndCounted) {
  std::string t = R"({"role": "assistant", "content": "I think I will write a kernel."})"
                  "\n";
  t += assistant({call("rm_rf", json::object()), call("write_file", {{"path", "a.cu"}})});
  t += assistant({call("finish", json::object())});
  auto policy = ReplayPolicy::parse(t, "t");
  FarmEvaluationTools tools(*client_, {}, nullptr);
  Episode e = run_episode(spec(policy->get(), &tools));
  EXPECT_EQ(e.counters.invalid_tool_calls, 3u);  // no call; unknown tool; missing content
  EXPECT_NE(e.turns[3].tool_results[0].content.find("no tool was called"), std::string::npos);
  EXPECT_NE(e.turns[5].tool_results[0].content.find("there is no tool 'rm_rf'"), std::string::npos);
  EXPECT_EQ(e.status, EpisodeStatus::kCompleted);
}

// Found on the H100 (issue 25's demo): the server refused a turn whose prompt + max_tokens passed
// its context, and the episode ended aborted, which evaluation then scored 0 instead of a failure.
// Now each turn asks for no more than the context has room for, and a refusal for the context
// ends the episode truncated, with its workspace evaluated like one out of turns.
TEST_F(EpisodeTest, AFullContextEndsTheEpisodeTruncatedNotAborted) {
  auto replay = ReplayPolicy::parse(transcript(), "transcript");
  ASSERT_TRUE(replay) << replay.error().to_string();
  struct ContextPolicy final : PolicyBackend {
    PolicyBackend* inner = nullptr;
    std::vector<std::int64_t> asked;  // max_new_tokens of each call
    Expected<PolicyTurn> next(const PolicyRequest& r) override {
      asked.push_back(r.max_new_tokens);
      if (asked.size() == 3)
        return make_error(ErrorCategory::kInvalidInput, std::string(kPolicyContextLimit),
                          "prompt 4000 tokens + max_tokens 512 = 4512 exceeds the context limit");
      return inner->next(r);
    }
    std::string describe() const override { return "context"; }
  } policy;
  policy.inner = replay->get();
  CompileOnlyTools tools(*client_, {});
  EpisodeSpec s = spec(&policy, &tools);
  s.max_new_tokens_per_turn = 1'000'000;
  s.budgets.max_context_tokens = 20'000;
  Episode e = run_episode(s);
  EXPECT_EQ(e.status, EpisodeStatus::kTruncated);
  ASSERT_EQ(policy.asked.size(), 3u);
  EXPECT_LE(policy.asked[0], 20'000) << "a turn asks for no more than the context's room";
  EXPECT_LT(policy.asked[1], policy.asked[0]) << "the room shrinks as the context grows";
  EXPECT_EQ(e.turns.back().tool_results[0].call_id, "final_evaluation")
      << "the workspace is scored";
  EXPECT_EQ(e.final_reward, -1) << "nothing was built yet at the second turn";
}

// Found by the second demo run: after a reply whose usage the backend reported, the room left
// ignored the tool answers added since, so the next turn asked for 100-150 tokens more than the
// server had room for and was refused. They are now counted (two bytes a token, 8 a message).
TEST_F(EpisodeTest, TheRoomLeftCountsTheToolAnswersAfterTheLastReportedUsage) {
  auto replay = ReplayPolicy::parse(transcript(), "transcript");
  ASSERT_TRUE(replay) << replay.error().to_string();
  struct Reporting final : PolicyBackend {
    PolicyBackend* inner = nullptr;
    std::vector<std::int64_t> asked;
    Expected<PolicyTurn> next(const PolicyRequest& r) override {
      asked.push_back(r.max_new_tokens);
      auto turn = inner->next(r);
      if (turn) {
        turn->prompt_tokens = 50'000;
        turn->completion_tokens = 100;
      }
      return turn;
    }
    std::string describe() const override { return "reporting"; }
  } policy;
  policy.inner = replay->get();
  CompileOnlyTools tools(*client_, {});
  EpisodeSpec s = spec(&policy, &tools);
  s.max_new_tokens_per_turn = 1'000'000;
  s.budgets.max_context_tokens = 100'000;
  Episode e = run_episode(s);
  ASSERT_GE(policy.asked.size(), 2u);
  // The first tool turn after the first reply: its answers are what was added since.
  std::size_t first_reply = 0;
  while (e.turns[first_reply].role != TurnRole::kAssistant) ++first_reply;
  std::int64_t since = 0;
  for (const auto& r : e.turns[first_reply + 1].tool_results)
    since += static_cast<std::int64_t>(r.content.size()) / 2 + 8;
  EXPECT_EQ(policy.asked[1], 100'000 - 50'100 - since);
}

// The compile-only reward: the recorded episode's final workspace builds, so +1; the agent's
// verify and benchmark calls get the plain answer; the final report says what was measured.
TEST_F(EpisodeTest, CompileOnlyRewardIsPlusOneForAWorkspaceThatBuilds) {
  auto policy = ReplayPolicy::parse(transcript(), "transcript");
  ASSERT_TRUE(policy) << policy.error().to_string();
  CompileOnlyTools tools(*client_, {});
  EvaluationOutcome final_outcome;
  Episode e = run_episode(spec(policy->get(), &tools), &final_outcome);
  EXPECT_EQ(e.status, EpisodeStatus::kCompleted);
  EXPECT_EQ(e.final_reward, 1);
  EXPECT_FALSE(final_outcome.correct) << "nothing was verified";
  EXPECT_EQ(final_outcome.speedup_vs_eager, 0);
  EXPECT_EQ(e.turns[9].tool_results[1].content, kCompileOnlyAnswer);   // verify
  EXPECT_EQ(e.turns[13].tool_results[0].content, kCompileOnlyAnswer);  // benchmark
  const std::string& report = e.turns.back().tool_results[0].content;
  EXPECT_EQ(report.rfind(kCompileOnlyRewardNote, 0), 0u) << report;
  EXPECT_NE(report.find("reward +1"), std::string::npos) << report;
}

// A kernel that breaks the farm's source policy (a process call) does not build: -1, and the
// report still says the reward is compile-only.
TEST_F(EpisodeTest, CompileOnlyRewardIsMinusOneForAWorkspaceThePolicyRefuses) {
  const std::string bad = R"(#include <cuda_runtime.h>
#include <cstdlib>
__global__ void scale_relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(2.f * x[i], 0.f);
}
extern "C" void scale_relu_launch(const float* x, float* y, long long n, cudaStream_t s) {
  system("touch /tmp/pwned");
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)";
  std::string t =
      assistant({call("write_file", {{"path", "kernels/scale_relu.cu"}, {"content", bad}}),
                 call("write_file", {{"path", "model_new.py"}, {"content", kModelNew}})});
  t += assistant({call("finish", json::object())});
  auto policy = ReplayPolicy::parse(t, "t");
  ASSERT_TRUE(policy) << policy.error().to_string();
  CompileOnlyTools tools(*client_, {});
  Episode e = run_episode(spec(policy->get(), &tools));
  EXPECT_EQ(e.status, EpisodeStatus::kCompleted);
  EXPECT_EQ(e.final_reward, -1);
  const std::string& report = e.turns.back().tool_results[0].content;
  EXPECT_EQ(report.rfind(kCompileOnlyRewardNote, 0), 0u) << report;
  EXPECT_NE(report.find("does not build"), std::string::npos) << report;
  EXPECT_NE(report.find("system"), std::string::npos) << report;
}

}  // namespace
}  // namespace cuda_agent
