// Corpus transcripts -> training sequences. The main check: a transcript gives the very ids an
// episode (rollout/episode.cpp) stores when its policy is an engine that renders and samples as
// cuda-agent-engine does (model/engine_server.cpp: the whole prompt rendered on the first turn,
// then the ids so far plus render_continuation); then the loss mask, the round trip of tool
// calls, refusals naming file and line, the split filter and the reward choice.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "learner/corpus_sequences.h"
#include "model/tiny_tokenizer.h"
#include "rollout/agent_tools.h"
#include "rollout/episode.h"

namespace cuda_agent {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

ChatFormat tiny_format() {
  Expected<std::string> text = tiny_tokenizer_json();
  EXPECT_TRUE(text) << text.error().to_string();
  Expected<Tokenizer> tok = Tokenizer::from_json(*text, "tiny");
  EXPECT_TRUE(tok) << tok.error().to_string();
  Expected<ChatFormat> f = ChatFormat::create(std::make_shared<const Tokenizer>(std::move(*tok)));
  EXPECT_TRUE(f) << f.error().to_string();
  return std::move(f).value();
}

std::vector<TokenId> encode(const ChatFormat& f, const std::string& text) {
  Expected<std::vector<TokenId>> ids = f.tokenizer().encode(text);
  EXPECT_TRUE(ids) << ids.error().to_string();
  return ids ? *ids : std::vector<TokenId>{};
}

// The tools as the OpenAI client sends them (rollout/openai_policy.cpp): "type" before
// "function", "name" before "parameters"; the engine re-orders the keys.
ordered tool_objects() {
  ordered tools = ordered::array();
  for (const PolicyTool& t : agent_tools()) {
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", t.name},
                       {"description", t.description},
                       {"parameters", ordered::parse(t.parameters_json)}}}});
  }
  return tools;
}

// An engine as far as token ids go: renders the prompt as cuda-agent-engine does and "samples"
// the scripted text (its ids, then <|im_end|>).
class EngineLikePolicy final : public PolicyBackend {
 public:
  EngineLikePolicy(const ChatFormat& format, std::vector<std::string> replies)
      : format_(format), replies_(std::move(replies)) {}

  Expected<PolicyTurn> next(const PolicyRequest& request) override {
    if (turn_ >= replies_.size())
      return make_error(ErrorCategory::kNotFound, "test.done", "no more replies");
    std::vector<std::string> tools;  // engine_server.cpp read_tools: json (sorted keys) dumped
    for (const PolicyTool& t : request.tools) {
      tools.push_back(json{{"type", "function"},
                           {"function",
                            {{"name", t.name},
                             {"description", t.description},
                             {"parameters", json::parse(t.parameters_json)}}}}
                          .dump());
    }
    std::vector<std::int32_t> prompt;
    if (request.context_token_ids.empty()) {
      Expected<std::string> text = format_.render(request.messages, tools, true);
      if (!text) return text.error();
      for (TokenId id : encode(format_, *text)) prompt.push_back(id);
    } else {
      std::size_t after = request.messages.size();
      while (after > 0 && request.messages[after - 1].role != ChatRole::kAssistant) --after;
      prompt = request.context_token_ids;
      const std::string text = format_.render_continuation(
          std::span(request.messages).subspan(after),
          request.context_token_ids.back() == std::int32_t(format_.im_end()), true);
      for (TokenId id : encode(format_, text)) prompt.push_back(id);
    }
    const std::string& reply = replies_[turn_++];
    PolicyTurn out;
    for (TokenId id : encode(format_, reply)) out.token_ids.push_back(id);
    out.token_ids.push_back(std::int32_t(format_.im_end()));
    out.logprobs.assign(out.token_ids.size(), -0.5f);
    out.prompt_token_ids = std::move(prompt);
    ParsedAssistant parsed = parse_assistant(reply);
    out.content = parsed.content;
    out.tool_calls = parsed.tool_calls;
    out.finish_reason = "stop";
    return out;
  }
  std::string describe() const override { return "engine-like"; }

 private:
  const ChatFormat& format_;
  std::vector<std::string> replies_;
  std::size_t turn_ = 0;
};

class NoGpuTools final : public EvaluationTools {
 public:
  Expected<CompileResult> compile(const std::vector<SourceFile>&) override {
    return CompileResult{};
  }
  Expected<EvaluationOutcome> evaluate(BenchMode, const std::string&,
                                       const std::vector<SourceFile>&, const CompileResult&,
                                       bool final_evaluation) override {
    return EvaluationOutcome{.report = final_evaluation ? "final: correct" : "5/5 correct",
                             .correct = true,
                             .reward_tier = 3};
  }
};

const char* const kModelPy =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n";

// What the model "writes": prose and a call; two calls in one turn; a lone call.
const std::vector<std::string> kReplies = {
    "I will write the kernel first.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": "
    "{\"path\": \"kernels/k.cu\", \"content\": \"__global__ void k(float* y) { y[0] = 0.0f; "
    "}\\n\"}}"
    "\n</tool_call>",
    "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"model_new.py\", "
    "\"content\": \"class ModelNew: pass\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"verify\", "
    "\"arguments\": {}}\n</tool_call>",
    "<tool_call>\n{\"name\": \"finish\", \"arguments\": {}}\n</tool_call>",
};

// The corpus line for an episode: its task prompt, each model turn's reply as content and tool
// calls, each tool turn's results as tool messages.
std::string corpus_line_for(const Episode& e, const std::string& system) {
  ordered messages = ordered::array();
  messages.push_back({{"role", "user"}, {"content", task_prompt(kModelPy)}});
  std::size_t reply = 0;
  for (const Turn& t : e.turns) {
    if (t.role == TurnRole::kAssistant) {
      ParsedAssistant parsed = parse_assistant(kReplies.at(reply++));
      ordered calls = ordered::array();
      for (const ChatToolCall& c : parsed.tool_calls)
        calls.push_back({{"name", c.name}, {"arguments", ordered::parse(c.arguments_json)}});
      messages.push_back(
          {{"role", "assistant"}, {"content", parsed.content}, {"tool_calls", calls}});
    } else if (t.role == TurnRole::kTool) {
      for (const ToolResult& r : t.tool_results)
        messages.push_back({{"role", "tool"}, {"content", r.content}});
    }
  }
  ordered line = {{"format", "cuda-agent-corpus"},
                  {"version", 1},
                  {"task", "relu"},
                  {"expected_tier", 3},
                  {"expected_compile_only", 1},
                  {"split", "train"},
                  {"system", system},
                  {"tools", tool_objects()},
                  {"messages", messages}};
  return line.dump();
}

TEST(CorpusSequencesTest, SameIdsAsAnEpisodeThroughAnEngine) {
  const ChatFormat format = tiny_format();
  EngineLikePolicy policy(format, kReplies);
  NoGpuTools tools;
  const std::string system(agent_skill_document());
  Episode e = run_episode({.episode_id = EpisodeId{"e1"},
                           .run_id = RunId{"r"},
                           .task_id = TaskId{"relu"},
                           .model_py = kModelPy,
                           .policy = &policy,
                           .tools = &tools,
                           .system_prompt = system});
  ASSERT_EQ(e.status, EpisodeStatus::kCompleted);
  ASSERT_EQ(e.counters.turns, 3u);
  Expected<TrainSequence> rl = to_train_sequence(e, {});
  ASSERT_TRUE(rl) << rl.error().to_string();

  const std::string line = corpus_line_for(e, system);
  Expected<TrainSequence> sft = corpus_sequence(format, line, {.split = "all"}, "corpus.jsonl:1");
  ASSERT_TRUE(sft) << sft.error().to_string();
  EXPECT_EQ(sft->ids, rl->ids);
  EXPECT_EQ(sft->loss_mask, rl->loss_mask);
  EXPECT_EQ(sft->last_model_token, rl->last_model_token);
  EXPECT_EQ(sft->task, TaskId{"relu"});
  EXPECT_EQ(sft->reward, 1.0);  // expected_compile_only by default
  EXPECT_EQ(sft->min_version, 0u);
  EXPECT_EQ(sft->max_version, 0u);
  for (float lp : sft->behaviour_logprobs) EXPECT_EQ(lp, 0.0f);
  Expected<TrainSequence> tier = corpus_sequence(
      format, line, {.reward = CorpusReward::kTier, .split = "all"}, "corpus.jsonl:1");
  ASSERT_TRUE(tier);
  EXPECT_EQ(tier->reward, 3.0);
}

TEST(CorpusSequencesTest, MaskCoversTheAssistantTokensOnly) {
  const ChatFormat format = tiny_format();
  ordered line = {{"format", "cuda-agent-corpus"},
                  {"version", 1},
                  {"task", "t"},
                  {"system", "You write CUDA kernels."},
                  {"tools", tool_objects()},
                  {"messages",
                   {{{"role", "user"}, {"content", "Make it fast."}},
                    {{"role", "assistant"},
                     {"content", "Plan: one kernel."},
                     {"tool_calls", {{{"name", "compile"}, {"arguments", ordered::object()}}}}},
                    {{"role", "tool"}, {"content", "ok: 1 kernel, 32 registers"}},
                    {{"role", "assistant"},
                     {"content", nullptr},
                     {"tool_calls",
                      {{{"name", "read_file"}, {"arguments", {{"path", "kernels/k.cu"}}}},
                       {{"name", "benchmark"}, {"arguments", ordered::object()}}}}},
                    {{"role", "tool"}, {"content", "__global__ void k() {}"}},
                    {{"role", "tool"}, {"content", "1.4x eager"}},
                    {{"role", "assistant"}, {"content", "Done."}},
                    {{"role", "tool"}, {"content", "no tool was called"}}}}};
  Expected<CorpusLine> t = parse_corpus_line(line.dump(), "c.jsonl:1");
  ASSERT_TRUE(t) << t.error().to_string();
  Expected<TrainSequence> seq = corpus_sequence(format, line.dump(), {.split = ""}, "c.jsonl:1");
  ASSERT_TRUE(seq) << seq.error().to_string();

  // The mask-1 runs, in order, are exactly each assistant's generated text and <|im_end|>.
  std::vector<std::vector<TokenId>> runs;
  for (std::size_t i = 0; i < seq->ids.size(); ++i) {
    if (seq->loss_mask[i] == 0) continue;
    if (i == 0 || seq->loss_mask[i - 1] == 0) runs.emplace_back();
    runs.back().push_back(TokenId(seq->ids[i]));
  }
  const std::vector<std::string> expected = {
      "Plan: one kernel.\n<tool_call>\n{\"name\": \"compile\", \"arguments\": {}}\n</tool_call>",
      "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"kernels/k.cu\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"benchmark\", \"arguments\": {}}\n</tool_call>",
      "Done."};
  ASSERT_EQ(runs.size(), expected.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    std::vector<TokenId> want = encode(format, expected[k]);
    want.push_back(format.im_end());
    EXPECT_EQ(runs[k], want) << "assistant turn " << k;
    EXPECT_EQ(assistant_generation_text(format, t->messages[k == 0   ? 1
                                                            : k == 1 ? 3
                                                                     : 6]),
              expected[k]);
  }
  // Prompt, template and tool tokens are not trained on; the sequence ends at the last
  // <|im_end|> (the trailing tool message is not part of it).
  EXPECT_EQ(seq->loss_mask.front(), 0);
  EXPECT_EQ(seq->ids.back(), format.im_end());
  EXPECT_EQ(seq->loss_mask.back(), 1);
  EXPECT_EQ(seq->last_model_token, seq->size() - 1);

  // The same, piece by piece, as the conversation an episode keeps.
  Expected<Conversation> c = corpus_conversation(format, *t, "c.jsonl:1");
  ASSERT_TRUE(c) << c.error().to_string();
  std::vector<std::int64_t> ids(c->ids().begin(), c->ids().end());
  ids.pop_back();  // the "\n" after the last <|im_end|>
  EXPECT_EQ(ids, seq->ids);
  // A whole render of the messages tokenizes the same (added tokens bound every piece).
  std::vector<ChatMessage> all = {{ChatRole::kSystem, t->system, {}}};
  for (std::size_t i = 0; i < 7; ++i) all.push_back(t->messages[i]);
  Expected<std::string> whole = format.render(all, t->tools_json, false);
  ASSERT_TRUE(whole);
  std::vector<TokenId> rendered = encode(format, *whole);
  EXPECT_EQ(std::vector<std::int64_t>(rendered.begin(), rendered.end() - 1), seq->ids);
}

TEST(CorpusSequencesTest, ToolCallsRoundTripThroughTheParser) {
  const ChatFormat format = tiny_format();
  ChatMessage m{ChatRole::kAssistant,
                "Writing it.",
                {{"write_file", R"({"path":"kernels/k.cu","content":"int x = 1;\n\"q\" ü"})"},
                 {"edit_file", R"({"path":"model_new.py","old":"a","new":"b","n":[1,2.5,true]})"}}};
  ParsedAssistant p = parse_assistant(assistant_generation_text(format, m));
  EXPECT_TRUE(p.problems.empty());
  EXPECT_EQ(p.content, m.content);
  ASSERT_EQ(p.tool_calls.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(p.tool_calls[k].name, m.tool_calls[k].name);
    EXPECT_EQ(p.tool_calls[k].arguments_json, m.tool_calls[k].arguments_json);
  }
  // Content holding a tool-call tag would train the model on a call the message does not have.
  ordered line = {{"format", "cuda-agent-corpus"},
                  {"version", 1},
                  {"task", "t"},
                  {"system", ""},
                  {"tools", ordered::array()},
                  {"messages",
                   {{{"role", "user"}, {"content", "x"}},
                    {{"role", "assistant"},
                     {"content",
                      "<tool_call>\n{\"name\": \"finish\", \"arguments\": {}}\n"
                      "</tool_call>"}}}}};
  Expected<TrainSequence> seq = corpus_sequence(format, line.dump(), {.split = ""}, "c.jsonl:9");
  ASSERT_FALSE(seq);
  EXPECT_NE(seq.error().message.find("c.jsonl:9: messages[1]"), std::string::npos)
      << seq.error().message;
}

std::string good_line(const std::string& task, const std::string& split) {
  ordered line = {{"format", "cuda-agent-corpus"},
                  {"version", 1},
                  {"task", task},
                  {"split", split},
                  {"expected_tier", 2},
                  {"expected_compile_only", 1},
                  {"system", "sys"},
                  {"tools", ordered::array()},
                  {"messages",
                   {{{"role", "user"}, {"content", "go"}},
                    {{"role", "assistant"},
                     {"content", ""},
                     {"tool_calls", {{{"name", "finish"}, {"arguments", ordered::object()}}}}}}}};
  return line.dump();
}

TEST(CorpusSequencesTest, BadLinesAreRefusedByFileAndLineAndTheRestLoad) {
  const ChatFormat format = tiny_format();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("corpus_sequences_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "c.jsonl").string();
  {
    std::ofstream out(path);
    out << good_line("a", "train") << "\n"  // 1
        << "{not json\n"                    // 2
        << R"({"format":"cuda-agent-corpus","version":2,"task":"t"})"
        << "\n"  // 3
        << R"({"format":"other","version":1})"
        << "\n"                                                                    // 4
        << R"({"format":"cuda-agent-corpus","version":1,"task":"t","system":"",)"  // 5
        << R"("tools":[]})"
        << "\n"
        << R"({"format":"cuda-agent-corpus","version":1,"task":"t","system":"","tools":[],)"
        << R"("messages":[{"role":"user","content":"x"},{"role":"critic","content":"y"}]})"
        << "\n"  // 6
        << "\n"  // 7: empty
        << R"({"format":"cuda-agent-corpus","version":1,"task":"t","system":"","tools":[],)"
        << R"("messages":[{"role":"user","content":"x"},{"role":"tool","content":"y"}]})"
        << "\n"                              // 8
        << good_line("b", "eval") << "\n"    // 9
        << good_line("c", "train") << "\n";  // 10
  }
  Expected<CorpusSequences> c = load_corpus_sequences(path, format, {});
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->lines, 9u);
  EXPECT_EQ(c->other_split, 1u);  // "b" is held out
  ASSERT_EQ(c->sequences.size(), 2u);
  EXPECT_EQ(c->sequences[0].task, TaskId{"a"});
  EXPECT_EQ(c->sequences[1].task, TaskId{"c"});
  const std::vector<std::pair<int, std::string>> want = {
      {2, "not valid JSON"},          {3, "version 2 (this build reads version 1)"},
      {4, "format \"other\""},        {5, "no \"messages\" array"},
      {6, "unknown role \"critic\""}, {8, "a tool message before any assistant message"}};
  ASSERT_EQ(c->refused.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const Error& e = c->refused[k];
    EXPECT_EQ(e.code, "learner.bad_corpus_line");
    EXPECT_EQ(e.category, ErrorCategory::kInvalidInput);
    EXPECT_NE(e.message.find(path + ":" + std::to_string(want[k].first) + ": "), std::string::npos)
        << e.message;
    EXPECT_NE(e.message.find(want[k].second), std::string::npos) << e.message;
  }
  // Every split; the tier as reward.
  Expected<CorpusSequences> all =
      load_corpus_sequences(path, format, {.reward = CorpusReward::kTier, .split = "all"});
  ASSERT_TRUE(all);
  ASSERT_EQ(all->sequences.size(), 3u);
  EXPECT_EQ(all->sequences[1].reward, 2.0);

  EXPECT_EQ(load_corpus_sequences((dir / "none.jsonl").string(), format, {}).error().code,
            "learner.no_corpus");
  std::filesystem::remove_all(dir);
}

TEST(CorpusSequencesTest, TooLongOrOutOfVocabularyIsRefusedNotTruncated) {
  const ChatFormat format = tiny_format();
  const std::string line = good_line("a", "train");
  Expected<TrainSequence> whole = corpus_sequence(format, line, {}, "c.jsonl:1");
  ASSERT_TRUE(whole);
  const std::int64_t n = whole->size();
  EXPECT_TRUE(corpus_sequence(format, line, {.limits = {.max_tokens = n}}, "c.jsonl:1"));
  Expected<TrainSequence> longer =
      corpus_sequence(format, line, {.limits = {.max_tokens = n - 1}}, "c.jsonl:1");
  ASSERT_FALSE(longer);
  EXPECT_NE(longer.error().message.find("c.jsonl:1: task 'a' is " + std::to_string(n) +
                                        " tokens, more than the limit of " + std::to_string(n - 1)),
            std::string::npos)
      << longer.error().message;
  Expected<TrainSequence> small_vocab =
      corpus_sequence(format, line, {.limits = {.vocab_size = 300}}, "c.jsonl:1");
  ASSERT_FALSE(small_vocab);
  EXPECT_NE(small_vocab.error().message.find("c.jsonl:1: task 'a': "), std::string::npos)
      << small_vocab.error().message;
}

}  // namespace
}  // namespace cuda_agent
