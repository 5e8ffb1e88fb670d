#include "learner/corpus_sequences.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <utility>

namespace cuda_agent {
namespace {

using ordered = nlohmann::ordered_json;

Error bad_line(const std::string& where, const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "learner.bad_corpus_line", where + ": " + what);
}

// Parses without letting nlohmann's exceptions out; `error` gets the parser's message.
bool parse_json(std::string_view text, ordered& out, std::string& error) {
  try {
    out = ordered::parse(text);
    return true;
  } catch (const ordered::exception& e) {
    error = e.what();
    return false;
  }
}

// The string at j[key]; an error naming the field when it is missing or not a string (null is
// "" where `null_ok`).
Expected<std::string> string_field(const ordered& j, const char* key, const std::string& where,
                                   const std::string& at, bool null_ok = false) {
  auto it = j.find(key);
  if (it == j.end()) return bad_line(where, at + "no \"" + key + "\"");
  if (null_ok && it->is_null()) return std::string();
  if (!it->is_string()) return bad_line(where, at + "\"" + key + "\" is not a string");
  return it->get<std::string>();
}

Expected<double> optional_number(const ordered& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0.0;
  if (!it->is_number()) return bad_line(where, std::string("\"") + key + "\" is not a number");
  return it->get<double>();
}

Expected<ChatMessage> parse_message(const ordered& m, std::size_t i, const std::string& where) {
  const std::string at = "messages[" + std::to_string(i) + "]: ";
  if (!m.is_object()) return bad_line(where, at + "not a JSON object");
  ASSIGN_OR_RETURN(std::string role, string_field(m, "role", where, at));
  ChatMessage out;
  if (role == "user") {
    out.role = ChatRole::kUser;
  } else if (role == "assistant") {
    out.role = ChatRole::kAssistant;
  } else if (role == "tool") {
    out.role = ChatRole::kTool;
  } else {
    return bad_line(where, at + "unknown role \"" + role + "\" (user, assistant or tool)");
  }
  ASSIGN_OR_RETURN(out.content, string_field(m, "content", where, at,
                                             /*null_ok=*/out.role == ChatRole::kAssistant));
  auto calls = m.find("tool_calls");
  if (calls == m.end() || calls->is_null()) return out;
  if (out.role != ChatRole::kAssistant)
    return bad_line(where, at + "a " + role + " message has tool_calls");
  if (!calls->is_array()) return bad_line(where, at + "\"tool_calls\" is not an array");
  for (std::size_t k = 0; k < calls->size(); ++k) {
    const ordered& c = (*calls)[k];
    const std::string call_at = at + "tool_calls[" + std::to_string(k) + "]: ";
    if (!c.is_object()) return bad_line(where, call_at + "not a JSON object");
    ASSIGN_OR_RETURN(std::string name, string_field(c, "name", where, call_at));
    if (name.empty()) return bad_line(where, call_at + "empty \"name\"");
    auto args = c.find("arguments");
    if (args == c.end() || !args->is_object())
      return bad_line(where, call_at + "\"arguments\" is missing or not a JSON object");
    out.tool_calls.push_back({std::move(name), args->dump()});
  }
  return out;
}

// Messages in the order an episode produces them: the task prompt, then turns each answered by
// tool results (the last one may stand alone).
Status check_order(const std::vector<ChatMessage>& messages, const std::string& where) {
  if (messages.empty()) return bad_line(where, "\"messages\" is empty");
  if (messages[0].role != ChatRole::kUser)
    return bad_line(where, "messages[0] is not the user message (the task prompt)");
  bool assistant = false;
  for (std::size_t i = 1; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]: ";
    const ChatRole prev = messages[i - 1].role;
    switch (messages[i].role) {
      case ChatRole::kUser:
        return bad_line(where, at + "a second user message (an episode has only the task prompt)");
      case ChatRole::kTool:
        if (prev == ChatRole::kUser)
          return bad_line(where, at + "a tool message before any assistant message");
        break;
      case ChatRole::kAssistant:
        if (prev == ChatRole::kAssistant)
          return bad_line(where, at + "an assistant message right after another (an episode "
                                      "answers every turn with tool results)");
        assistant = true;
        break;
      default: return bad_line(where, at + "unexpected role");
    }
  }
  if (!assistant) return bad_line(where, "no assistant message: nothing to train on");
  return Status::ok();
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The generated text must read back as the message: the same calls in order, the same prose.
Status check_round_trip(const std::string& text, const ChatMessage& m, std::size_t i,
                        const std::string& where) {
  const std::string at = "messages[" + std::to_string(i) + "]: ";
  const ParsedAssistant parsed = parse_assistant(text);
  if (!parsed.problems.empty())
    return bad_line(where, at + "its text has a tool-call block that does not parse: " +
                               parsed.problems[0].message);
  if (!parsed.reasoning.empty())
    return bad_line(where, at + "its content holds <think> reasoning, which an episode never "
                                "shows the model again");
  if (parsed.tool_calls.size() != m.tool_calls.size())
    return bad_line(where, at + "its text parses to " + std::to_string(parsed.tool_calls.size()) +
                               " tool calls, not " + std::to_string(m.tool_calls.size()) +
                               " (is there a <tool_call> tag in the content?)");
  for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
    if (parsed.tool_calls[k].name != m.tool_calls[k].name ||
        parsed.tool_calls[k].arguments_json != m.tool_calls[k].arguments_json)
      return bad_line(where, at + "tool call " + std::to_string(k) + " (" + m.tool_calls[k].name +
                                 ") does not parse back to itself from the generated text");
  }
  if (parsed.content != trim(m.content))
    return bad_line(where,
                    at + "its content does not parse back to itself (tool-call tags in it?)");
  return Status::ok();
}

}  // namespace

Expected<CorpusLine> parse_corpus_line(std::string_view line, const std::string& where) {
  ordered j;
  std::string error;
  if (!parse_json(line, j, error)) return bad_line(where, "not valid JSON: " + error);
  if (!j.is_object()) return bad_line(where, "not a JSON object");
  ASSIGN_OR_RETURN(std::string format, string_field(j, "format", where, ""));
  if (format != kCorpusLineFormat)
    return bad_line(where,
                    "format \"" + format + "\", not \"" + std::string(kCorpusLineFormat) + "\"");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer())
    return bad_line(where, "no integer \"version\"");
  if (version->get<std::int64_t>() != kCorpusLineVersion)
    return bad_line(where, "version " + std::to_string(version->get<std::int64_t>()) +
                               " (this build reads version " + std::to_string(kCorpusLineVersion) +
                               ")");
  CorpusLine t;
  ASSIGN_OR_RETURN(t.task, string_field(j, "task", where, ""));
  if (t.task.empty()) return bad_line(where, "empty \"task\"");
  if (j.contains("split")) {
    ASSIGN_OR_RETURN(t.split, string_field(j, "split", where, ""));
  }
  ASSIGN_OR_RETURN(t.system, string_field(j, "system", where, ""));
  ASSIGN_OR_RETURN(t.expected_tier, optional_number(j, "expected_tier", where));
  ASSIGN_OR_RETURN(t.expected_compile_only, optional_number(j, "expected_compile_only", where));

  auto tools = j.find("tools");
  if (tools == j.end() || !tools->is_array()) return bad_line(where, "no \"tools\" array");
  for (std::size_t i = 0; i < tools->size(); ++i) {
    if (!(*tools)[i].is_object())
      return bad_line(where, "tools[" + std::to_string(i) + "] is not a JSON object");
    // As the engine passes tools to the template (engine_server.cpp read_tools): keys sorted.
    t.tools_json.push_back(nlohmann::json::parse((*tools)[i].dump()).dump());
  }

  auto messages = j.find("messages");
  if (messages == j.end() || !messages->is_array()) return bad_line(where, "no \"messages\" array");
  for (std::size_t i = 0; i < messages->size(); ++i) {
    ASSIGN_OR_RETURN(ChatMessage m, parse_message((*messages)[i], i, where));
    t.messages.push_back(std::move(m));
  }
  RETURN_IF_ERROR(check_order(t.messages, where));
  return t;
}

std::string assistant_generation_text(const ChatFormat& format, const ChatMessage& message) {
  ChatMessage m = message;
  m.role = ChatRole::kAssistant;
  // "<|im_start|>assistant\n" TEXT "<|im_end|>\n", whatever the content and calls (render_message
  // puts the "\n" before the first call when the content is empty).
  const std::string rendered = format.render_message(m);
  constexpr std::string_view kEnd = "<|im_end|>\n";
  const std::size_t begin = ChatFormat::kGenerationPrompt.size();
  return rendered.substr(begin, rendered.size() - begin - kEnd.size());
}

Expected<Conversation> corpus_conversation(const ChatFormat& format, const CorpusLine& transcript,
                                           const std::string& where) {
  ASSIGN_OR_RETURN(Conversation c,
                   Conversation::start(format, transcript.system, transcript.tools_json));
  const std::vector<ChatMessage>& ms = transcript.messages;
  std::size_t last_assistant = 0;
  for (std::size_t i = 0; i < ms.size(); ++i)
    if (ms[i].role == ChatRole::kAssistant) last_assistant = i;
  RETURN_IF_ERROR(c.append_message(ms[0]));
  for (std::size_t i = 1; i <= last_assistant;) {
    if (ms[i].role == ChatRole::kTool) {
      std::vector<std::string> results;
      for (; i < ms.size() && ms[i].role == ChatRole::kTool; ++i) results.push_back(ms[i].content);
      RETURN_IF_ERROR(c.append_tool_results(results));
      continue;
    }
    const std::string text = assistant_generation_text(format, ms[i]);
    RETURN_IF_ERROR(check_round_trip(text, ms[i], i, where));
    ASSIGN_OR_RETURN(std::vector<TokenId> ids, format.tokenizer().encode(text));
    ids.push_back(format.im_end());
    RETURN_IF_ERROR(c.append_generation_prompt());
    RETURN_IF_ERROR(c.append_sampled(ids));
    ++i;
  }
  return c;
}

Expected<Episode> corpus_episode(const ChatFormat& format, const CorpusLine& transcript,
                                 const CorpusSequenceOptions& options, const std::string& name) {
  ASSIGN_OR_RETURN(Conversation c, corpus_conversation(format, transcript, name));
  Episode e;
  e.episode_id = EpisodeId{name};
  e.run_id = RunId{"corpus"};
  e.task_id = TaskId{transcript.task};
  e.stage = options.stage;
  e.status = EpisodeStatus::kCompleted;
  e.final_reward = options.reward == CorpusReward::kTier ? transcript.expected_tier
                                                         : transcript.expected_compile_only;
  const std::vector<TokenId>& ids = c.ids();
  const std::vector<std::uint8_t>& mask = c.loss_mask();
  // Through the last sampled token: a trajectory stores nothing the model was not shown before
  // its last turn, so the "\n" after the final <|im_end|> is not part of it.
  std::size_t end = 0;
  for (const ConversationTurn& t : c.turns())
    if (t.sampled) end = t.sampled_end;
  for (const ConversationTurn& t : c.turns()) {
    if (t.begin >= end) break;
    Turn turn{.role = static_cast<TurnRole>(t.role), .policy_version = PolicyVersion{0}};
    for (std::size_t k = t.begin; k < std::min(t.end, end); ++k) {
      turn.token_ids.push_back(static_cast<std::uint32_t>(ids[k]));
      turn.loss_mask.push_back(mask[k]);
    }
    if (t.sampled) turn.logprobs.assign(turn.token_ids.size(), 0.0f);
    e.counters.tokens += turn.token_ids.size();
    if (t.sampled) ++e.counters.turns;
    e.turns.push_back(std::move(turn));
  }
  return e;
}

namespace {

Expected<TrainSequence> sequence_of(const ChatFormat& format, const CorpusLine& t,
                                    const CorpusSequenceOptions& options,
                                    const std::string& where) {
  ASSIGN_OR_RETURN(Episode e, corpus_episode(format, t, options, where));
  std::size_t tokens = 0;
  for (const Turn& turn : e.turns) tokens += turn.token_ids.size();
  if (options.limits.max_tokens > 0 && tokens > std::size_t(options.limits.max_tokens))
    return bad_line(where, "task '" + t.task + "' is " + std::to_string(tokens) +
                               " tokens, more than the limit of " +
                               std::to_string(options.limits.max_tokens) +
                               " (refused, not truncated; raise --max-tokens or the model's "
                               "max_position_embeddings)");
  Expected<TrainSequence> seq = to_train_sequence(e, options.limits);
  if (!seq) return bad_line(where, "task '" + t.task + "': " + seq.error().message);
  return seq;
}

}  // namespace

Expected<TrainSequence> corpus_sequence(const ChatFormat& format, std::string_view line,
                                        const CorpusSequenceOptions& options,
                                        const std::string& where) {
  ASSIGN_OR_RETURN(CorpusLine t, parse_corpus_line(line, where));
  return sequence_of(format, t, options, where);
}

Expected<CorpusSequences> load_corpus_sequences(const std::string& path, const ChatFormat& format,
                                                const CorpusSequenceOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCategory::kNotFound, "learner.no_corpus", path + ": cannot open");
  const bool every_split = options.split.empty() || options.split == "all";
  CorpusSequences out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (trim(line).empty()) continue;
    ++out.lines;
    const std::string where = path + ":" + std::to_string(n);
    Expected<CorpusLine> t = parse_corpus_line(line, where);
    if (!t) {
      out.refused.push_back(t.error());
      continue;
    }
    if (!every_split && t->split != options.split) {  // skipped before it is tokenized
      ++out.other_split;
      continue;
    }
    Expected<TrainSequence> seq = sequence_of(format, *t, options, where);
    if (seq) {
      out.sequences.push_back(std::move(*seq));
    } else {
      out.refused.push_back(seq.error());
    }
  }
  if (in.bad())
    return make_error(ErrorCategory::kIo, "learner.corpus_read", path + ": read failed");
  return out;
}

}  // namespace cuda_agent
