// A policy that plays back a recorded transcript: for tests (an episode with real compilation and
// a scripted model) and for reproducing an episode exactly.
//
// Transcript: JSON Lines, one message per line. Lines with "role": "assistant" are the turns
// played back, in order; every other line (system, user, tool) is the record of what the agent
// saw and is skipped. An assistant line:
//   {"role": "assistant", "content": "...",
//    "tool_calls": [{"name": "write_file", "arguments": {"path": "kernels/k.cu", ...}}],
//    "token_ids": [...], "logprobs": [...], "finish_reason": "tool_calls"}
// "arguments" may be an object or the text of one (kept as written, so a transcript can hold a
// malformed call); without "tool_calls", Qwen-style <tool_call> blocks in "content" are read with
// model/chat_format.h's parser. "token_ids"/"logprobs" (optional, same length) are returned as
// the sampled tokens.
//
//   ASSIGN_OR_RETURN(auto policy, ReplayPolicy::load("episode.jsonl"));
//
// Errors: a line that is not a JSON object or has fields of the wrong type is kInvalidInput
// "policy.transcript" naming file and line; asking past the last assistant turn is kInvalidInput
// "policy.replay_exhausted".
//
// Threading: next() is safe from any thread; turns are handed out in order across callers.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rollout/policy.h"

namespace cuda_agent {

class ReplayPolicy final : public PolicyBackend {
 public:
  static Expected<std::unique_ptr<ReplayPolicy>> load(const std::string& path);
  /// From transcript text; `name` stands for the file in messages.
  static Expected<std::unique_ptr<ReplayPolicy>> parse(const std::string& text,
                                                       const std::string& name);
  Expected<PolicyTurn> next(const PolicyRequest& request) override;
  std::string describe() const override;
  std::size_t turns() const { return turns_.size(); }

 private:
  ReplayPolicy(std::string name, std::vector<PolicyTurn> turns)
      : name_(std::move(name)), turns_(std::move(turns)) {}
  std::string name_;
  std::vector<PolicyTurn> turns_;
  std::mutex mu_;
  std::size_t next_ = 0;
};

}  // namespace cuda_agent
