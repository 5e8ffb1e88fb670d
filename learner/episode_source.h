// Training sequences from the run store: the episodes a query picked (RunStore::select_rft for
// RFT, scan_replay for PPO batches), read, decoded and checked.
//
//   ASSIGN_OR_RETURN(auto picked, store.select_rft({.run = run, .per_task_top_k = 4}));
//   ASSIGN_OR_RETURN(LoadedSequences loaded, load_sequences(store, picked, limits));
//   for (const Error& e : loaded.refused) log_warning(e);
//
// Threading: as the store's read methods (any thread).
#pragma once

#include <vector>

#include "core/error.h"
#include "learner/train_sequence.h"
#include "messages/store_codec.h"  // EpisodeSummary
#include "storage/run_store.h"

namespace cuda_agent {

/// Sequences in the order picked, and one refusal per episode that could not be used.
using LoadedSequences = SequenceBatch;

/// Reads each picked episode (get_episode), decodes its trajectory and converts it
/// (to_train_sequence). One episode's fault becomes a refusal in `refused` naming its run and
/// episode, and the rest go on: its stored value is bad (store.corrupt_value,
/// store.unsupported_version, store.newer_version); its trajectory does not decode (wire.*);
/// the trajectory belongs to another run or episode than its record ("learner.episode_mismatch");
/// or it is refused by to_train_sequence ("learner.bad_trajectory"). Any other store error (I/O,
/// a picked episode that is not there) fails the whole call with that error, its context naming
/// the episode.
Expected<LoadedSequences> load_sequences(const RunStore& store,
                                         const std::vector<EpisodeSummary>& picked,
                                         const SequenceLimits& limits);

/// The agent warm-up's RFT selection within one batch (DESIGN.md section 6): an episode is kept
/// when its reward is positive and it made no invalid tool call and no wasted loop; with
/// `best_of_task` (group advantages: several episodes of each task in a batch) only when its
/// reward is also the highest of its task's episodes that qualify, so a +1 serial kernel is not
/// reinforced beside a +3 fused one of the same task. One flag per episode, in batch order.
std::vector<bool> rft_selection(const std::vector<EpisodeSummary>& batch, bool best_of_task);

}  // namespace cuda_agent
