#include "model/chat_format.h"

#include <nlohmann/json.hpp>

namespace cuda_agent {
namespace {

using ordered = nlohmann::ordered_json;

constexpr std::string_view kToolsHeader =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsFooter =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>";

void dump_python(const ordered& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += ordered(it.key()).dump(-1, ' ', false, ordered::error_handler_t::replace);
      out += ": ";
      dump_python(it.value(), out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      dump_python(j[i], out);
    }
    out += ']';
  } else {
    out += j.dump(-1, ' ', false, ordered::error_handler_t::replace);
  }
}

// Parses JSON without exceptions leaving this file; `error` gets the parser's message.
bool parse_json(std::string_view text, ordered& out, std::string& error) {
  try {
    out = ordered::parse(text);
    return true;
  } catch (const ordered::exception& e) {
    error = e.what();
    return false;
  }
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string role_name(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem: return "system";
    case ChatRole::kUser: return "user";
    case ChatRole::kAssistant: return "assistant";
    case ChatRole::kTool: return "tool";
  }
  return "user";
}

Expected<std::string> python_json_dumps(std::string_view json_text) {
  ordered j;
  std::string error;
  if (!parse_json(json_text, j, error))
    return make_error(ErrorCategory::kInvalidInput, "chat.bad_json", error);
  std::string out;
  dump_python(j, out);
  return out;
}

Expected<ChatFormat> ChatFormat::create(std::shared_ptr<const Tokenizer> tokenizer,
                                        ChatFormatOptions options) {
  ChatFormat f;
  for (auto [name, id] : {std::pair{"<|im_start|>", &f.im_start_}, {"<|im_end|>", &f.im_end_}}) {
    std::optional<TokenId> t = tokenizer->token_to_id(name);
    if (!t) {
      return make_error(ErrorCategory::kInvalidInput, "chat.missing_token",
                        tokenizer->origin() + ": no token " + name + " for the ChatML format");
    }
    *id = *t;
  }
  f.tokenizer_ = std::move(tokenizer);
  f.options_ = std::move(options);
  return f;
}

Expected<std::string> ChatFormat::render_system(std::optional<std::string_view> system,
                                                std::span<const std::string> tools_json) const {
  std::string_view prompt = system ? *system : std::string_view(options_.default_system_prompt);
  bool none = !system && prompt.empty();  // no system message and no default (Qwen3)
  if (tools_json.empty()) {
    if (none) return std::string();
    return "<|im_start|>system\n" + std::string(prompt) + "<|im_end|>\n";
  }
  std::string out = "<|im_start|>system\n" + std::string(prompt);
  // Qwen3's template, with no system message, starts the tools block without the gap.
  out += none ? kToolsHeader.substr(2) : kToolsHeader;
  for (std::size_t i = 0; i < tools_json.size(); ++i) {
    ordered j;
    std::string error;
    if (!parse_json(tools_json[i], j, error) || !j.is_object()) {
      return make_error(ErrorCategory::kInvalidInput, "chat.bad_tool",
                        "tool " + std::to_string(i) + " is not a JSON object" +
                            (error.empty() ? "" : ": " + error));
    }
    out += '\n';
    dump_python(j, out);
  }
  out += kToolsFooter;
  out += "<|im_end|>\n";
  return out;
}

std::string ChatFormat::render_message(const ChatMessage& m) const {
  if (m.role == ChatRole::kTool) return render_tool_results(std::span(&m.content, 1));
  if (m.role != ChatRole::kAssistant || m.tool_calls.empty())
    return "<|im_start|>" + role_name(m.role) + "\n" + m.content + "<|im_end|>\n";
  std::string out = "<|im_start|>assistant";
  if (!m.content.empty()) out += "\n" + m.content;
  for (const ChatToolCall& call : m.tool_calls) {
    out += "\n<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": ";
    ordered args;
    std::string error;
    if (parse_json(call.arguments_json, args, error)) {
      dump_python(args, out);
    } else {
      dump_python(ordered(call.arguments_json), out);  // `tojson` of a string
    }
    out += "}\n</tool_call>";
  }
  out += "<|im_end|>\n";
  return out;
}

std::string ChatFormat::render_tool_results(std::span<const std::string> results) const {
  std::string out = "<|im_start|>user";
  for (const std::string& r : results) out += "\n<tool_response>\n" + r + "\n</tool_response>";
  out += "<|im_end|>\n";
  return out;
}

Expected<std::string> ChatFormat::render(std::span<const ChatMessage> messages,
                                         std::span<const std::string> tools_json,
                                         bool add_generation_prompt) const {
  std::size_t first = 0;
  std::optional<std::string_view> system;
  if (!messages.empty() && messages[0].role == ChatRole::kSystem) {
    system = messages[0].content;
    first = 1;
  }
  ASSIGN_OR_RETURN(std::string out, render_system(system, tools_json));
  out += render_turns(messages, first);
  if (add_generation_prompt) out += kGenerationPrompt;
  return out;
}

std::string ChatFormat::render_turns(std::span<const ChatMessage> messages,
                                     std::size_t first) const {
  std::string out;
  for (std::size_t i = first; i < messages.size();) {
    if (messages[i].role != ChatRole::kTool) {
      out += render_message(messages[i++]);
      continue;
    }
    std::vector<std::string> results;
    for (; i < messages.size() && messages[i].role == ChatRole::kTool; ++i)
      results.push_back(messages[i].content);
    out += render_tool_results(results);
  }
  return out;
}

std::string ChatFormat::render_continuation(std::span<const ChatMessage> messages,
                                            bool ended_with_im_end,
                                            bool add_generation_prompt) const {
  std::string out = ended_with_im_end ? "\n" : "<|im_end|>\n";
  out += render_turns(messages, 0);
  if (add_generation_prompt) out += kGenerationPrompt;
  return out;
}

std::string_view to_string(ToolCallProblemKind kind) {
  switch (kind) {
    case ToolCallProblemKind::kUnterminated: return "unterminated";
    case ToolCallProblemKind::kMalformedJson: return "malformed_json";
    case ToolCallProblemKind::kMissingName: return "missing_name";
    case ToolCallProblemKind::kBadArguments: return "bad_arguments";
  }
  return "unknown";
}

ParsedAssistant parse_assistant(std::string_view text) {
  constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  constexpr std::string_view kThink = "<think>", kThinkEnd = "</think>";
  ParsedAssistant out;
  std::string content;
  std::size_t pos = 0;
  std::size_t think = text.find(kThink);
  std::size_t think_end = text.find(kThinkEnd);
  if (think_end != std::string_view::npos) {
    std::size_t from =
        think != std::string_view::npos && think < think_end ? think + kThink.size() : 0;
    out.reasoning = std::string(trim(text.substr(from, think_end - from)));
    pos = think_end + kThinkEnd.size();
  } else if (think != std::string_view::npos && trim(text.substr(0, think)).empty()) {
    out.reasoning = std::string(trim(text.substr(think + kThink.size())));
    return out;
  }
  while (pos <= text.size()) {
    std::size_t open = text.find(kOpen, pos);
    content += text.substr(pos, open == std::string_view::npos ? text.size() - pos : open - pos);
    if (open == std::string_view::npos) break;
    std::size_t body = open + kOpen.size();
    std::size_t close = text.find(kClose, body);
    if (close == std::string_view::npos) {
      out.problems.push_back(
          {ToolCallProblemKind::kUnterminated, open,
           "<tool_call> at byte " + std::to_string(open) + " has no </tool_call>"});
      break;
    }
    pos = close + kClose.size();
    auto problem = [&](ToolCallProblemKind kind, std::string message) {
      out.problems.push_back(
          {kind, open, "tool call at byte " + std::to_string(open) + ": " + std::move(message)});
    };
    ordered call;
    std::string error;
    if (!parse_json(trim(text.substr(body, close - body)), call, error) || !call.is_object()) {
      problem(ToolCallProblemKind::kMalformedJson,
              error.empty() ? "not a JSON object" : "not valid JSON: " + error);
      continue;
    }
    auto name = call.find("name");
    if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) {
      problem(ToolCallProblemKind::kMissingName, "no \"name\" string");
      continue;
    }
    auto args = call.find("arguments");
    ordered arguments;
    if (args != call.end() && args->is_string()) {
      std::string ignored;
      if (!parse_json(args->get<std::string>(), arguments, ignored)) arguments = nullptr;
    } else if (args != call.end()) {
      arguments = *args;
    }
    if (!arguments.is_object()) {
      problem(ToolCallProblemKind::kBadArguments, "\"arguments\" is not a JSON object");
      continue;
    }
    out.tool_calls.push_back({name->get<std::string>(), arguments.dump()});
  }
  out.content = std::string(trim(content));
  return out;
}

}  // namespace cuda_agent
