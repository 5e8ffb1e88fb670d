// The policy behind an episode (DESIGN.md section 6): given the conversation so far and the tools,
// the next assistant turn. One interface, several backends:
//  - OpenAiPolicy (rollout/openai_policy.h): an OpenAI-compatible chat-completions endpoint with
//    tool calling (vLLM, SGLang, a hosted API), for evaluation and data collection;
//  - ReplayPolicy (rollout/replay_policy.h): plays back a recorded transcript, for tests and for
//    reproducing an episode;
//  - the in-process libtorch engine (model/), which also returns token ids and logprobs.
//
//   std::unique_ptr<PolicyBackend> policy = ...;
//   Expected<PolicyTurn> turn = policy->next({.messages = history, .tools = tools, ...});
//
// A backend error (endpoint down after its retries, a malformed reply, the transcript ran out) is
// an Error; what the *model* got wrong (a tool call whose arguments are not JSON, an unknown tool)
// is not: it comes back in the turn and the episode answers it with an error observation.
//
// Threading: next() may be called from several episodes' threads at once on one backend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/chat_format.h"

namespace cuda_agent {

/// A tool the model may call: its JSON-schema description, as in the chat-completions `tools`.
struct PolicyTool {
  std::string name;
  std::string description;
  std::string parameters_json = R"({"type":"object","properties":{}})";  ///< a JSON schema
};

struct PolicyRequest {
  std::vector<ChatMessage> messages;  ///< system, user, assistant and tool messages, in order
  std::vector<PolicyTool> tools;
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t max_new_tokens = 8192;
  std::uint64_t seed = 0;             ///< 0: none requested
  std::int64_t deadline_unix_ms = 0;  ///< the turn must be back by then; 0: the backend's timeout
  /// The conversation through the last assistant turn as the exact ids the model saw and
  /// sampled, when earlier turns were token-exact; else empty. A backend that takes them
  /// (cuda-agent-engine's `context_token_ids`) appends only the new messages, so the history is
  /// never re-tokenized.
  std::vector<std::int32_t> context_token_ids;
};

/// One assistant turn.
struct PolicyTurn {
  std::string content;                    ///< prose outside tool calls (may be empty)
  std::vector<ChatToolCall> tool_calls;   ///< as the model wrote them; arguments may be bad JSON
  std::vector<ToolCallProblem> problems;  ///< tool-call blocks that could not be read at all
  std::string finish_reason;              ///< "stop", "tool_calls", "length", ...
  std::vector<std::int32_t> token_ids;    ///< sampled ids when the backend knows them, else empty
  std::vector<float> logprobs;            ///< one per token id, when known
  std::int64_t prompt_tokens = 0;         ///< as reported by the backend; 0 when unknown
  std::int64_t completion_tokens = 0;
  std::string policy_version;  ///< which weights answered (model name, or engine version)
  /// The whole prompt the model was shown, as token ids, when the backend reports it
  /// (cuda-agent-engine's `prompt_token_ids`); else empty. run_episode stores the part of it
  /// that is new since the previous model turn (tool output, chat-template tokens) with loss
  /// mask 0, so the trajectory is the exact token sequence the model saw.
  std::vector<std::int32_t> prompt_token_ids;
  /// The weights versions the turn's first and last token were sampled under, when the backend
  /// reports them (cuda-agent-engine: they differ when new weights were swapped in mid-turn).
  std::optional<std::uint64_t> first_policy_version;
  std::optional<std::uint64_t> last_policy_version;
};

/// The error code of a policy call refused because prompt + max_tokens passes the model's context
/// (an OpenAI-compatible server's 400 "context_length_exceeded", our engine's
/// "engine.context_limit"). The episode then ends truncated, like one out of turns: the policy
/// used up its context, which says something about the policy, not the infrastructure.
inline constexpr std::string_view kPolicyContextLimit = "policy.context_limit";

class PolicyBackend {
 public:
  virtual ~PolicyBackend() = default;
  virtual Expected<PolicyTurn> next(const PolicyRequest& request) = 0;
  /// For logs and reports: "openai http://host:8000/v1 model=qwen", "replay FILE".
  virtual std::string describe() const = 0;
};

/// When `turn` has no tool calls but its content holds Qwen-style <tool_call> blocks (a server or
/// transcript without a tool-call parser), moves them into tool_calls / problems and leaves the
/// rest of the text as content.
void take_tool_calls_from_text(PolicyTurn& turn);

}  // namespace cuda_agent
