#include "rollout/openai_policy.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "rollout/http_post.h"

namespace cuda_agent {
namespace {

using nlohmann::json;

Error malformed(const std::string& path, const std::string& what) {
  return make_error(ErrorCategory::kUnavailable, "policy.malformed_reply",
                    "chat-completions reply: " + path + " " + what);
}

bool retryable_status(long status) {
  return status == 408 || status == 409 || status == 429 || status == 500 || status == 502 ||
         status == 503 || status == 504;
}

// The server's own words for a failed status: {"error": {"message": ...}} or {"message": ...}
// or the first 300 bytes of the body.
std::string server_message(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (j.contains("error")) {
      const auto& e = j["error"];
      if (e.is_object() && e.contains("message") && e["message"].is_string())
        return e["message"].get<std::string>();
      if (e.is_string()) return e.get<std::string>();
    }
    if (j.contains("message") && j["message"].is_string()) return j["message"].get<std::string>();
  }
  return body.substr(0, 300);
}

// True for a refusal because prompt + max_tokens passes the model's context: our engine's
// "engine.context_limit", OpenAI's and vLLM-style servers' "context_length_exceeded".
bool context_limit_refusal(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("error") || !j["error"].is_object())
    return false;
  const auto& e = j["error"];
  const auto code = e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>() : "";
  return code == "engine.context_limit" || code == "context_length_exceeded";
}

}  // namespace

std::string openai_request_body(const std::string& model, const PolicyRequest& request,
                                bool request_token_ids) {
  json messages = json::array();
  // Positional tool-call ids: the k-th tool message after an assistant turn answers its k-th call.
  std::string pending_prefix;
  std::size_t pending_calls = 0, answered = 0;
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    const ChatMessage& m = request.messages[i];
    json jm = {{"role", role_name(m.role)}};
    if (m.role == ChatRole::kAssistant) {
      jm["content"] = m.content.empty() && !m.tool_calls.empty() ? json(nullptr) : json(m.content);
      if (!m.tool_calls.empty()) {
        pending_prefix = "call_" + std::to_string(i) + "_";
        pending_calls = m.tool_calls.size();
        answered = 0;
        json calls = json::array();
        for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
          calls.push_back(
              {{"id", pending_prefix + std::to_string(k)},
               {"type", "function"},
               {"function",
                {{"name", m.tool_calls[k].name}, {"arguments", m.tool_calls[k].arguments_json}}}});
        }
        jm["tool_calls"] = std::move(calls);
      }
    } else if (m.role == ChatRole::kTool) {
      jm["content"] = m.content;
      // A tool message beyond the calls (a malformed-call observation) answers the last call.
      const std::size_t k = std::min(answered, pending_calls > 0 ? pending_calls - 1 : 0);
      jm["tool_call_id"] =
          pending_prefix.empty() ? "call_none" : pending_prefix + std::to_string(k);
      ++answered;
    } else {
      jm["content"] = m.content;
    }
    messages.push_back(std::move(jm));
  }
  json body = {{"model", model},
               {"messages", std::move(messages)},
               {"temperature", request.temperature},
               {"top_p", request.top_p},
               {"max_tokens", request.max_new_tokens}};
  if (request.seed != 0) body["seed"] = request.seed;
  if (request_token_ids) {
    body["logprobs"] = true;
    body["return_tokens_as_token_ids"] = true;
    // Only a backend that reported prompt_token_ids (cuda-agent-engine) leads to these.
    if (!request.context_token_ids.empty()) body["context_token_ids"] = request.context_token_ids;
  }
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const PolicyTool& t : request.tools) {
      auto params = json::parse(t.parameters_json, nullptr, false);
      if (params.is_discarded()) params = json::object();
      tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", t.name},
                         {"description", t.description},
                         {"parameters", std::move(params)}}}});
    }
    body["tools"] = std::move(tools);
  }
  // Text the model wrote (and tool output echoing it) may hold bytes that are not UTF-8: a small
  // or random policy emits partial characters. Those go as U+FFFD rather than abort the worker
  // (the model's own tokens travel as context_token_ids, never re-read from this text).
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

Expected<PolicyTurn> parse_openai_reply(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return malformed("body", "is not JSON: " + body.substr(0, 200));
  if (!j.is_object()) return malformed("body", "is not a JSON object");
  if (!j.contains("choices") || !j["choices"].is_array())
    return malformed("choices", "is missing or not an array");
  if (j["choices"].empty()) return malformed("choices", "is empty");
  const json& choice = j["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    return malformed("choices[0].message", "is missing or not an object");
  const json& msg = choice["message"];
  PolicyTurn turn;
  if (msg.contains("content") && !msg["content"].is_null()) {
    if (!msg["content"].is_string()) return malformed("choices[0].message.content", "is not text");
    turn.content = msg["content"].get<std::string>();
  }
  if (msg.contains("tool_calls") && !msg["tool_calls"].is_null()) {
    if (!msg["tool_calls"].is_array())
      return malformed("choices[0].message.tool_calls", "is not an array");
    for (std::size_t k = 0; k < msg["tool_calls"].size(); ++k) {
      const std::string path = "choices[0].message.tool_calls[" + std::to_string(k) + "]";
      const json& call = msg["tool_calls"][k];
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
        return malformed(path + ".function", "is missing or not an object");
      const json& f = call["function"];
      if (!f.contains("name") || !f["name"].is_string())
        return malformed(path + ".function.name", "is missing or not text");
      ChatToolCall c;
      c.name = f["name"].get<std::string>();
      if (f.contains("arguments")) {
        // Text as the API defines it; some servers send the object itself.
        c.arguments_json =
            f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump();
      }
      turn.tool_calls.push_back(std::move(c));
    }
  }
  // A server without a tool-call parser: the calls are still in the text, in Qwen's format.
  take_tool_calls_from_text(turn);
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
    turn.finish_reason = choice["finish_reason"].get<std::string>();
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      turn.prompt_tokens = u["prompt_tokens"].get<std::int64_t>();
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
      turn.completion_tokens = u["completion_tokens"].get<std::int64_t>();
  }
  if (j.contains("model") && j["model"].is_string()) turn.policy_version = j["model"];
  // cuda-agent-engine's token-exact fields (model/engine_server.h): the prompt's ids, the sampled
  // ids verbatim (stop token included) and the weights versions of the first and last token.
  auto read_ids = [&](const json& where, const char* key,
                      const std::string& path) -> Expected<std::vector<std::int32_t>> {
    std::vector<std::int32_t> ids;
    if (!where.contains(key) || where[key].is_null()) return ids;
    if (!where[key].is_array()) return malformed(path, "is not an array");
    for (std::size_t k = 0; k < where[key].size(); ++k) {
      const json& id = where[key][k];
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
          id.get<std::int64_t>() > INT32_MAX)
        return malformed(path + "[" + std::to_string(k) + "]", "is not a token id");
      ids.push_back(static_cast<std::int32_t>(id.get<std::int64_t>()));
    }
    return ids;
  };
  ASSIGN_OR_RETURN(turn.prompt_token_ids, read_ids(j, "prompt_token_ids", "prompt_token_ids"));
  ASSIGN_OR_RETURN(std::vector<std::int32_t> choice_ids,
                   read_ids(choice, "token_ids", "choices[0].token_ids"));
  for (auto [key, version] : {std::pair{"first_policy_version", &turn.first_policy_version},
                              std::pair{"last_policy_version", &turn.last_policy_version}}) {
    if (!choice.contains(key) || choice[key].is_null()) continue;
    const json& v = choice[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      return malformed(std::string("choices[0].") + key, "is not a version number");
    *version = v.get<std::uint64_t>();
  }
  std::vector<float> logprobs;
  std::vector<std::int32_t> named_ids;  // from "token_id:N" tokens, when every token is one
  bool all_named = true;
  if (choice.contains("logprobs") && choice["logprobs"].is_object() &&
      choice["logprobs"].contains("content") && !choice["logprobs"]["content"].is_null()) {
    const json& content = choice["logprobs"]["content"];
    if (!content.is_array()) return malformed("choices[0].logprobs.content", "is not an array");
    for (std::size_t k = 0; k < content.size(); ++k) {
      const std::string path = "choices[0].logprobs.content[" + std::to_string(k) + "]";
      const json& t = content[k];
      if (!t.is_object() || !t.contains("token") || !t["token"].is_string())
        return malformed(path + ".token", "is missing or not text");
      if (!t.contains("logprob") || !t["logprob"].is_number())
        return malformed(path + ".logprob", "is missing or not a number");
      logprobs.push_back(t["logprob"].get<float>());
      const std::string token = t["token"].get<std::string>();
      constexpr std::string_view kPrefix = "token_id:";
      char* end = nullptr;
      const long id =
          token.rfind(kPrefix, 0) == 0 ? std::strtol(token.c_str() + kPrefix.size(), &end, 10) : -1;
      if (id < 0 || id > INT32_MAX || !end || *end != '\0' || token.size() == kPrefix.size())
        all_named = false;  // token text: the server has no token-id extension
      else
        named_ids.push_back(static_cast<std::int32_t>(id));
    }
  }
  if (!choice_ids.empty()) {
    // The engine's ids are the truth; logprobs, when asked for, must be one per id and name the
    // same ids.
    if (!logprobs.empty() && logprobs.size() != choice_ids.size())
      return malformed("choices[0].logprobs.content",
                       "has " + std::to_string(logprobs.size()) + " entries for " +
                           std::to_string(choice_ids.size()) + " token_ids");
    if (!logprobs.empty() && all_named && named_ids != choice_ids)
      return malformed("choices[0].logprobs.content", "names other token ids than token_ids");
    turn.token_ids = std::move(choice_ids);
    turn.logprobs = std::move(logprobs);
  } else if (all_named && !named_ids.empty()) {
    turn.token_ids = std::move(named_ids);
    turn.logprobs = std::move(logprobs);
  }
  return turn;
}

Expected<std::unique_ptr<OpenAiPolicy>> OpenAiPolicy::create(OpenAiPolicyOptions options) {
  auto bad = [](const std::string& what) {
    return make_error(ErrorCategory::kInvalidInput, "policy.options", "OpenAI policy: " + what);
  };
  if (options.base_url.rfind("http://", 0) != 0 && options.base_url.rfind("https://", 0) != 0)
    return bad("base_url must start with http:// or https:// (got '" + options.base_url + "')");
  while (!options.base_url.empty() && options.base_url.back() == '/') options.base_url.pop_back();
  if (options.model.empty()) return bad("model is required");
  if (options.max_attempts < 1) return bad("max_attempts must be at least 1");
  if (options.connect_timeout_ms < 1 || options.attempt_timeout_ms < 1)
    return bad("timeouts must be positive");
  std::string key;
  if (!options.api_key_env.empty()) {
    const char* v = std::getenv(options.api_key_env.c_str());
    if (v) key = v;
  }
  return std::unique_ptr<OpenAiPolicy>(new OpenAiPolicy(std::move(options), std::move(key)));
}

std::string OpenAiPolicy::describe() const {
  return "openai " + options_.base_url + " model=" + options_.model;
}

Expected<PolicyTurn> OpenAiPolicy::next(const PolicyRequest& request) {
  const std::string url = options_.base_url + "/chat/completions";
  const std::string body = openai_request_body(options_.model, request, options_.request_token_ids);
  std::vector<std::string> headers;
  if (!api_key_.empty()) headers.push_back("Authorization: Bearer " + api_key_);
  const std::int64_t deadline =
      request.deadline_unix_ms > 0
          ? request.deadline_unix_ms
          : now_unix_ms() + options_.attempt_timeout_ms * options_.max_attempts;
  thread_local std::mt19937_64 jitter{std::random_device{}()};
  std::int64_t backoff = options_.backoff_initial_ms;
  Error last = make_error(ErrorCategory::kTimeout, "policy.deadline",
                          "POST " + url + ": the deadline passed before the first attempt");
  for (std::int64_t attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    const std::int64_t left = deadline - now_unix_ms();
    if (left <= 0) break;
    HttpTimeouts t{.connect_ms = std::min(options_.connect_timeout_ms, left),
                   .total_ms = std::min(options_.attempt_timeout_ms, left)};
    auto r = http_post_json(url, body, headers, t);
    std::int64_t wait = backoff;
    if (!r) {
      if (r.error().code == "http.url") return r.error();
      last = r.error();
    } else if (r->status >= 200 && r->status < 300) {
      auto turn = parse_openai_reply(r->body);
      if (turn && turn->policy_version.empty()) turn->policy_version = options_.model;
      return turn;
    } else if (retryable_status(r->status)) {
      last = make_error(ErrorCategory::kUnavailable, "policy.http_" + std::to_string(r->status),
                        "POST " + url + " answered " + std::to_string(r->status) + ": " +
                            server_message(r->body));
      if (r->retry_after_ms >= 0) wait = r->retry_after_ms;
    } else {
      const auto category = r->status == 401 || r->status == 403 || r->status == 400 ||
                                    r->status == 404 || r->status == 422
                                ? ErrorCategory::kInvalidInput
                                : ErrorCategory::kUnavailable;
      const bool context = r->status == 400 && context_limit_refusal(r->body);
      return make_error(
          category,
          context ? std::string(kPolicyContextLimit) : "policy.http_" + std::to_string(r->status),
          "POST " + url + " answered " + std::to_string(r->status) + ": " +
              server_message(r->body));
    }
    if (attempt == options_.max_attempts) break;
    wait = std::min(wait, options_.backoff_max_ms);
    wait += static_cast<std::int64_t>(jitter() % static_cast<std::uint64_t>(wait / 4 + 1));
    if (now_unix_ms() + wait >= deadline) break;
    log_warn("policy request failed; retrying", {{"attempt", std::to_string(attempt)},
                                                 {"wait_ms", std::to_string(wait)},
                                                 {"error", last.to_string()}});
    std::this_thread::sleep_for(std::chrono::milliseconds(wait));  // backoff between attempts
    backoff = std::min(backoff * 2, options_.backoff_max_ms);
  }
  last.message += " (gave up after the attempts or deadline of " + describe() + ")";
  return last;
}

}  // namespace cuda_agent
