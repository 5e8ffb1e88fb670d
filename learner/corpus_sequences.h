// A seed corpus as training sequences: the JSON Lines transcripts `cuda-agent tasks corpus`
// writes, tokenized exactly as an episode's trajectory is at RL time, for the supervised warm-up
// (`cuda-agent-learn sft --corpus FILE`).
//
//   ASSIGN_OR_RETURN(ChatFormat format, ChatFormat::create(tokenizer));
//   ASSIGN_OR_RETURN(CorpusSequences c, load_corpus_sequences("seed.jsonl", format,
//                                                             {.limits = {.vocab_size = V}}));
//   for (const Error& e : c.refused) log_warning(e);  // one bad line never stops the rest
//
// One line, one transcript (format "cuda-agent-corpus", version 1):
//   {"format":"cuda-agent-corpus","version":1,"task":"relu","split":"train","expected_tier":3,
//    "expected_compile_only":1,"system":"...","tools":[{...}],"messages":[
//     {"role":"user","content":"..."},
//     {"role":"assistant","content":"","tool_calls":[{"name":"write_file","arguments":{...}}]},
//     {"role":"tool","content":"..."}, ...]}
// Other fields (ops, style, task_py, ...) are read by other tools and ignored here.
//
// Token-exact with RL: an episode (rollout/episode.cpp) sends its messages to the policy engine
// (model/engine_server.cpp), which renders the system prompt and tools, the task prompt and the
// generation prompt with Qwen2.5's template (model/chat_format.h) and samples the assistant's
// text, ending at <|im_end|>; each later turn sends the ids so far plus the tool results and the
// generation prompt. Here the same sequence is rebuilt with model/conversation.h: start(system,
// tools), the user message, then per assistant message append_generation_prompt() and
// append_sampled(encode(text the model would have generated) + <|im_end|>), and the tool messages
// that follow as one append_tool_results. The generated text is what the template shows for that
// message between "<|im_start|>assistant\n" and "<|im_end|>" (content, then each tool call as a
// <tool_call> block); it must parse back (model/chat_format.h parse_assistant) to the message's
// tool calls and content. Tools are written as the engine writes them (keys sorted, as
// nlohmann::json orders them), so the prompt is the one RL shows. The sequence ends at the last
// assistant message's <|im_end|>: a trajectory holds nothing after the last sampled token.
//
// Loss mask 1 on assistant tokens only (its <|im_end|> included); behaviour log-probs 0, policy
// version 0; reward the line's expected_compile_only or expected_tier
// (CorpusSequenceOptions::reward; 0 when absent), which SFT does not use.
//
// Refusals: kInvalidInput "learner.bad_corpus_line", the message "FILE:LINE: " and what is wrong
// (not JSON, another format or version, a missing or mistyped field, a message with an unknown
// role or out of place, a tool call that does not round-trip, more tokens than
// limits.max_tokens, an id past limits.vocab_size). Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "learner/train_sequence.h"
#include "messages/trajectory_codec.h"
#include "model/chat_format.h"
#include "model/conversation.h"

namespace cuda_agent {

/// "cuda-agent-corpus" and 1: what a line's "format" and "version" must say (the writer is
/// rollout/seed_corpus.h, which the learner does not link).
inline constexpr std::string_view kCorpusLineFormat = "cuda-agent-corpus";
inline constexpr std::int64_t kCorpusLineVersion = 1;

/// Which of a line's expected rewards becomes the sequence's reward.
enum class CorpusReward : std::uint8_t {
  kCompileOnly,  ///< "expected_compile_only": what a compile-only run's reward would be
  kTier,         ///< "expected_tier": the full protocol's tier
};

struct CorpusSequenceOptions {
  /// Reward of each sequence (unused by SFT; kept for other uses). Default: compile-only.
  CorpusReward reward = CorpusReward::kCompileOnly;
  /// Lines whose "split" is this are kept; others are skipped (counted, not refused). "all" or
  /// empty: every line. Default: "train", so that held-out tasks stay unseen.
  std::string split = "train";
  /// Ids below vocab_size; at most max_tokens tokens (a longer transcript is refused, never
  /// truncated). 0: unchecked.
  SequenceLimits limits;
  /// The stage the sequences are labelled with. Default: agent warm-up (stage 2).
  EpisodeStage stage = EpisodeStage::kAgentWarmup;
};

/// One line, parsed and checked (the text, before tokenization): the reader's view of
/// rollout/seed_corpus.h's CorpusTranscript.
struct CorpusLine {
  std::string task;
  std::string split;  ///< "" when the line has none
  std::string system;
  /// Each tool as the engine passes it to the template: JSON text, keys sorted.
  std::vector<std::string> tools_json;
  /// The user message, then assistant and tool messages (tool messages follow an assistant or
  /// another tool message; every assistant message after the first follows a tool message).
  std::vector<ChatMessage> messages;
  double expected_tier = 0;
  double expected_compile_only = 0;
};

/// Parses and checks one line. `where` ("FILE:LINE") starts every error message.
Expected<CorpusLine> parse_corpus_line(std::string_view line, const std::string& where);

/// The text a model generates for an assistant message (without the closing <|im_end|>): what
/// the template renders between the generation prompt and <|im_end|>.
std::string assistant_generation_text(const ChatFormat& format, const ChatMessage& message);

/// The transcript as the conversation an episode builds, through the last assistant turn (its
/// <|im_end|> and the "\n" after it). Errors: a tool call or content that does not round-trip
/// through parse_assistant; tokenizer errors.
Expected<Conversation> corpus_conversation(const ChatFormat& format, const CorpusLine& transcript,
                                           const std::string& where);

/// The transcript as the trajectory an episode would store (turns with ids, masks, zero log-
/// probs), ending at the last model token; `name` becomes its episode id.
Expected<Episode> corpus_episode(const ChatFormat& format, const CorpusLine& transcript,
                                 const CorpusSequenceOptions& options, const std::string& name);

/// One line -> one training sequence (parse, conversation, episode, learner/train_sequence.h
/// checks). Errors are refusals naming `where`.
Expected<TrainSequence> corpus_sequence(const ChatFormat& format, std::string_view line,
                                        const CorpusSequenceOptions& options,
                                        const std::string& where);

/// A whole file: the kept sequences in line order and the refusals of the others.
struct CorpusSequences {
  std::vector<TrainSequence> sequences;
  std::vector<Error> refused;
  std::size_t lines = 0;        ///< non-empty lines read
  std::size_t other_split = 0;  ///< lines skipped for their split
};

/// Reads `path` line by line. Errors only when the file cannot be read (kNotFound / kIo).
Expected<CorpusSequences> load_corpus_sequences(const std::string& path, const ChatFormat& format,
                                                const CorpusSequenceOptions& options);

}  // namespace cuda_agent
