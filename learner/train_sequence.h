// One episode as the learner trains on it: the token-in-token-out trajectory (DESIGN.md section 6)
// flattened into per-token arrays, checked once so the torch side never meets a malformed one.
//
//   SequenceBatch batch = to_train_sequences(episodes, {.vocab_size = 151'936,
//                                                       .max_tokens = 131'072});
//   for (const Error& e : batch.refused) log_warning(e);  // one bad episode never stops the batch
//   GaeResult g = compute_gae(seq.loss_mask, values, seq.token_rewards(), gamma, lambda);
//
// Token t of a sequence is predicted from tokens [0, t): a model's logits at position t - 1 score
// ids[t]. So loss_mask[t] = 1 means "train on predicting ids[t]", and the first token of a
// sequence can never be a model token (nothing predicts it).
//
// Refusals (category invalid_input, code "learner.bad_trajectory", the message naming run,
// episode, turn index and what is wrong; see to_train_sequence). Pure functions, no state: safe
// from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/store_codec.h"       // EpisodeId, TaskId, EpisodeStage
#include "messages/trajectory_codec.h"  // Episode

namespace cuda_agent {

/// One training row: every turn's tokens concatenated in order, with per-token arrays of the
/// same length (ids.size()).
struct TrainSequence {
  RunId run;
  EpisodeId episode;
  TaskId task;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  std::vector<std::int64_t> ids;               ///< [T] token ids, every turn's, in order
  std::vector<std::uint8_t> loss_mask;         ///< [T] 1 = model token trained on, else 0
  std::vector<float> behaviour_logprobs;       ///< [T] sampling logprob; 0 where mask 0
  std::vector<std::uint64_t> policy_versions;  ///< [T] the policy version of the token's turn
  double reward = 0;                           ///< the episode's final reward
  /// Index of the last mask-1 token: where the final reward sits (token_rewards()).
  std::int64_t last_model_token = -1;
  /// Oldest and newest policy version over model tokens (mask 1); for staleness correction.
  std::uint64_t min_version = 0, max_version = 0;

  std::int64_t size() const { return static_cast<std::int64_t>(ids.size()); }
  /// Tokens with mask 1.
  std::int64_t model_tokens() const;
  /// [T] the final reward at last_model_token, 0 elsewhere (GAE's per-token rewards).
  std::vector<float> token_rewards() const;
};

/// What a sequence must fit. 0 leaves a limit unchecked.
struct SequenceLimits {
  /// Every token id (prompt and tool output too: all are embedded) must be below this.
  /// Default: 0, unchecked.
  std::int64_t vocab_size = 0;
  /// Longest sequence accepted, in tokens. Default: 0, unchecked.
  std::int64_t max_tokens = 0;
};

/// Flattens and checks one episode. Refuses it (invalid_input, "learner.bad_trajectory") when:
/// it has no turns; a turn's loss mask size differs from its token count; a mask byte is neither
/// 0 nor 1; a turn's logprobs are neither empty nor one per token; a turn with mask-1 tokens has
/// no logprobs; a mask-1 token's logprob is non-finite or > 0 (logprobs of mask-0 tokens are not
/// used and not checked); a token id is >= limits.vocab_size; the sequence's first token has
/// mask 1; no token has mask 1; the sequence is longer than limits.max_tokens (the message names
/// the turn that crosses the limit). Turns may be empty. A turn's role is not checked: the mask
/// decides what is trained on.
Expected<TrainSequence> to_train_sequence(const Episode& episode, const SequenceLimits& limits);

/// Kept sequences (in input order) and the refusals of the others (in input order).
struct SequenceBatch {
  std::vector<TrainSequence> sequences;
  std::vector<Error> refused;
};

/// to_train_sequence over a batch: a refused episode is reported and skipped, the rest go on.
SequenceBatch to_train_sequences(const std::vector<Episode>& episodes,
                                 const SequenceLimits& limits);

}  // namespace cuda_agent
