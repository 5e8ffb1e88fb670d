// The episode ledger: every episode's life in a run, as the coordinator sees it, and the
// staleness bound that gates new ones (coordinator/staleness.h). Pure logic: no I/O, no clock.
//
//                 dispatch()               acknowledge()             form_batch()    step_done()
//   (minted) ----------------> in flight --------------> acknowledged ---------> training ----->
//   trained
//                                 |  ^                       |   \                  | step_failed()
//                    worker_lost()|  | dispatch() (rerun:    |    `-> stale (past the bound when
//                                 v  |  attempt + 1,         |         its batch is formed)
//                               queued  same episode id)     `-> orphaned (rollback(): its
//                                                                version is off the lineage)
//
// - Ids: episode `seq` of a run is "<run>/ep<seq, 8 digits>"; seq counts up from 0 and each new
//   episode takes the sampler's next task, so (seq -> task) is a pure function of the seed and the
//   saved position (used by restore, coordinator/coordinator_state.h).
// - Dispatch: a queued rerun goes first (the oldest), then a new episode; both need capacity
//   from the staleness bound at the current version. A rerun keeps its id and task; its attempt
//   counts up and its dispatch version is the version at the new dispatch.
// - Submission: only the attempt in flight may be stored (begin_submit -> kStore); while its write
//   is pending it is `storing` and further copies wait for the same write (kStoring); once
//   acknowledged, repeats are kDuplicate (acknowledged again, idempotent); an older attempt is
//   kSuperseded; an id the ledger never dispatched (or already settled and forgotten) is kUnknown.
// - Batches: the acknowledged episodes of the stage, oldest first by (dispatch version, order of
//   acknowledgement), listed in mint order (the order the learner trains them in). Before a batch
//   is formed, every acknowledged episode whose staleness (current version - dispatch version)
//   exceeds S is marked stale and dropped from the bound. With S = 0 every trained episode was
//   dispatched at the version it is trained from (synchronous PPO). Each trained episode records
//   its staleness.
// - Invariants (tested): no episode is trained twice; every minted episode is in exactly one
//   phase, so trained + stale + orphaned + waiting + training + in flight = minted - queued;
//   accepted + running <= (S + version + 1) * batch after every dispatch.
//
// Threading: a plain value owned by the coordinator actor (or a test); no internal locking.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/staleness.h"
#include "coordinator/task_sampler.h"
#include "core/ids.h"
#include "messages/coordinator_protocol.h"
#include "messages/store_codec.h"

namespace cuda_agent {

enum class EpisodePhase : std::uint8_t {
  kQueued = 0,        ///< its worker was lost; waits to be dispatched again
  kInFlight = 1,      ///< dispatched to a worker
  kAcknowledged = 2,  ///< stored durably; waits for a batch
  kTraining = 3,      ///< in a batch the learner is running
  kTrained = 4,       ///< consumed by a finished step
  kStale = 5,         ///< past the bound (or its stage ended): kept in the store, not trained
  kOrphaned = 6,      ///< from a version off the lineage: kept for RFT and audit, never PPO
};
std::string_view to_string(EpisodePhase phase);

struct LedgerEntry {
  EpisodeId episode_id;
  TaskId task_id;
  std::uint64_t seq = 0;
  std::uint32_t attempt = 1;
  WorkerId worker_id;
  PolicyVersion dispatched_version;
  EpisodeStage stage = EpisodeStage::kEvaluation;
  EpisodePhase phase = EpisodePhase::kInFlight;
  bool storing = false;      ///< in flight, its trajectory's store write pending
  bool drop_on_ack = false;  ///< its stage ended while in flight: stale once acknowledged
  bool off_lineage = false;  ///< its version was rolled back while in flight: orphaned on ack
  std::uint64_t ack_seq = 0;
  std::uint64_t trained_step = 0;  ///< kTrained: the step that consumed it
  std::uint64_t staleness = 0;     ///< kTrained: version at training - version at dispatch
};

enum class SubmitCheck : std::uint8_t {
  kStore,       ///< write it now, then acknowledge()
  kStoring,     ///< a write of this episode is pending: answer when it completes
  kDuplicate,   ///< already acknowledged: acknowledge again, write nothing
  kSuperseded,  ///< not the attempt in flight (its worker was taken for lost): refuse
  kUnknown,     ///< not an episode of this ledger: refuse
};

/// One learner step's episodes.
struct Batch {
  std::uint64_t step = 0;
  PolicyVersion version;  ///< the version the step trains from
  EpisodeStage stage = EpisodeStage::kEvaluation;
  std::vector<EpisodeId> episodes;
};

struct LedgerCounts {
  std::uint64_t minted = 0;
  std::uint64_t by_phase[7] = {};
  std::uint64_t of(EpisodePhase p) const { return by_phase[static_cast<int>(p)]; }
};

EpisodeId make_episode_id(const RunId& run, std::uint64_t seq);
/// The seq of an id made by make_episode_id for `run`; nullopt for any other id.
std::optional<std::uint64_t> parse_episode_seq(const RunId& run, const EpisodeId& id);

class EpisodeLedger {
 public:
  EpisodeLedger(RunId run, StalenessOptions staleness, TaskSampler sampler);

  /// A rerun or a new episode for `worker` at `current`, or nullopt when the bound allows none.
  std::optional<Assignment> dispatch(const WorkerId& worker, PolicyVersion current,
                                     EpisodeStage stage);

  SubmitCheck begin_submit(const EpisodeId& episode, std::uint32_t attempt);
  /// The store acknowledged the episode's write.
  /// `trainable` false: the episode was stored but cannot be trained (it was aborted before a
  /// reward: the policy server or a tool failed); it is settled as stale at once.
  void acknowledge(const EpisodeId& episode, bool trainable = true);
  /// The write failed: the episode stays in flight (its worker retries), or is queued for a rerun
  /// when `requeue` (its worker is gone).
  void store_failed(const EpisodeId& episode, bool requeue);
  /// Queues the in-flight episodes of a lost worker for a rerun (those with a write pending stay
  /// in flight until it completes). Returns them.
  std::vector<EpisodeId> worker_lost(const WorkerId& worker);

  /// Marks stale episodes, then takes the oldest `batch_episodes` acknowledged ones of `stage`.
  /// With a sampler group size > 1, among episodes of one policy version those whose task has
  /// another ready episode go first (group advantages need two of a task in one batch).
  std::optional<Batch> form_batch(std::uint64_t step, PolicyVersion current, EpisodeStage stage);
  void step_done(const Batch& batch);
  void step_failed(const Batch& batch);

  /// The stage ended: its acknowledged and queued episodes become stale; its in-flight ones
  /// become stale once acknowledged. Returns how many were marked now.
  std::uint64_t end_stage(EpisodeStage stage);
  /// The learner went back to `restored`: episodes dispatched at later versions are orphaned
  /// (in-flight ones once acknowledged). Returns how many were marked now.
  std::uint64_t rollback(PolicyVersion restored);

  // Restoring (coordinator/coordinator_state.h).
  /// Puts an entry back as saved (phases queued, in flight, acknowledged).
  void restore_entry(LedgerEntry entry);
  void restore_counters(StalenessCounters c, std::uint64_t next_seq, std::uint64_t next_ack_seq,
                        std::uint64_t trained, std::uint64_t stale, std::uint64_t orphaned);
  /// Mints the next episode without dispatching it (its task from the sampler), as queued.
  LedgerEntry& mint_queued(EpisodeStage stage, PolicyVersion version);

  const LedgerEntry* find(const EpisodeId& episode) const;
  LedgerCounts counts() const;
  const std::map<EpisodeId, LedgerEntry>& entries() const { return entries_; }
  const StalenessController& staleness() const { return staleness_; }
  const TaskSampler& sampler() const { return sampler_; }
  std::uint64_t next_seq() const { return next_seq_; }
  std::uint64_t next_ack_seq() const { return next_ack_seq_; }
  /// Totals over the run (restored ones included).
  std::uint64_t trained_total() const { return trained_total_; }
  std::uint64_t stale_total() const { return stale_total_; }
  std::uint64_t orphaned_total() const { return orphaned_total_; }
  const RunId& run() const { return run_; }

 private:
  void set_phase(LedgerEntry& e, EpisodePhase phase);

  RunId run_;
  StalenessController staleness_;
  TaskSampler sampler_;
  std::map<EpisodeId, LedgerEntry> entries_;
  std::set<std::uint64_t> queued_;  // seqs of queued episodes, the oldest first
  std::map<std::uint64_t, EpisodeId> by_seq_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t next_ack_seq_ = 0;
  std::uint64_t trained_total_ = 0;
  std::uint64_t stale_total_ = 0;
  std::uint64_t orphaned_total_ = 0;
};

}  // namespace cuda_agent
