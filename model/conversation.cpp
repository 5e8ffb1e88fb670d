#include "model/conversation.h"

namespace cuda_agent {
namespace {

Error conversation_error(std::string code, std::string message) {
  return make_error(ErrorCategory::kInvalidInput, "conversation." + code, std::move(message));
}

}  // namespace

Expected<Conversation> Conversation::start(const ChatFormat& format,
                                           std::optional<std::string_view> system,
                                           std::span<const std::string> tools_json) {
  Conversation c(format);
  ASSIGN_OR_RETURN(c.newline_, format.tokenizer().encode("\n"));
  ASSIGN_OR_RETURN(std::string text, format.render_system(system, tools_json));
  if (!text.empty()) RETURN_IF_ERROR(c.append_text(ChatRole::kSystem, text));
  return c;
}

void Conversation::push(TokenId id, std::uint8_t mask) {
  ids_.push_back(id);
  mask_.push_back(mask);
}

Status Conversation::append_text(ChatRole role, const std::string& text) {
  if (open_) {
    return conversation_error("turn_open",
                              "an assistant turn is open; append the sampled tokens and its "
                              "<|im_end|> (or close_truncated_turn) first");
  }
  ASSIGN_OR_RETURN(std::vector<TokenId> ids, format_.tokenizer().encode(text));
  ConversationTurn turn{.role = role, .begin = ids_.size()};
  for (TokenId id : ids) push(id, 0);
  turn.end = ids_.size();
  turns_.push_back(turn);
  return Status::ok();
}

Status Conversation::append_message(const ChatMessage& message) {
  return append_text(message.role, format_.render_message(message));
}

Status Conversation::append_tool_results(std::span<const std::string> results) {
  return append_text(ChatRole::kTool, format_.render_tool_results(results));
}

Status Conversation::append_generation_prompt() {
  RETURN_IF_ERROR(append_text(ChatRole::kAssistant, std::string(ChatFormat::kGenerationPrompt)));
  ConversationTurn& turn = turns_.back();
  turn.sampled = true;
  turn.sampled_begin = turn.sampled_end = turn.end;
  open_ = true;
  return Status::ok();
}

Status Conversation::append_sampled(std::span<const TokenId> ids) {
  if (!open_) {
    return conversation_error("no_open_turn",
                              "sampled tokens need an open turn: append_generation_prompt first");
  }
  const Tokenizer& tok = format_.tokenizer();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= tok.vocab_size() || !tok.id_to_token(ids[i])) {
      return conversation_error(
          "bad_id", "sampled id " + std::to_string(ids[i]) + " is not in the vocabulary");
    }
    if (ids[i] == format_.im_end() && i + 1 != ids.size()) {
      return conversation_error("after_end", std::to_string(ids.size() - i - 1) +
                                                 " sampled ids follow <|im_end|>; cut at the "
                                                 "stop token");
    }
  }
  ConversationTurn& turn = turns_.back();
  for (TokenId id : ids) push(id, 1);
  turn.sampled_end = turn.end = ids_.size();
  if (!ids.empty() && ids.back() == format_.im_end()) {
    for (TokenId id : newline_) push(id, 0);
    turn.end = ids_.size();
    open_ = false;
  }
  return Status::ok();
}

Status Conversation::close_truncated_turn() {
  if (!open_) return Status::ok();
  push(format_.im_end(), 0);
  for (TokenId id : newline_) push(id, 0);
  turns_.back().end = ids_.size();
  open_ = false;
  return Status::ok();
}

Expected<std::string> Conversation::sampled_text(std::size_t turn_index) const {
  if (turn_index >= turns_.size() || !turns_[turn_index].sampled) {
    return conversation_error("not_sampled",
                              "turn " + std::to_string(turn_index) + " is not a sampled turn");
  }
  const ConversationTurn& t = turns_[turn_index];
  std::size_t end = t.sampled_end;
  if (end > t.sampled_begin && ids_[end - 1] == format_.im_end()) --end;
  return format_.tokenizer().decode(
      std::span<const TokenId>(ids_.data() + t.sampled_begin, end - t.sampled_begin));
}

}  // namespace cuda_agent
