// Chat rendering against Qwen2.5's template output, the tool-call parser, and conversations that
// append without re-tokenizing.
#include "model/chat_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/conversation.h"
#include "model/tiny_tokenizer.h"

namespace cuda_agent {
namespace {

ChatFormat make_format(ChatFormatOptions options = {}) {
  Expected<std::string> json = tiny_tokenizer_json();
  EXPECT_TRUE(json);
  Expected<Tokenizer> tok = Tokenizer::from_json(*json, "tiny");
  EXPECT_TRUE(tok) << tok.error().to_string();
  Expected<ChatFormat> f =
      ChatFormat::create(std::make_shared<const Tokenizer>(*tok), std::move(options));
  EXPECT_TRUE(f) << f.error().to_string();
  return std::move(f).value();
}

TEST(ChatFormatTest, RendersAssistantToolCallsAsQwen25) {
  // What apply_chat_template gives for Qwen2.5 with these messages (no tools, no system).
  ChatFormat f = make_format();
  std::vector<ChatMessage> messages = {
      {ChatRole::kAssistant,
       "THIS IS CONTENT",
       {{"get_current_temperature", R"({"location":"Paris, France","unit":"celsius"})"}}}};
  Expected<std::string> text = f.render(messages, {}, false);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>assistant\nTHIS IS CONTENT\n<tool_call>\n{\"name\": "
            "\"get_current_temperature\", \"arguments\": {\"location\": \"Paris, France\", "
            "\"unit\": \"celsius\"}}\n</tool_call><|im_end|>\n");
}

TEST(ChatFormatTest, RendersToolsBlockAndMergesToolResults) {
  ChatFormat f = make_format();
  std::vector<std::string> tools = {
      R"({"type":"function","function":{"name":"compile","parameters":{"type":"object"}}})"};
  std::vector<ChatMessage> messages = {
      {ChatRole::kSystem, "Write CUDA."},
      {ChatRole::kUser, "Make relu fast."},
      {ChatRole::kAssistant, "", {{"compile", "{}"}, {"benchmark", R"({"n":3})"}}},
      {ChatRole::kTool, "ok"},
      {ChatRole::kTool, "1.3x"},
  };
  Expected<std::string> text = f.render(messages, tools, true);
  ASSERT_TRUE(text);
  EXPECT_EQ(
      *text,
      "<|im_start|>system\nWrite CUDA.\n\n# Tools\n\nYou may call one or more functions to assist "
      "with the user query.\n\nYou are provided with function signatures within <tools></tools> "
      "XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"compile\", "
      "\"parameters\": {\"type\": \"object\"}}}\n</tools>\n\nFor each function call, return a "
      "json object with function name and arguments within <tool_call></tool_call> XML "
      "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nMake relu fast.<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"compile\", \"arguments\": "
      "{}}\n</tool_call>\n<tool_call>\n{\"name\": \"benchmark\", \"arguments\": {\"n\": "
      "3}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\nok\n</tool_response>\n<tool_response>\n1.3x\n"
      "</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n");
  EXPECT_FALSE(f.render_system("", std::vector<std::string>{"[1]"}));
  // An explicit empty system message stays empty; no system message takes the default.
  EXPECT_EQ(*f.render_system("", {}), "<|im_start|>system\n<|im_end|>\n");
  EXPECT_EQ(*f.render_system(std::nullopt, {}),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n");
}

TEST(ChatFormatTest, PythonJsonDumpsKeepsOrderAndUnicode) {
  EXPECT_EQ(*python_json_dumps(R"({"b":[1,2.5,{"é":"ü\n"}],"a":null,"c":true})"),
            "{\"b\": [1, 2.5, {\"é\": \"ü\\n\"}], \"a\": null, \"c\": true}");
  EXPECT_FALSE(python_json_dumps("{oops"));
}

TEST(ChatFormatTest, ParsesToolCallsAndReportsMalformedOnes) {
  ParsedAssistant p = parse_assistant(
      "I will compile first.\n<tool_call>\n{\"name\": \"compile\", \"arguments\": "
      "{\"path\": \"k.cu\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"verify\", \"arguments\": "
      "\"{\\\"seed\\\": 1}\"}\n</tool_call>");
  EXPECT_EQ(p.content, "I will compile first.");
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].name, "compile");
  EXPECT_EQ(p.tool_calls[0].arguments_json, R"({"path":"k.cu"})");
  EXPECT_EQ(p.tool_calls[1].arguments_json, R"({"seed":1})");  // arguments given as a string
  EXPECT_TRUE(p.problems.empty());

  p = parse_assistant(
      "<tool_call>{\"name\": \"a\", \"arguments\": {}</tool_call>"    // malformed JSON
      "<tool_call>{\"arguments\": {}}</tool_call>"                    // no name
      "<tool_call>{\"name\": \"b\", \"arguments\": [1]}</tool_call>"  // arguments not an object
      "<tool_call>[]</tool_call>"                                     // not an object
      "<tool_call>{\"name\": \"ok\", \"arguments\": {}}</tool_call>"
      "tail <tool_call>{\"name\": \"c\"");  // unterminated
  ASSERT_EQ(p.problems.size(), 5u);
  EXPECT_EQ(p.problems[0].kind, ToolCallProblemKind::kMalformedJson);
  EXPECT_EQ(p.problems[0].offset, 0u);
  EXPECT_EQ(p.problems[1].kind, ToolCallProblemKind::kMissingName);
  EXPECT_EQ(p.problems[2].kind, ToolCallProblemKind::kBadArguments);
  EXPECT_EQ(p.problems[3].kind, ToolCallProblemKind::kMalformedJson);
  EXPECT_EQ(p.problems[4].kind, ToolCallProblemKind::kUnterminated);
  EXPECT_THAT(p.problems[4].message, ::testing::HasSubstr("has no </tool_call>"));
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "ok");
  EXPECT_EQ(p.content, "tail");
  EXPECT_TRUE(parse_assistant("").tool_calls.empty());

  // Qwen3 reasoning: a tool call inside <think> does not count; offsets stay absolute.
  p = parse_assistant(
      "<think>\nmaybe <tool_call>{\"name\": \"x\"}</tool_call>?\n</think>\n\nOK "
      "<tool_call>{\"name\": \"compile\", \"arguments\": {}}</tool_call> <tool_call>{}");
  EXPECT_EQ(p.reasoning, "maybe <tool_call>{\"name\": \"x\"}</tool_call>?");
  EXPECT_EQ(p.content, "OK");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "compile");
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].offset, 125u);
  EXPECT_EQ(parse_assistant("thinking without the open tag</think>done").reasoning,
            "thinking without the open tag");
  p = parse_assistant("<think>still thinking <tool_call>{\"name\": \"x\", \"arguments\": {}}");
  EXPECT_EQ(p.reasoning, "still thinking <tool_call>{\"name\": \"x\", \"arguments\": {}}");
  EXPECT_TRUE(p.tool_calls.empty() && p.problems.empty() && p.content.empty());
}

TEST(ConversationTest, PiecesEncodeLikeTheWholeRenderedText) {
  ChatFormat f = make_format();
  std::vector<std::string> tools = {R"({"name":"compile"})"};
  std::vector<ChatMessage> messages = {
      {ChatRole::kSystem, "Write CUDA kernels."},
      {ChatRole::kUser, "Make   relu\n\nfast, 你好 🚀"},
      {ChatRole::kAssistant, "Sure.", {{"compile", R"({"path":"k.cu"})"}}},
      {ChatRole::kTool, "{\"ok\": true}\n\n"},
  };
  Expected<Conversation> c = Conversation::start(f, messages[0].content, tools);
  ASSERT_TRUE(c) << c.error().to_string();
  ASSERT_TRUE(c->append_message(messages[1]));
  ASSERT_TRUE(c->append_message(messages[2]));
  ASSERT_TRUE(c->append_tool_results(std::vector<std::string>{messages[3].content}));
  ASSERT_TRUE(c->append_generation_prompt());
  Expected<std::string> whole = f.render(messages, tools, true);
  ASSERT_TRUE(whole);
  EXPECT_EQ(c->ids(), *f.tokenizer().encode(*whole));
  EXPECT_EQ(c->turns().size(), 5u);
  EXPECT_EQ(std::count(c->loss_mask().begin(), c->loss_mask().end(), 1), 0);
  EXPECT_EQ(c->turns().back().end, c->ids().size());
}

TEST(ConversationTest, SampledTokensAreKeptVerbatim) {
  ChatFormat f = make_format();
  const Tokenizer& tok = f.tokenizer();
  Expected<Conversation> c = Conversation::start(f, "sys", {});
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->append_message({ChatRole::kUser, "hi"}));
  EXPECT_FALSE(c->append_sampled(std::vector<TokenId>{'a'}));  // no open turn
  ASSERT_TRUE(c->append_generation_prompt());
  EXPECT_FALSE(c->append_message({ChatRole::kUser, "interrupt"}));  // turn open

  // " kernel" one byte at a time: encoding the text would merge it, the sampled ids stay.
  std::vector<TokenId> sampled;
  for (char ch : std::string(" kernel")) sampled.push_back(static_cast<unsigned char>(ch));
  ASSERT_NE(*tok.encode(" kernel"), sampled);
  std::size_t before = c->ids().size();
  ASSERT_TRUE(c->append_sampled(std::span(sampled).first(3)));  // streamed in two parts
  std::vector<TokenId> rest(sampled.begin() + 3, sampled.end());
  rest.push_back(f.im_end());
  std::vector<TokenId> bad = {f.im_end(), 'x'};
  EXPECT_FALSE(c->append_sampled(bad));
  ASSERT_TRUE(c->append_sampled(rest));
  EXPECT_FALSE(c->turn_open());

  const ConversationTurn& t = c->turns().back();
  EXPECT_EQ(t.sampled_begin, before);
  EXPECT_EQ(t.sampled_end, before + sampled.size() + 1);
  std::vector<TokenId> got(c->ids().begin() + before, c->ids().begin() + t.sampled_end);
  sampled.push_back(f.im_end());
  EXPECT_EQ(got, sampled);
  for (std::size_t i = 0; i < c->ids().size(); ++i)
    EXPECT_EQ(c->loss_mask()[i], i >= t.sampled_begin && i < t.sampled_end) << i;
  EXPECT_EQ(*c->sampled_text(c->turns().size() - 1), " kernel");
  // The closing "\n" follows, and the next message starts after it.
  EXPECT_EQ(*tok.decode(std::span(c->ids()).subspan(t.sampled_end)), "\n");
  ASSERT_TRUE(c->append_message({ChatRole::kUser, "next"}));
  EXPECT_EQ(*tok.decode(std::span(c->ids()).subspan(t.sampled_end)),
            "\n<|im_start|>user\nnext<|im_end|>\n");
}

TEST(ConversationTest, TruncatedTurnIsClosedWithUnmaskedEnd) {
  ChatFormat f = make_format({.default_system_prompt = ""});
  Expected<Conversation> c = Conversation::start(f, std::nullopt, {});
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ids().empty());  // no system prompt, no tools: no system turn (Qwen3)
  ASSERT_TRUE(c->append_generation_prompt());
  ASSERT_TRUE(c->append_sampled(std::vector<TokenId>{'a', 'b'}));
  ASSERT_TRUE(c->close_truncated_turn());
  EXPECT_EQ(*f.tokenizer().decode(c->ids()), "<|im_start|>assistant\nab<|im_end|>\n");
  EXPECT_EQ(std::count(c->loss_mask().begin(), c->loss_mask().end(), 1), 2);
  EXPECT_FALSE(c->append_sampled(std::vector<TokenId>{99999999}));
}

}  // namespace
}  // namespace cuda_agent
