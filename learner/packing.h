// Splitting a batch of training sequences across data-parallel ranks (shard_for_rank) and, on one
// rank, into micro-batches that fit one forward/backward (pack_micro_batches).
//
//   std::vector<std::size_t> mine = shard_for_rank(batch, rank, world_size);
//   std::vector<TrainSequence> local = ...;  // batch[i] for i in mine
//   ASSIGN_OR_RETURN(auto micro, pack_micro_batches(local, options.micro_batch_tokens));
//   for (const MicroBatch& mb : micro) { /* rows right-padded to mb.max_len */ }
//
// Both are deterministic functions of the sequence lengths alone (no randomness, no hashing of
// ids), so every rank computes the same plan. Pure functions: safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "learner/train_sequence.h"

namespace cuda_agent {

/// Sequences run together in one forward/backward, each row right-padded to the longest.
struct MicroBatch {
  std::vector<std::size_t> rows;  ///< indices into the packed vector, longest first
  std::int64_t max_len = 0;       ///< tokens of the longest row: the padded row length
  /// What the micro-batch costs: rows.size() * max_len (padding included).
  std::int64_t padded_tokens() const { return static_cast<std::int64_t>(rows.size()) * max_len; }
};

/// Packs `sequences` into micro-batches of at most `micro_batch_tokens` padded tokens each
/// (rows x max_len <= budget). A sequence is never split. Sequences are placed longest first (ties
/// by lower index), each into the first micro-batch it fits (first-fit decreasing); micro-batches
/// come out in the order they were opened. Every sequence lands in exactly one micro-batch.
/// Errors (invalid_input): "learner.bad_budget" when micro_batch_tokens < 1;
/// "learner.sequence_too_long" when a sequence alone is longer than the budget (the message names
/// it and gives the arithmetic).
Expected<std::vector<MicroBatch>> pack_micro_batches(const std::vector<TrainSequence>& sequences,
                                                     std::int64_t micro_batch_tokens);

/// The indices (ascending) of the sequences rank `rank` of `world_size` trains on. Balanced by
/// token count (ids.size(), prompt and tool tokens included: they cost forward/backward time):
/// longest first (ties by lower index), each to the rank with the fewest tokens so far (ties by
/// lower rank). Every sequence goes to exactly one rank; with fewer sequences than ranks some
/// ranks get none and must still join the step's collectives. Empty when world_size < 1 or rank
/// is not in [0, world_size).
std::vector<std::size_t> shard_for_rank(const std::vector<TrainSequence>& sequences, int rank,
                                        int world_size);

}  // namespace cuda_agent
