// The coordinator's durable state and how it is rebuilt from the store (issue 24, "Faults").
//
// What is saved (CoordinatorStateRecord, messages/store_codec.h): step, stage (index in the plan
// and steps done in it), published policy version, sampler position, the next episode seq and
// acknowledgement number, the staleness counters, totals (trained, stale, orphaned), the episodes
// not yet trained (in flight, queued, acknowledged), the episodes the last step consumed, and the
// batches of every step since the latest recorded checkpoint (the learner's replay).
//
// When it is saved: in ONE atomic store write with what it describes:
//  - after every learner step: the RunRecord (policy version = the new version, state) carries
//    it, with the step's metrics in the same write; the new version is published only after
//    that write is synced, so no worker ever sees a version the store does not know;
//  - at every checkpoint: the CheckpointRecord carries it (and the RunRecord again).
// Dispatches are not written (they cost nothing to redo); acknowledgements are the episode
// records themselves, written before the worker is acknowledged.
//
// Restore rule (restore_ledger): start from the saved state (none: a fresh run), then
//  1. every saved in-flight episode becomes queued for a rerun (its attempt counts on: the rerun
//     is attempt + 1; the old attempt, if it still arrives, is refused as superseded);
//  2. an episode of the run found in the store that the saved state had in flight or queued is
//     acknowledged (it was stored after the state was saved; nothing acknowledged is lost);
//  3. episodes minted after the save (seq >= saved next seq, up to the highest seq stored) are
//     minted again in order from the restored sampler, which must give each the task the store
//     has (else coordinator.restore_mismatch): stored ones are acknowledged at the version they
//     record, the others queued (attempt 1 counted, so the rerun is attempt 2);
//  4. everything dispatched after the saved version is orphaned (restoring a checkpoint older than
//     the run's head is a rollback; restoring the RunRecord's state orphans nothing).
// The staleness counters follow: running = 0, accepted + adopted, rejected + orphaned.
//
// Threading: free functions; the store is read synchronously (before the actor starts).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "coordinator/coordinator_store.h"
#include "coordinator/episode_ledger.h"

namespace cuda_agent {

/// Where the run stands besides the ledger.
struct RunProgress {
  std::uint64_t step = 0;         ///< learner steps completed
  std::uint32_t stage_index = 0;  ///< position in the stage plan
  std::uint64_t stage_steps = 0;  ///< steps completed in that stage
  PolicyVersion version;          ///< the published policy version
  std::vector<EpisodeId> last_step_episodes;
  /// The batches of the steps after the run's latest recorded checkpoint, oldest first: sent
  /// with every TrainStep, so that a learner restarted from that checkpoint trains them again.
  std::vector<RecordedStep> steps_since_checkpoint;
};

/// The state to save now.
CoordinatorStateRecord snapshot_state(const EpisodeLedger& ledger, const RunProgress& progress);

struct RestoreInputs {
  RunId run;
  StalenessOptions staleness;
  std::vector<TaskId> tasks;
  std::uint64_t seed = 0;
  std::uint64_t group_size = 1;  ///< draws of each task in a row (TaskSampler)
  /// The stage new episodes minted during step 3 belong to when the store does not say.
  EpisodeStage stage = EpisodeStage::kEvaluation;
};

struct RestoreReport {
  std::uint64_t requeued = 0;  ///< saved in flight (or minted after the save), not in the store
  std::uint64_t adopted = 0;   ///< found in the store: acknowledged now
  std::uint64_t orphaned = 0;  ///< dispatched after the saved version
};

struct Restored {
  EpisodeLedger ledger;
  RunProgress progress;
  RestoreReport report;
};

/// Rebuilds the ledger from a saved state (nullptr: fresh) and the run's stored episodes.
Expected<Restored> restore_ledger(const RestoreInputs& in, const CoordinatorStateRecord* saved,
                                  const std::vector<EpisodeSummary>& stored);

/// Which saved state restore_from_store starts from.
enum class RestorePoint : std::uint8_t {
  kLatestStep,        ///< the RunRecord's (the learner kept its weights)
  kLatestCheckpoint,  ///< the latest checkpoint's (the learner restarted from it)
};

/// Reads the saved state and the run's episodes from `store`, then restore_ledger.
Expected<Restored> restore_from_store(const CoordinatorStore& store, const RestoreInputs& in,
                                      RestorePoint point);

}  // namespace cuda_agent
