#include "messages/trajectory_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::with_format_version;

void expect_turn_eq(const Turn& a, const Turn& b) {
  EXPECT_EQ(a.role, b.role);
  EXPECT_EQ(a.token_ids, b.token_ids);
  EXPECT_EQ(a.logprobs, b.logprobs);  // bit-exact: floats are copied, not recomputed
  EXPECT_EQ(a.loss_mask, b.loss_mask);
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size());
  for (std::size_t i = 0; i < a.tool_calls.size(); ++i) {
    EXPECT_EQ(a.tool_calls[i].call_id, b.tool_calls[i].call_id);
    EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name);
    EXPECT_EQ(a.tool_calls[i].arguments_json, b.tool_calls[i].arguments_json);
  }
  ASSERT_EQ(a.tool_results.size(), b.tool_results.size());
  for (std::size_t i = 0; i < a.tool_results.size(); ++i) {
    EXPECT_EQ(a.tool_results[i].call_id, b.tool_results[i].call_id);
    EXPECT_EQ(a.tool_results[i].content, b.tool_results[i].content);
    EXPECT_EQ(a.tool_results[i].is_error, b.tool_results[i].is_error);
  }
  EXPECT_EQ(a.policy_version, b.policy_version);
  EXPECT_EQ(a.wall_ms, b.wall_ms);
}

TEST(TrajectoryCodec, ThreeTurnsOfTwoThousandTokensRoundTrip) {
  Episode in = wire_samples::episode(3, 2000);
  in.turns[2].tool_calls[0].arguments_json = "{\"path\": \"kernels/\u00e9.cu\"}";  // UTF-8
  const std::string bytes = encode_episode(in);
  auto out = decode_episode(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->episode_id, EpisodeId{"ep-000123"});
  EXPECT_EQ(out->run_id, in.run_id);
  EXPECT_EQ(out->task_id, TaskId{"kernelbench/level2/19"});
  EXPECT_EQ(out->stage, EpisodeStage::kAgenticPpo);
  EXPECT_EQ(out->status, EpisodeStatus::kTruncated);
  EXPECT_DOUBLE_EQ(out->final_reward, 2.0);
  EXPECT_EQ(out->counters.turns, in.counters.turns);
  EXPECT_EQ(out->counters.invalid_tool_calls, 1u);
  EXPECT_EQ(out->counters.tokens, 2000u);
  EXPECT_EQ(out->counters.wasted_loops, 0u);
  EXPECT_EQ(out->ended_unix_ms, in.ended_unix_ms);
  ASSERT_EQ(out->turns.size(), 3u);
  EXPECT_EQ(out->turns[2].role, TurnRole::kAssistant);
  EXPECT_EQ(out->turns[2].logprobs.size(), out->turns[2].token_ids.size());
  EXPECT_TRUE(out->turns[0].logprobs.empty());
  for (std::size_t t = 0; t < 3; ++t) expect_turn_eq(out->turns[t], in.turns[t]);
  EXPECT_EQ(encode_episode(*out), bytes);
}

TEST(TrajectoryCodec, AFullContextEpisodeRoundTrips) {
  // 200 turns and 131072 tokens: the default budgets of DESIGN.md section 6.
  const Episode in = wire_samples::episode(200, 131'072, 7);
  const std::string bytes = encode_episode(in);
  EXPECT_LT(bytes.size(), 2u << 20);
  auto out = decode_episode(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_EQ(out->turns.size(), 200u);
  for (std::size_t t = 0; t < 200; ++t) expect_turn_eq(out->turns[t], in.turns[t]);
}

TEST(TrajectoryCodec, EmptyAndExtremeValuesRoundTrip) {
  auto empty = decode_episode(encode_episode(Episode{}));
  ASSERT_TRUE(empty) << empty.error().to_string();
  EXPECT_TRUE(empty->turns.empty());
  EXPECT_EQ(empty->stage, EpisodeStage::kEvaluation);
  EXPECT_EQ(empty->status, EpisodeStatus::kCompleted);

  Episode e;
  e.final_reward = -std::numeric_limits<double>::max();
  e.counters = {0xffffffffu, 0xffffffffu, std::numeric_limits<std::uint64_t>::max(), 0xffffffffu};
  Turn turn;  // one token of every extreme
  turn.role = TurnRole::kAssistant;
  turn.token_ids = {0, std::numeric_limits<std::uint32_t>::max()};
  turn.logprobs = {-std::numeric_limits<float>::infinity(), 0.f};
  turn.loss_mask = {1, 255};
  turn.policy_version = PolicyVersion{std::numeric_limits<std::uint64_t>::max()};
  turn.wall_ms = std::numeric_limits<std::uint64_t>::max();
  e.turns = {Turn{}, turn};
  auto out = decode_episode(encode_episode(e));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->final_reward, e.final_reward);
  EXPECT_EQ(out->counters.tokens, std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(out->turns[0].token_ids.empty());
  expect_turn_eq(out->turns[1], turn);
}

TEST(TrajectoryCodec, StageAndStatusNumbersThisBuildDoesNotNameSurvive) {
  Episode e = wire_samples::episode(3, 30);
  e.stage = static_cast<EpisodeStage>(9);
  e.status = static_cast<EpisodeStatus>(7);
  e.turns[1].role = static_cast<TurnRole>(12);
  auto out = decode_episode(encode_episode(e));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(static_cast<int>(out->stage), 9);
  EXPECT_EQ(static_cast<int>(out->status), 7);
  EXPECT_EQ(out->turns[1].role, TurnRole::kUnknown);  // roles: kUnknown, as documented
}

TEST(TrajectoryCodec, RejectsATurnWhoseMaskOrLogprobsDoNotMatchItsTokens) {
  Episode e = wire_samples::episode(3, 30);
  e.turns[2].loss_mask.pop_back();
  auto r = decode_episode(encode_episode(e));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput);
  EXPECT_EQ(r.error().code, "wire.malformed");
  EXPECT_NE(r.error().message.find("turn 2"), std::string::npos) << r.error().message;

  e = wire_samples::episode(3, 30);
  e.turns[2].logprobs.push_back(-1.f);
  EXPECT_EQ(decode_episode(encode_episode(e)).error().code, "wire.malformed");
}

TEST(TrajectoryCodec, RejectsANewerFormatVersionAndAnotherMessageType) {
  const std::string bytes = encode_episode(wire_samples::episode(3, 30));
  EXPECT_TRUE(decode_episode(with_format_version(bytes, false, 1)));
  EXPECT_EQ(decode_episode(with_format_version(bytes, false, 2)).error().code, "wire.version");
  EXPECT_EQ(decode_episode(encode_error(make_error(ErrorCategory::kIo, "a", "b"))).error().code,
            "wire.wrong_type");
}

TEST(TrajectoryCodec, DecodeLimitsApply) {
  const std::string bytes = encode_episode(wire_samples::episode(3, 2000));
  EXPECT_EQ(decode_episode(bytes, {.max_bytes = 1024}).error().code, "wire.too_large");
  // A traversal limit below the message's size stops the read with a typed error.
  auto r = decode_episode(bytes, {.traversal_words = 64});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "wire.malformed");
}

}  // namespace
}  // namespace cuda_agent
