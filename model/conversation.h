// A conversation as token ids that only ever grow: history is never re-tokenized (DESIGN.md
// section 6). New messages are rendered (model/chat_format.h) and only the new piece is encoded;
// tokens the model sampled are appended exactly as sampled, even where encoding their text
// would give other ids. Every token carries a loss mask (1 = sampled by the model, 0 = anything
// else) and belongs to a turn.
//
//   ASSIGN_OR_RETURN(Conversation c, Conversation::start(format, system_prompt, tools));
//   RETURN_IF_ERROR(c.append_message({ChatRole::kUser, task_prompt}));
//   c.append_generation_prompt();                        // <|im_start|>assistant\n, mask 0
//   RETURN_IF_ERROR(c.append_sampled(sampled_ids));      // mask 1; closes at <|im_end|>
//   ParsedAssistant reply = parse_assistant(*c.sampled_text(c.turns().size() - 1));
//   RETURN_IF_ERROR(c.append_tool_results({result_text}));
//
// Encoding the pieces one by one gives the same ids as encoding the whole rendered text, since
// every piece starts at <|im_start|> and ends after <|im_end|>\n, and added tokens bound the BPE
// (a test checks this).
//
// Threading: not thread-safe; one owner (the episode) appends. Copies are independent.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "model/chat_format.h"

namespace cuda_agent {

/// Tokens [begin, end) of one turn. For a sampled assistant turn, [sampled_begin, sampled_end)
/// are the model's tokens (mask 1); the generation prompt before and the closing "\n" (or
/// "<|im_end|>\n" after a truncated turn) are not.
struct ConversationTurn {
  ChatRole role = ChatRole::kUser;
  std::size_t begin = 0;
  std::size_t end = 0;
  bool sampled = false;
  std::size_t sampled_begin = 0;
  std::size_t sampled_end = 0;
};

class Conversation {
 public:
  /// Starts with the system turn (the system prompt, nullopt for the default, and the tools
  /// block; see ChatFormat::render_system). Errors: a tool that is not a JSON object; tokenizer
  /// errors.
  static Expected<Conversation> start(const ChatFormat& format,
                                      std::optional<std::string_view> system,
                                      std::span<const std::string> tools_json);

  /// Appends a rendered user, system or assistant message (mask 0: text the model did not
  /// sample) or a single tool result. Errors: kInvalidInput "conversation.turn_open" while a
  /// generated turn is open; tokenizer errors (invalid UTF-8).
  Status append_message(const ChatMessage& message);
  /// Appends consecutive tool results as one user turn of <tool_response> blocks.
  Status append_tool_results(std::span<const std::string> results);
  /// Appends "<|im_start|>assistant\n" (mask 0) and opens an assistant turn for sampled tokens.
  /// Errors: "conversation.turn_open" when one is open already.
  Status append_generation_prompt();
  /// Appends sampled ids verbatim (mask 1) to the open turn; may be called repeatedly as tokens
  /// stream in. An <|im_end|> closes the turn (then "\n", mask 0, as the template has it) and
  /// must be the last id. Errors: "conversation.no_open_turn", "conversation.after_end", an id
  /// outside the vocabulary ("conversation.bad_id").
  Status append_sampled(std::span<const TokenId> ids);
  /// Closes an open turn the model did not finish (token budget): appends "<|im_end|>\n"
  /// (mask 0). No-op when no turn is open.
  Status close_truncated_turn();

  /// The decoded bytes of a sampled turn's model tokens, without its <|im_end|>.
  Expected<std::string> sampled_text(std::size_t turn_index) const;

  const std::vector<TokenId>& ids() const { return ids_; }
  const std::vector<std::uint8_t>& loss_mask() const { return mask_; }
  const std::vector<ConversationTurn>& turns() const { return turns_; }
  bool turn_open() const { return open_; }

 private:
  explicit Conversation(const ChatFormat& format) : format_(format) {}
  Status append_text(ChatRole role, const std::string& text);
  void push(TokenId id, std::uint8_t mask);

  ChatFormat format_;
  std::vector<TokenId> ids_;
  std::vector<std::uint8_t> mask_;
  std::vector<ConversationTurn> turns_;
  bool open_ = false;
  std::vector<TokenId> newline_;  // the ids of "\n"
};

}  // namespace cuda_agent
