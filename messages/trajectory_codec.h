// The trajectory protocol (messages/trajectory.capnp) as plain C++ types, and its codec: one
// finished agent episode, token in, token out (DESIGN.md section 6). A rollout worker sends it to
// the coordinator; the run store keeps encode_episode()'s bytes as EpisodeRecord::trajectory_bytes
// (messages/store_codec.h), whose summary is the same episode's facts.
//
//   std::string frame = encode_episode(episode);
//   Expected<Episode> back = decode_episode(frame);
//
// Decoding never trusts its input: truncated, garbage, oversized, another message type
// ("wire.wrong_type"), a newer format version ("wire.version"), or a turn whose loss mask or
// logprobs do not match its tokens ("wire.malformed") give an Error of category invalid_input,
// never an exception. Stage and status use the store's enums; values this build does not name
// survive as numbers (as in the store). A TurnRole from a newer peer decodes to kUnknown.
// Texts, lists and data must each hold fewer than 2^29 elements (a Cap'n Proto limit).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"
#include "messages/store_codec.h"  // EpisodeId, TaskId, EpisodeStage, EpisodeStatus

namespace cuda_agent {

/// Who produced a turn's tokens.
enum class TurnRole : std::uint8_t {
  kUnknown = 0,    ///< a role newer than this build
  kSystem = 1,     ///< the system prompt
  kUser = 2,       ///< the task prompt
  kAssistant = 3,  ///< sampled from the policy: the only tokens the loss sees
  kTool = 4,       ///< tool results fed back to the model
};

/// A tool call the model made in an assistant turn.
struct ToolCall {
  std::string call_id;         ///< the id the matching ToolResult names
  std::string name;            ///< "compile", "write_file", ...
  std::string arguments_json;  ///< as the model wrote it (JSON text, maybe invalid)
};

/// The result of one tool call, in a tool turn.
struct ToolResult {
  std::string call_id;  ///< ToolCall::call_id it answers
  std::string content;  ///< what the model was shown
  bool is_error = false;
};

/// One turn: a contiguous run of tokens with one role.
struct Turn {
  TurnRole role = TurnRole::kUnknown;    ///< who produced the tokens
  std::vector<std::uint32_t> token_ids;  ///< exact ids, never re-tokenized
  /// Sampling logprob per token: token_ids.size() entries, or none for turns not sampled.
  std::vector<float> logprobs;
  /// One byte per token (token_ids.size() entries): 1 trained on (model tokens), 0 not.
  std::vector<std::uint8_t> loss_mask;
  std::vector<ToolCall> tool_calls;      ///< parsed from an assistant turn, in order
  std::vector<ToolResult> tool_results;  ///< in a tool turn, in order
  /// Weights version that sampled the turn (the one in force, for turns not sampled).
  PolicyVersion policy_version;
  std::uint64_t wall_ms = 0;  ///< generation time (model turns) or tool run time (tool turns)
};

/// Counters kept while the episode ran.
struct EpisodeCounters {
  std::uint32_t turns = 0;               ///< model turns taken
  std::uint32_t invalid_tool_calls = 0;  ///< calls that did not parse or named no tool
  std::uint64_t tokens = 0;              ///< tokens of all turns (prompt, sampled, tool output)
  std::uint32_t wasted_loops = 0;        ///< repeated identical actions with no progress
};

/// One finished episode.
struct Episode {
  EpisodeId episode_id;                              ///< unique within the run
  RunId run_id;                                      ///< the run it belongs to
  TaskId task_id;                                    ///< the task it attempted
  EpisodeStage stage = EpisodeStage::kEvaluation;    ///< RL stage, or evaluation
  EpisodeStatus status = EpisodeStatus::kCompleted;  ///< how it ended
  double final_reward = 0;         ///< reward of the fresh final evaluation; 0 when none ran
  EpisodeCounters counters;        ///< kept while it ran
  std::vector<Turn> turns;         ///< in order
  std::int64_t ended_unix_ms = 0;  ///< when it ended, ms since the Unix epoch (UTC)
};

std::string encode_episode(const Episode& episode);
Expected<Episode> decode_episode(std::string_view bytes, const DecodeLimits& limits = {});

}  // namespace cuda_agent
