// The OpenAI-compatible policy backend against a local scripted server that speaks the protocol:
// tool calls both ways, retries on overload and dropped connections, no retry on client errors,
// per-attempt timeouts and the request deadline, malformed replies named by JSON path, and
// Qwen-style tool calls left in the text by a server without a tool parser; and
// cuda-agent-engine's token-exact replies (prompt ids, sampled ids, logprobs, policy versions)
// giving an episode that learner/train_sequence.h trains on.
#include "rollout/openai_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/log.h"
#include "learner/train_sequence.h"
#include "rollout/episode.h"
#include "rollout/scripted_http_server.h"

namespace cuda_agent {
namespace {

using nlohmann::json;
using testing::ScriptedHttpServer;
using testing::ScriptedReply;

const char* kToolReply = R"({"id":"x","model":"served-model","choices":[{"index":0,
  "message":{"role":"assistant","content":null,"tool_calls":[
    {"id":"c1","type":"function","function":{"name":"write_file",
      "arguments":"{\"path\":\"kernels/k.cu\",\"content\":\"// k\"}"}},
    {"id":"c2","type":"function","function":{"name":"compile","arguments":"{not json"}}]},
  "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":34}})";

const char* kTextReply =
    R"({"choices":[{"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]})";

std::unique_ptr<OpenAiPolicy> policy(const std::string& url, OpenAiPolicyOptions o = {}) {
  o.base_url = url;
  o.model = "test-model";
  if (o.api_key_env == "OPENAI_API_KEY") o.api_key_env = "CUDA_AGENT_TEST_POLICY_KEY";
  o.backoff_initial_ms = 10;
  o.backoff_max_ms = 40;
  auto p = OpenAiPolicy::create(o);
  EXPECT_TRUE(p) << p.error().to_string();
  return std::move(*p);
}

PolicyRequest conversation() {
  PolicyRequest r;
  r.messages = {
      {ChatRole::kSystem, "You write CUDA.", {}},
      {ChatRole::kUser, "Make relu fast.", {}},
      {ChatRole::kAssistant, "", {{"write_file", R"({"path":"a.cu"})"}, {"compile", "{}"}}},
      {ChatRole::kTool, "wrote a.cu", {}},
      {ChatRole::kTool, "error: a.cu(3)", {}}};
  r.tools = {{"write_file", "Write a file.",
              R"({"type":"object","properties":{"path":{"type":"string"}}})"},
             {"compile", "Compile the workspace.", R"({"type":"object","properties":{}})"}};
  r.temperature = 0.7;
  r.max_new_tokens = 512;
  r.seed = 42;
  return r;
}

class OpenAiPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { (void)setup_logging({.level = "error"}); }
};

TEST_F(OpenAiPolicyTest, SendsTheConversationAndReadsToolCalls) {
  ScriptedHttpServer server({{.body = kToolReply}});
  ::setenv("CUDA_AGENT_TEST_POLICY_KEY", "sk-test", 1);
  auto p = policy(server.base_url());
  ::unsetenv("CUDA_AGENT_TEST_POLICY_KEY");
  auto turn = p->next(conversation());
  ASSERT_TRUE(turn) << turn.error().to_string();
  ASSERT_EQ(turn->tool_calls.size(), 2u);
  EXPECT_EQ(turn->tool_calls[0].name, "write_file");
  EXPECT_EQ(json::parse(turn->tool_calls[0].arguments_json)["path"], "kernels/k.cu");
  EXPECT_EQ(turn->tool_calls[1].arguments_json, "{not json")
      << "the model's malformed arguments are kept for the episode to answer";
  EXPECT_EQ(turn->finish_reason, "tool_calls");
  EXPECT_EQ(turn->prompt_tokens, 120);
  EXPECT_EQ(turn->completion_tokens, 34);
  EXPECT_EQ(turn->policy_version, "served-model");

  auto got = server.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].head.find("POST /v1/chat/completions"), std::string::npos) << got[0].head;
  EXPECT_NE(got[0].head.find("Authorization: Bearer sk-test"), std::string::npos);
  auto body = json::parse(got[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["seed"], 42);
  EXPECT_EQ(body["max_tokens"], 512);
  ASSERT_EQ(body["messages"].size(), 5u);
  EXPECT_TRUE(body["messages"][2]["content"].is_null());
  EXPECT_EQ(body["messages"][2]["tool_calls"][1]["id"], "call_2_1");
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["function"]["arguments"], R"({"path":"a.cu"})");
  EXPECT_EQ(body["messages"][3]["tool_call_id"], "call_2_0");
  EXPECT_EQ(body["messages"][4]["tool_call_id"], "call_2_1");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["properties"]["path"]["type"], "string");
}

TEST_F(OpenAiPolicyTest, NoKeyInTheEnvironmentSendsNoAuthorization) {
  ScriptedHttpServer server({{.body = kTextReply}});
  ::unsetenv("CUDA_AGENT_TEST_POLICY_KEY");
  auto turn = policy(server.base_url())->next(conversation());
  ASSERT_TRUE(turn) << turn.error().to_string();
  EXPECT_EQ(turn->content, "Done.");
  EXPECT_EQ(turn->policy_version, "test-model");
  EXPECT_EQ(server.received()[0].head.find("Authorization"), std::string::npos);
}

TEST_F(OpenAiPolicyTest, RetriesOverloadAndDroppedConnectionsThenSucceeds) {
  ScriptedHttpServer server({{.status = 503, .body = R"({"error":{"message":"overloaded"}})"},
                             {.drop = true},
                             {.status = 429, .body = "{}", .headers = {"Retry-After: 0"}},
                             {.body = kTextReply}});
  auto turn = policy(server.base_url())->next(conversation());
  ASSERT_TRUE(turn) << turn.error().to_string();
  EXPECT_EQ(turn->content, "Done.");
  EXPECT_EQ(server.received().size(), 4u);
}

// A refusal for the context (our engine's code, or OpenAI's) is told apart from any other 400:
// the episode then ends truncated (rollout/episode.cpp), not aborted.
TEST_F(OpenAiPolicyTest, AContextLimitRefusalHasItsOwnCode) {
  ScriptedHttpServer server(
      {{.status = 400,
        .body = R"({"error":{"code":"engine.context_limit","message":"prompt 3105 tokens + )"
                R"(max_tokens 1024 = 4129 exceeds the context limit of 4096 tokens"}})"},
       {.status = 400, .body = R"({"error":{"code":"context_length_exceeded","message":"x"}})"},
       {.status = 400, .body = R"({"error":{"code":"engine.bad_sampling","message":"top_p"}})"}});
  auto first = policy(server.base_url())->next(conversation());
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, kPolicyContextLimit);
  EXPECT_NE(first.error().message.find("4096"), std::string::npos);
  auto second = policy(server.base_url())->next(conversation());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, kPolicyContextLimit);
  auto other = policy(server.base_url())->next(conversation());
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, "policy.http_400");
}

TEST_F(OpenAiPolicyTest, GivesUpAfterMaxAttemptsWithTheLastError) {
  std::vector<ScriptedReply> script(3, {.status = 500, .body = R"({"error":{"message":"boom"}})"});
  ScriptedHttpServer server(script);
  auto turn = policy(server.base_url(), {.max_attempts = 3})->next(conversation());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, "policy.http_500");
  EXPECT_NE(turn.error().message.find("boom"), std::string::npos) << turn.error().to_string();
  EXPECT_EQ(server.received().size(), 3u);
}

TEST_F(OpenAiPolicyTest, ClientErrorsAreNotRetried) {
  ScriptedHttpServer server(
      {{.status = 400, .body = R"({"error":{"message":"unknown model"}})"}, {.body = kTextReply}});
  auto turn = policy(server.base_url())->next(conversation());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, "policy.http_400");
  EXPECT_EQ(turn.error().category, ErrorCategory::kInvalidInput);
  EXPECT_NE(turn.error().message.find("unknown model"), std::string::npos);
  EXPECT_EQ(server.received().size(), 1u);
}

TEST_F(OpenAiPolicyTest, EachAttemptTimesOutAndTheDeadlineBoundsTheWhole) {
  std::vector<ScriptedReply> slow(5, {.body = kTextReply, .delay_ms = 3000});
  {
    ScriptedHttpServer server(slow);
    const auto t0 = std::chrono::steady_clock::now();
    auto turn = policy(server.base_url(), {.attempt_timeout_ms = 150, .max_attempts = 2})
                    ->next(conversation());
    ASSERT_FALSE(turn);
    EXPECT_EQ(turn.error().code, "http.timeout");
    EXPECT_EQ(turn.error().category, ErrorCategory::kTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500));
  }
  {
    ScriptedHttpServer server(slow);
    PolicyRequest r = conversation();
    r.deadline_unix_ms = now_unix_ms() + 300;
    const auto t0 = std::chrono::steady_clock::now();
    auto turn = policy(server.base_url(), {.max_attempts = 5})->next(r);
    ASSERT_FALSE(turn);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500))
        << "the request deadline must bound every attempt and the backoff";
  }
}

TEST_F(OpenAiPolicyTest, MalformedRepliesNameWhatIsWrong) {
  struct Case {
    std::string body, path;
  };
  for (const Case& c : std::vector<Case>{
           {"<html>gateway</html>", "body"},
           {R"({"choices":[]})", "choices"},
           {R"({"choices":[{"finish_reason":"stop"}]})", "choices[0].message"},
           {R"({"choices":[{"message":{"content":7}}]})", "choices[0].message.content"},
           {R"({"choices":[{"message":{"tool_calls":[{"function":{}}]}}]})",
            "choices[0].message.tool_calls[0].function.name"}}) {
    ScriptedHttpServer server({{.body = c.body}});
    auto turn = policy(server.base_url())->next(conversation());
    ASSERT_FALSE(turn) << c.body;
    EXPECT_EQ(turn.error().code, "policy.malformed_reply");
    EXPECT_NE(turn.error().message.find(c.path), std::string::npos) << turn.error().to_string();
  }
}

TEST_F(OpenAiPolicyTest, ToolCallsInTheTextOfAServerWithoutAToolParser) {
  json reply = {{"choices",
                 {{{"message",
                    {{"content",
                      "Let me write it.\n<tool_call>\n{\"name\": \"write_file\", "
                      "\"arguments\": {\"path\": \"kernels/k.cu\"}}\n</tool_call>"}}},
                   {"finish_reason", "stop"}}}}};
  ScriptedHttpServer server({{.body = reply.dump()}});
  auto turn = policy(server.base_url())->next(conversation());
  ASSERT_TRUE(turn) << turn.error().to_string();
  EXPECT_EQ(turn->content, "Let me write it.");
  ASSERT_EQ(turn->tool_calls.size(), 1u);
  EXPECT_EQ(turn->tool_calls[0].name, "write_file");
}

TEST_F(OpenAiPolicyTest, NobodyListeningIsAConnectError) {
  int port;
  {
    ScriptedHttpServer closed({});
    port = std::stoi(closed.base_url().substr(17));
  }
  auto turn = policy("http://127.0.0.1:" + std::to_string(port) + "/v1", {.max_attempts = 2})
                  ->next(conversation());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, "http.connect") << turn.error().to_string();
}

TEST_F(OpenAiPolicyTest, BadOptionsAreRefused) {
  auto p = OpenAiPolicy::create({.base_url = "localhost:8000/v1", .model = "m"});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("base_url"), std::string::npos);
  p = OpenAiPolicy::create({.base_url = "http://localhost:8000/v1", .model = ""});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("model"), std::string::npos);
}

// Found on the H100: a tiny random policy wrote a partial UTF-8 character, the compile log echoed
// it, and building the next request threw from json::dump and aborted the rollout worker (every
// restart reran the same seeded episode and aborted again). The bytes go as U+FFFD now.
TEST(OpenAiRequest, TextThatIsNotUtf8IsReplacedNotFatal) {
  PolicyRequest request;
  request.messages = {{ChatRole::kUser, "hi", {}},
                      {ChatRole::kAssistant, "x\xe2'", {}},
                      {ChatRole::kTool, "error: \xe2' unexpected", {}}};
  std::string body;
  ASSERT_NO_THROW(body = openai_request_body("m", request, /*request_token_ids=*/true));
  const json j = json::parse(body);
  EXPECT_EQ(j["messages"][2]["content"], "error: \xef\xbf\xbd' unexpected");
}

// vLLM with return_tokens_as_token_ids: the sampled ids and logprobs come back with the text.
TEST(OpenAiReply, TokenIdsAndLogprobsFromVllmsTokenIdExtension) {
  PolicyRequest request;
  request.messages = {{ChatRole::kUser, "hi", {}}};
  auto body = json::parse(openai_request_body("m", request, /*request_token_ids=*/true));
  EXPECT_EQ(body["logprobs"], true);
  EXPECT_EQ(body["return_tokens_as_token_ids"], true);
  EXPECT_FALSE(json::parse(openai_request_body("m", request)).contains("logprobs"));

  auto reply = [](json content) {
    return json{{"choices",
                 {{{"message", {{"content", "ab"}}},
                   {"finish_reason", "stop"},
                   {"logprobs", {{"content", std::move(content)}}}}}}}
        .dump();
  };
  auto turn = parse_openai_reply(reply({{{"token", "token_id:151644"}, {"logprob", -0.5}},
                                        {{"token", "token_id:7"}, {"logprob", 0}}}));
  ASSERT_TRUE(turn) << turn.error().to_string();
  EXPECT_EQ(turn->token_ids, (std::vector<std::int32_t>{151644, 7}));
  EXPECT_EQ(turn->logprobs, (std::vector<float>{-0.5f, 0.f}));

  // Token text (a server without the extension): no ids rather than guessed ones.
  turn = parse_openai_reply(
      reply({{{"token", "a"}, {"logprob", -1}}, {{"token", "b"}, {"logprob", -1}}}));
  ASSERT_TRUE(turn);
  EXPECT_TRUE(turn->token_ids.empty());
  EXPECT_TRUE(turn->logprobs.empty());
  turn = parse_openai_reply(reply({{{"token", "token_id:12x"}, {"logprob", -1}}}));
  ASSERT_TRUE(turn);
  EXPECT_TRUE(turn->token_ids.empty());

  // A malformed entry is named by its path.
  turn = parse_openai_reply(reply({{{"token", "token_id:1"}, {"logprob", "high"}}}));
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, "policy.malformed_reply");
  EXPECT_NE(turn.error().message.find("choices[0].logprobs.content[0].logprob"), std::string::npos)
      << turn.error().message;
}

// A reply shaped as cuda-agent-engine's (model/engine_server.cpp build_reply) for a chat request
// with logprobs and return_tokens_as_token_ids.
std::string engine_reply(const std::vector<int>& prompt, const std::vector<int>& ids,
                         const std::vector<float>& logprobs, std::uint64_t first,
                         std::uint64_t last, const json& tool_calls) {
  json content = json::array();
  for (std::size_t k = 0; k < ids.size(); ++k)
    content.push_back({{"token", "token_id:" + std::to_string(ids[k])},
                       {"logprob", logprobs[k]},
                       {"top_logprobs", json::array()}});
  json message = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}};
  return json{{"id", "chatcmpl-7"},
              {"object", "chat.completion"},
              {"created", 1},
              {"model", "policy"},
              {"policy_version", last},
              {"prompt_token_ids", prompt},
              {"choices",
               {{{"index", 0},
                 {"token_ids", ids},
                 {"first_policy_version", first},
                 {"last_policy_version", last},
                 {"stop_reason", "stop_token"},
                 {"message", message},
                 {"logprobs", {{"content", content}}},
                 {"finish_reason", "tool_calls"}}}},
              {"usage",
               {{"prompt_tokens", prompt.size()},
                {"completion_tokens", ids.size()},
                {"total_tokens", prompt.size() + ids.size()}}}}
      .dump();
}

json engine_call(const std::string& name, const json& args) {
  return {{"id", "call_7_0"},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", args.dump()}}}};
}

TEST_F(OpenAiPolicyTest, ReadsTheEnginesTokenExactFields) {
  auto turn =
      parse_openai_reply(engine_reply({1, 2, 3}, {40, 41, 2}, {-0.5f, -0.25f, -0.125f}, 4, 5,
                                      json::array({engine_call("finish", json::object())})));
  ASSERT_TRUE(turn) << turn.error().to_string();
  EXPECT_EQ(turn->prompt_token_ids, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(turn->token_ids, (std::vector<std::int32_t>{40, 41, 2}));
  EXPECT_EQ(turn->logprobs, (std::vector<float>{-0.5f, -0.25f, -0.125f}));
  EXPECT_EQ(turn->first_policy_version, 4u);
  EXPECT_EQ(turn->last_policy_version, 5u);
  ASSERT_EQ(turn->tool_calls.size(), 1u);
  EXPECT_EQ(turn->tool_calls[0].name, "finish");

  // The engine's ids are the truth: logprobs that are not one per id, or that name other ids,
  // are a malformed reply.
  json j = json::parse(engine_reply({1}, {40, 41}, {-0.5f, -0.25f}, 0, 0, json::array()));
  j["choices"][0]["logprobs"]["content"].erase(1);
  auto short_lp = parse_openai_reply(j.dump());
  ASSERT_FALSE(short_lp);
  EXPECT_EQ(short_lp.error().code, "policy.malformed_reply");
  EXPECT_NE(short_lp.error().message.find("choices[0].logprobs.content"), std::string::npos);
  j = json::parse(engine_reply({1}, {40, 41}, {-0.5f, -0.25f}, 0, 0, json::array()));
  j["choices"][0]["token_ids"][1] = 42;
  auto other = parse_openai_reply(j.dump());
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("other token ids"), std::string::npos);
  j["choices"][0]["token_ids"][1] = -1;
  auto negative = parse_openai_reply(j.dump());
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().message.find("choices[0].token_ids[1]"), std::string::npos);
}

// Tools that build anything and give tier 2: the episode's evaluation is not under test here.
class AcceptingTools final : public EvaluationTools {
 public:
  Expected<CompileResult> compile(const std::vector<SourceFile>&) override {
    return CompileResult{};
  }
  Expected<EvaluationOutcome> evaluate(BenchMode, const std::string&,
                                       const std::vector<SourceFile>&, const CompileResult&,
                                       bool) override {
    return EvaluationOutcome{.report = "correct", .correct = true, .reward_tier = 2};
  }
};

EpisodeSpec engine_episode(PolicyBackend* policy, EvaluationTools* tools) {
  return {.episode_id = EpisodeId{"e1"},
          .run_id = RunId{"run"},
          .task_id = TaskId{"t/relu"},
          .model_py = "class Model: pass\n",
          .policy = policy,
          .tools = tools,
          .policy_version = PolicyVersion{3}};
}

// Two engine turns: the stored episode is the exact token sequence (prompt, sampled, tool output,
// sampled) with the right mask, logprobs and versions, and the learner accepts it.
TEST_F(OpenAiPolicyTest, AnEngineEpisodeIsTokenExactAndTrainable) {
  const json write = engine_call("write_file", {{"path", "model_new.py"}, {"content", "x"}});
  ScriptedHttpServer server(
      {{.body = engine_reply({1, 2, 3, 4, 5, 6}, {100, 101, 102}, {-0.5f, -0.25f, -0.125f}, 3, 3,
                             json::array({write}))},
       {.body =
            engine_reply({1, 2, 3, 4, 5, 6, 100, 101, 102, 7, 8, 9}, {103, 104}, {-1.5f, -0.75f}, 3,
                         4, json::array({engine_call("finish", json::object())}))}});
  auto p = policy(server.base_url(), {.request_token_ids = true});
  AcceptingTools tools;
  Episode e = run_episode(engine_episode(p.get(), &tools));
  ASSERT_EQ(e.status, EpisodeStatus::kCompleted) << e.turns.back().tool_results[0].content;
  EXPECT_EQ(e.final_reward, 2);
  const auto sent = server.received();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(json::parse(sent[0].body)["return_tokens_as_token_ids"].get<bool>());
  // The first turn has no history; the second sends it as the exact ids (prompt + sampled).
  EXPECT_FALSE(json::parse(sent[0].body).contains("context_token_ids"));
  EXPECT_EQ(json::parse(sent[1].body)["context_token_ids"].get<std::vector<std::int32_t>>(),
            (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 100, 101, 102}));

  auto seq = to_train_sequence(e, {.vocab_size = 1000});
  ASSERT_TRUE(seq) << seq.error().to_string();
  EXPECT_EQ(seq->ids,
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 100, 101, 102, 7, 8, 9, 103, 104}));
  EXPECT_EQ(seq->loss_mask, (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(seq->behaviour_logprobs,
            (std::vector<float>{0, 0, 0, 0, 0, 0, -0.5f, -0.25f, -0.125f, 0, 0, 0, -1.5f, -0.75f}));
  EXPECT_EQ(seq->policy_versions[6], 3u);
  EXPECT_EQ(seq->policy_versions[12], 3u) << "the older weights of a turn that spanned a swap";
  EXPECT_EQ(seq->last_model_token, 13);
  EXPECT_EQ(seq->reward, 2);
  EXPECT_EQ(e.counters.tokens, 14u);
  // The trajectory survives the wire codec as the learner reads it back from the store.
  auto back = decode_episode(encode_episode(e));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_TRUE(to_train_sequence(*back, {}));
}

// A prompt that does not extend the stored tokens (the server re-tokenized the history) ends the
// episode as aborted; what is stored up to there is still exact.
TEST_F(OpenAiPolicyTest, AReTokenizedHistoryAbortsTheEpisode) {
  const json list = engine_call("list_files", json::object());
  ScriptedHttpServer server(
      {{.body = engine_reply({1, 2, 3}, {100, 101}, {-0.5f, -0.25f}, 0, 0, json::array({list}))},
       {.body = engine_reply({1, 2, 3, 100, 99, 7}, {103}, {-1.f}, 0, 0,
                             json::array({engine_call("finish", json::object())}))}});
  auto p = policy(server.base_url(), {.request_token_ids = true});
  AcceptingTools tools;
  Episode e = run_episode(engine_episode(p.get(), &tools));
  EXPECT_EQ(e.status, EpisodeStatus::kAborted);
  EXPECT_EQ(e.final_reward, 0);
  EXPECT_NE(e.turns.back().tool_results[0].content.find("policy.history_retokenized"),
            std::string::npos)
      << e.turns.back().tool_results[0].content;
  auto seq = to_train_sequence(e, {});
  ASSERT_TRUE(seq) << seq.error().to_string();
  EXPECT_EQ(seq->ids, (std::vector<std::int64_t>{1, 2, 3, 100, 101}));
}

}  // namespace
}  // namespace cuda_agent
