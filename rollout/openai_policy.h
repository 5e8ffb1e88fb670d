// A policy behind an OpenAI-compatible chat-completions endpoint with tool calling: vLLM, SGLang,
// llama.cpp's server, or a hosted API.
//
//   OpenAiPolicyOptions o{.base_url = "http://127.0.0.1:8000/v1", .model = "Qwen/Qwen3-8B"};
//   ASSIGN_OR_RETURN(auto policy, OpenAiPolicy::create(o));   // reads the key from the environment
//   Expected<PolicyTurn> turn = policy->next(request);
//
// Wire format: POST {base_url}/chat/completions with `model`, `messages` (assistant tool calls
// get positional ids `call_<message>_<k>`, and the k-th tool message after them answers the k-th
// call), `tools` (type function), `temperature`, `top_p`, `max_tokens` and `seed`. The reply's
// first choice gives the content, the tool calls (name and arguments text, kept as written even
// when they are not JSON: that is the model's mistake for the episode to answer) and the finish
// reason; `usage` gives the token counts. A server without a tool-call parser that returns
// Qwen-style `<tool_call>` blocks in the content is read with model/chat_format.h's parser.
//
// Token-exact turns (request_token_ids): from vLLM, the "token_id:N" tokens of
// choices[0].logprobs.content give the sampled ids and their logprobs. From cuda-agent-engine
// (model/engine_server.h) also: choices[0].token_ids (the sampled ids verbatim, taken over the
// logprobs' names, which must then agree and be one per id), top-level prompt_token_ids (the ids
// the model was shown: run_episode stores what is new in them with loss mask 0), and
// choices[0].first_policy_version / last_policy_version (the weights the turn was sampled under:
// the turn's policy version). Together they make the stored episode what
// learner/train_sequence.h trains on: prompt and tool tokens with mask 0, sampled tokens with
// mask 1 and their logprobs.
//
// Multi-turn token-exact episodes send `context_token_ids` (PolicyRequest::context_token_ids,
// cuda-agent-engine's extension): the engine then appends only the new messages to those ids
// instead of re-rendering and re-tokenizing the history.
//
// Retries: connection failures, timeouts of one attempt, and statuses 408, 409, 429, 500, 502,
// 503 and 504 are retried with exponential backoff and jitter (a Retry-After header is honoured),
// up to max_attempts and never past the request's deadline. Other statuses fail at once with
// code "policy.http_<status>" and the server's error message. A 2xx reply that does not have the
// documented shape fails with "policy.malformed_reply" naming the JSON path that is wrong.
//
// Threading: next() is safe from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rollout/policy.h"

namespace cuda_agent {

struct OpenAiPolicyOptions {
  std::string base_url;                        ///< up to and including /v1. Required.
  std::string model;                           ///< the `model` field. Required.
  std::string api_key_env = "OPENAI_API_KEY";  ///< variable holding the key; unset: no auth header
  std::int64_t connect_timeout_ms = 10'000;
  std::int64_t attempt_timeout_ms = 600'000;  ///< one HTTP attempt
  std::int64_t max_attempts = 5;
  std::int64_t backoff_initial_ms = 500;
  std::int64_t backoff_max_ms = 30'000;
  /// Asks for the sampled token ids and their logprobs (`logprobs: true` and vLLM's
  /// `return_tokens_as_token_ids: true`), so the turn is token-in-token-out without
  /// re-tokenizing text. A server without that extension sends token text ("def"), not
  /// "token_id:N": the turn then has no ids. Default: false (hosted APIs reject the extension).
  bool request_token_ids = false;
};

class OpenAiPolicy final : public PolicyBackend {
 public:
  /// Checks the options (bad ones: kInvalidInput "policy.options" naming the field).
  static Expected<std::unique_ptr<OpenAiPolicy>> create(OpenAiPolicyOptions options);
  Expected<PolicyTurn> next(const PolicyRequest& request) override;
  std::string describe() const override;

 private:
  OpenAiPolicy(OpenAiPolicyOptions options, std::string api_key)
      : options_(std::move(options)), api_key_(std::move(api_key)) {}
  OpenAiPolicyOptions options_;
  std::string api_key_;
};

/// The request body for `request` (exposed for tests and for logging what was sent);
/// `request_token_ids` as in OpenAiPolicyOptions.
std::string openai_request_body(const std::string& model, const PolicyRequest& request,
                                bool request_token_ids = false);

/// Reads a chat-completions reply body. `choices[0].token_ids` (cuda-agent-engine) or else
/// `choices[0].logprobs.content`, when every entry's token is vLLM's "token_id:N", gives
/// token_ids; the content gives their logprobs; the engine's prompt_token_ids and
/// first/last_policy_version are read when present. Errors: "policy.malformed_reply" naming the
/// JSON path (also for logprobs that do not match the engine's token_ids).
Expected<PolicyTurn> parse_openai_reply(const std::string& body);

}  // namespace cuda_agent
