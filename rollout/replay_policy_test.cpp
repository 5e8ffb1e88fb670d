// Transcript replay: assistant turns in order, recorded observations skipped, token ids and
// logprobs carried, text tool calls parsed, malformed transcripts named by file and line.
#include "rollout/replay_policy.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

const char* kTranscript = R"({"role": "system", "content": "You write CUDA."}
{"role": "user", "content": "Make relu fast."}
{"role": "assistant", "content": "", "tool_calls": [{"name": "write_file", "arguments": {"path": "kernels/k.cu"}}], "token_ids": [5, 6, 7], "logprobs": [-0.1, -0.2, -0.3]}
{"role": "tool", "content": "wrote kernels/k.cu"}

{"role": "assistant", "content": "Compile.\n<tool_call>\n{\"name\": \"compile\", \"arguments\": {}}\n</tool_call>"}
{"role": "assistant", "tool_calls": [{"name": "finish", "arguments": "{broken"}]}
)";

TEST(ReplayPolicy, PlaysAssistantTurnsInOrderThenRefuses) {
  auto p = ReplayPolicy::parse(kTranscript, "episode.jsonl");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ((*p)->turns(), 3u);
  auto t1 = (*p)->next({});
  ASSERT_TRUE(t1);
  ASSERT_EQ(t1->tool_calls.size(), 1u);
  EXPECT_EQ(t1->tool_calls[0].arguments_json, R"({"path":"kernels/k.cu"})");
  EXPECT_EQ(t1->token_ids, (std::vector<std::int32_t>{5, 6, 7}));
  ASSERT_EQ(t1->logprobs.size(), 3u);
  EXPECT_FLOAT_EQ(t1->logprobs[2], -0.3f);
  EXPECT_EQ(t1->finish_reason, "tool_calls");

  auto t2 = (*p)->next({});
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->content, "Compile.");
  ASSERT_EQ(t2->tool_calls.size(), 1u);
  EXPECT_EQ(t2->tool_calls[0].name, "compile");

  auto t3 = (*p)->next({});
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->tool_calls[0].arguments_json, "{broken") << "kept as recorded";

  auto t4 = (*p)->next({});
  ASSERT_FALSE(t4);
  EXPECT_EQ(t4.error().code, "policy.replay_exhausted");
  EXPECT_NE(t4.error().message.find("has 3 assistant turns; turn 4"), std::string::npos);
}

TEST(ReplayPolicy, MalformedTranscriptsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* where;
  };
  for (const Case& c : {
           Case{"{\"role\": \"user\"}\nnot json\n", "t.jsonl:2: not a JSON object"},
           Case{"{\"content\": \"x\"}\n", "t.jsonl:1: \"role\""},
           Case{"{\"role\": \"assistant\", \"tool_calls\": {}}\n", "t.jsonl:1: \"tool_calls\""},
           Case{"{\"role\": \"assistant\", \"tool_calls\": [{\"arguments\": {}}]}\n",
                "t.jsonl:1: a tool call without"},
           Case{"{\"role\": \"assistant\", \"token_ids\": [1, 2], \"logprobs\": [0.1]}\n",
                "t.jsonl:1: \"logprobs\" and \"token_ids\""},
           Case{"{\"role\": \"user\", \"content\": \"only a prompt\"}\n", "no assistant turns"},
       }) {
    auto p = ReplayPolicy::parse(c.text, "t.jsonl");
    ASSERT_FALSE(p) << c.text;
    EXPECT_EQ(p.error().code, "policy.transcript");
    EXPECT_NE(p.error().message.find(c.where), std::string::npos) << p.error().to_string();
  }
  auto missing = ReplayPolicy::load("/nonexistent/transcript.jsonl");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().category, ErrorCategory::kNotFound);
}

}  // namespace
}  // namespace cuda_agent
