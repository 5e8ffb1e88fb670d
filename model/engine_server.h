// The policy engine's HTTP service (`cuda-agent serve policy-engine`, the cuda-agent-engine
// binary): an OpenAI-compatible server over one EngineCore (model/engine_server_core.h), with
// cpp-httplib (Debian's libcpp-httplib-dev). Torch-free header and implementation.
//
//   ASSIGN_OR_RETURN(auto server, EngineServer::create({.core = {.model_dir = dir}, .port = 0}));
//   RETURN_IF_ERROR(server->start());          // listens on its own thread
//   ... POST http://127.0.0.1:<server->port()>/v1/chat/completions ...
//   server->drain();                           // SIGTERM: no new requests, finish the running
//
// Endpoints (bodies are JSON; errors are {"error": {"category", "code", "type", "message",
// "param"?, ...}} with the status below):
//  - POST /v1/completions: `prompt` as text, token ids, or a one-element array of either.
//  - POST /v1/chat/completions: `messages` (system, user, assistant with `tool_calls`, tool) and
//    `tools`, rendered with the model's chat format (model/chat_format.h) plus the generation
//    prompt; the reply's tool calls are parsed in that format and returned as OpenAI
//    `tool_calls` (finish_reason "tool_calls"); a reply with a malformed <tool_call> block comes
//    back as plain content, for the client's own parser to report.
//    Sampling (both): max_tokens (or max_completion_tokens; default: what is left of the
//    context), temperature (1), top_p (1), top_k (0 or negative: off), seed (default: random),
//    stop (a string or strings), and the vLLM extensions stop_token_ids, ignore_eos (no default
//    stop tokens: config.json's eos and <|im_end|>, <|endoftext|>). `n` must be 1; `stream` is
//    refused.
//    `context_token_ids` (cuda-agent's extension, chat only): the conversation up to the end of
//    the last assistant message as the exact ids the model saw and sampled (the previous reply's
//    prompt_token_ids + token_ids); the prompt is then those ids verbatim followed by only the
//    messages after the last assistant message (ChatFormat::render_continuation), so a
//    multi-turn history is never re-tokenized (DESIGN.md section 6).
//    Token-exact fields, always present: `prompt_token_ids` (top level: the ids the model saw),
//    choices[0].`token_ids` (the sampled ids verbatim, the stop token included),
//    choices[0].`first_policy_version` / `last_policy_version` (the weights the first and last
//    token were sampled under), top-level `policy_version` (the engine's version when the reply
//    was made). With `logprobs` (chat: true; completions: a number or true) the log-probs come
//    as OpenAI has them, choices[0].logprobs.content[k] = {"token", "logprob"} (chat) or
//    choices[0].logprobs.{tokens, token_logprobs} (completions); with
//    `return_tokens_as_token_ids` the token is "token_id:N" (vLLM's form, what
//    rollout/openai_policy.cpp reads). `model` in the reply is the served model name.
//    Statuses: 400 bad JSON or a bad field (code "engine.bad_request", `param` names it), 400
//    "engine.context_limit" (prompt + max_tokens over the limit; `limit`, `prompt_tokens`,
//    `max_tokens` given), 503 "engine.draining" / "engine.failed". Generation runs after the
//    200 header is sent (chunked body): a failure after that (drain deadline, request timeout,
//    engine failure) is an {"error": ...} body with status 200.
//  - GET /health: {"status": "ok"|"draining"|"failed", "model", "policy_version",
//    "queue_depth", "running", "slots", "max_seq_len", "steps", "max_running",
//    "tokens_generated", "requests_done", "requests_cancelled", "swaps",
//    "last_swap_pause_ms"}; 503 when failed.
//  - GET /v1/models: the one served model.
//  - POST /v1/weights/load {"path": checkpoint dir, "version": N}: loads and swaps in the
//    weights (EngineCore::load_weights); 200 {"version", "previous_version", "load_ms",
//    "pause_ms", "swap_ms", "step_before_ms"} (WeightSwapReport); 409 "engine.stale_version" for a
//    version not newer than the current; 400/404 for a bad body or checkpoint.
//
// A client that disconnects: its handler notices at its next poll (every 20 ms, cpp-httplib's
// DataSink::is_writable peeks the socket) and cancels the job, which frees its slot.
//
// Threading: create/start/drain/stop from one owner thread; handlers run on the server's pool
// (http_threads; each waiting request holds one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "model/engine_server_core.h"

namespace cuda_agent {

struct EngineServerOptions {
  EngineCoreOptions core;
  /// Address to listen on. Default: 127.0.0.1.
  std::string host = "127.0.0.1";
  /// Port; 0: any free port (see port()). Default: 8000.
  int port = 8000;
  /// The `model` of replies and /health. Empty: the model directory's name.
  std::string model_name;
  /// A request not answered by then is cancelled and answered with "engine.timeout".
  std::int64_t request_timeout_ms = 600'000;
  /// drain() waits this long for running requests, then ends them ("engine.drain_deadline").
  std::int64_t drain_timeout_ms = 60'000;
  /// Handler threads; 0: 2 x max_batch + 16 (every waiting request holds one).
  int http_threads = 0;
};

/// The `message` of a chat reply for generated assistant `text` (without <|im_end|>), as JSON
/// text: {"role": "assistant", "content", "tool_calls"?, "reasoning_content"?}. Tool calls are
/// parsed in the model's format (parse_assistant), with ids "call_<request_id>_<k>" and their
/// arguments as text; content is null when there is only calls. A text with a malformed
/// <tool_call> block is returned whole as content (no tool_calls), for the client's own parser
/// to report. `has_tool_calls` (may be null) says whether tool_calls is there.
std::string engine_chat_message_json(std::string_view text, std::uint64_t request_id,
                                     bool* has_tool_calls = nullptr);

class EngineServer {
 public:
  /// Loads the model (EngineCore::create) and binds the port. Errors: the core's, and
  /// kUnavailable "engine.bind" when the port cannot be bound.
  static Expected<std::unique_ptr<EngineServer>> create(const EngineServerOptions& options);
  ~EngineServer();

  /// Serves on a thread of its own.
  Status start();
  /// No new requests from now on (503); waits up to drain_timeout_ms for queued and running ones
  /// to be answered, ends the rest, then stops listening. True when all finished in time.
  bool drain();
  /// Stops listening at once (running requests end with "engine.stopped").
  void stop();

  int port() const { return port_; }
  const std::string& model_name() const { return model_name_; }
  EngineCore& core() { return *core_; }

 private:
  struct Http;  // cpp-httplib's server and the handlers (engine_server.cpp)
  EngineServer() = default;
  std::unique_ptr<EngineCore> core_;
  std::unique_ptr<Http> http_;
  int port_ = 0;
  std::string model_name_;
};

}  // namespace cuda_agent
