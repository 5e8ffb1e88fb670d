// The chat format of ChatML models with Qwen2.5's tool calling, rendered as its Hugging Face
// chat template does, and the parser for tool calls in generated text.
//
//   <|im_start|>system\n{system}\n\n# Tools\n\nYou may call one or more functions ...
//   <tools>\n{tool json}\n...</tools>\n\nFor each function call, ...<|im_end|>\n
//   <|im_start|>user\n{content}<|im_end|>\n
//   <|im_start|>assistant\n{content}\n<tool_call>\n{"name": "f", "arguments": {...}}\n
//   </tool_call><|im_end|>\n
//   <|im_start|>user\n<tool_response>\n{result}\n</tool_response>\n<tool_response>...
//   </tool_response><|im_end|>\n
//   <|im_start|>assistant\n            <- the generation prompt
//
// JSON inside the prompt (tool signatures, call arguments) is written as Python's json.dumps
// writes it (", " and ": " separators, non-ASCII kept), which is what the template's `tojson`
// produces. Numbers are written by nlohmann::json; a float whose Python repr differs (rare) would
// differ here.
//
// Conversations that only ever append tokens are in model/conversation.h.
//
// Threading: ChatFormat is immutable after `create`; share it freely. The free functions are
// pure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "model/tokenizer.h"

namespace cuda_agent {

/// Who wrote a message. Numbered as messages/trajectory_codec.h's TurnRole.
enum class ChatRole : std::uint8_t { kSystem = 1, kUser = 2, kAssistant = 3, kTool = 4 };

/// A tool call as the prompt shows it and as the parser returns it.
struct ChatToolCall {
  std::string name;
  std::string arguments_json = "{}";  ///< a JSON object, as text
};

/// "system", "user", "assistant" or "tool": the role as chat templates and APIs spell it.
std::string role_name(ChatRole role);

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;
  std::vector<ChatToolCall> tool_calls;  ///< assistant messages only
};

struct ChatFormatOptions {
  /// System prompt when the conversation has none (Qwen2.5's default). Empty: no system turn
  /// unless there are tools (then the tools block alone), as Qwen3's template does.
  std::string default_system_prompt =
      "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
};

class ChatFormat {
 public:
  /// Errors: kInvalidInput "chat.missing_token" when the tokenizer has no <|im_start|> or
  /// <|im_end|>.
  static Expected<ChatFormat> create(std::shared_ptr<const Tokenizer> tokenizer,
                                     ChatFormatOptions options = {});

  /// The system turn: `system` (nullopt: the default prompt; an empty prompt stays empty, as
  /// the template renders an empty system message), then the tools block when `tools_json` (each
  /// a JSON object: a function signature) is not empty. Empty string when there is nothing to
  /// say (no system message, no default, no tools). Errors: a tool that is not a JSON object.
  Expected<std::string> render_system(std::optional<std::string_view> system,
                                      std::span<const std::string> tools_json) const;
  /// One user, assistant (with its tool calls) or later system message. Tool results go
  /// through `render_tool_results`.
  std::string render_message(const ChatMessage& message) const;
  /// Consecutive tool results: one user turn of <tool_response> blocks.
  std::string render_tool_results(std::span<const std::string> results) const;
  /// "<|im_start|>assistant\n".
  static constexpr std::string_view kGenerationPrompt = "<|im_start|>assistant\n";

  /// A whole conversation as `apply_chat_template(messages, tools, add_generation_prompt)`
  /// renders it with Qwen2.5's template: a leading system message becomes the system turn,
  /// consecutive tool messages share one user turn.
  Expected<std::string> render(std::span<const ChatMessage> messages,
                               std::span<const std::string> tools_json,
                               bool add_generation_prompt) const;

  /// What follows an assistant turn the model sampled (its ids ending with <|im_end|> when
  /// `ended_with_im_end`, else cut short) when `messages` (user and tool messages) come next:
  /// the rest of that turn's end ("\n", or "<|im_end|>\n" for a cut turn), the messages as
  /// render() renders them, and the generation prompt when asked. Appended to the exact ids of
  /// the conversation so far, it gives a prompt that never re-tokenizes the history.
  std::string render_continuation(std::span<const ChatMessage> messages, bool ended_with_im_end,
                                  bool add_generation_prompt) const;

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  TokenId im_start() const { return im_start_; }
  TokenId im_end() const { return im_end_; }

 private:
  ChatFormat() = default;
  /// messages[first..] as render() renders them after the system turn.
  std::string render_turns(std::span<const ChatMessage> messages, std::size_t first) const;
  std::shared_ptr<const Tokenizer> tokenizer_;
  ChatFormatOptions options_;
  TokenId im_start_ = 0;
  TokenId im_end_ = 0;
};

/// JSON text re-written as Python's json.dumps(x, ensure_ascii=False) writes it. Errors:
/// kInvalidInput "chat.bad_json" when `json_text` does not parse.
Expected<std::string> python_json_dumps(std::string_view json_text);

/// What is wrong with one <tool_call> block of generated text.
enum class ToolCallProblemKind : std::uint8_t {
  kUnterminated,   ///< <tool_call> without </tool_call>
  kMalformedJson,  ///< the block is not a JSON object
  kMissingName,    ///< no "name", or not a non-empty string
  kBadArguments,   ///< "arguments" missing, or not an object (nor a string holding one)
};
std::string_view to_string(ToolCallProblemKind kind);  // "unterminated", ...

struct ToolCallProblem {
  ToolCallProblemKind kind;
  std::size_t offset = 0;  ///< byte offset of the block's <tool_call> in the text
  std::string message;     ///< for the model and for people: what is wrong
};

/// An assistant reply split into reasoning, prose and tool calls.
struct ParsedAssistant {
  std::string reasoning;  ///< Qwen3-style <think>...</think> text, trimmed; tool calls in it
                          ///< do not count
  std::string content;    ///< text outside the reasoning and the tool-call blocks, trimmed
  std::vector<ChatToolCall> tool_calls;   ///< well-formed calls, in order
  std::vector<ToolCallProblem> problems;  ///< malformed blocks, in order
};

/// Parses generated assistant text (without <|im_end|>). Never fails: malformed blocks become
/// `problems` and parsing goes on after them; an unterminated block ends the parse. Reasoning is
/// what precedes "</think>" (after "<think>" if present; Qwen3's prompt may already hold the
/// opening tag), or all that follows a "<think>" that is never closed.
ParsedAssistant parse_assistant(std::string_view text);

}  // namespace cuda_agent
