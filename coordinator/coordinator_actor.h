// The coordinator: the one owner of a training run (DESIGN.md section 2; issue 24). Start here.
//
// Files (coordinator/):
//   staleness.h          AReaL's admission bound: accepted + running <= (S + version + 1) * batch
//   task_sampler.h       one seeded permutation of the tasks per epoch; position saved
//   episode_ledger.h     every episode's life: in flight -> acknowledged -> trained | stale |
//                        orphaned; reruns of lost workers; batches (pure logic)
//   membership.h         heartbeats: first grace, suspect after the timeout, lost after twice it
//   coordinator_state.h  the state saved with each step and checkpoint; restore from the store
//   coordinator_store.h  the store behind a narrow interface (RunStore adapter; fake in tests)
//   learner_peer.h       the learner's typed protocol (train_step -> step_done, checkpoint)
//   coordinator_actor.h  this actor: messages, timers, the step loop (this file)
//
// One step, walked (S = 1, batch B, version v published):
//  1. Rollout workers ask for work (work_atom, WorkRequest). The ledger hands out a queued rerun
//     or a new episode (id "<run>/ep<seq>", task from the sampler) while the staleness bound has
//     capacity at v; otherwise the reply is "none now" with a retry hint. A worker is a member
//     from its first message and heartbeats (heartbeat_atom) every interval.
//  2. A worker finishes and submits the trajectory (submit_atom, TrajectorySubmission with the
//     store's EpisodeRecord). The coordinator writes the episode (and its committed attempt) with
//     RunStore::submit and answers only from the store's callback, which comes back as a message
//     (stored_atom): the actor never blocks on the disk. Repeats are answered idempotently.
//  3. With B acknowledged episodes of the stage (stale ones past S dropped first), the oldest
//     form step k's batch, in mint order; the learner gets train_step(TrainStep{k, stage, v, ids,
//     replay}), where replay holds the batches of the steps since the latest recorded checkpoint
//     (so a learner restarted from it trains them again first: the lineage stays one).
//  4. step_done(StepDone{k, v + 1, metrics}): the episodes are trained (each records its
//     staleness); ONE store write holds the step's metrics and the RunRecord with version v + 1
//     and the coordinator's state (coordinator_state.h). Once it is synced, v + 1 is published to
//     every subscriber (version_atom) and admission uses it: B more episodes fit the bound.
//  5. Every checkpoint_every_steps steps, the learner is asked for a checkpoint before the next
//     step; its CheckpointRecord and the coordinator's state (the replay list now empty) go in
//     one store write.
//  6. After a stage's steps, its leftover episodes become stale and the next stage of the plan
//     starts (single-turn-ppo -> agent-warmup -> agentic-ppo, or any one alone). After the last,
//     the run is "finished" and work requests get "none now: run finished".
//
// Faults: a rollout worker silent past its limit (membership.h) is lost: its in-flight episodes
// are queued and rerun (same id, attempt + 1); a late submission of the old attempt is refused
// as superseded, so the episode is counted once. A learner that dies (monitored) or fails a
// step gets the batch offered again once a learner is attached; the restarted learner resumes
// from its newest checkpoint and replays the steps after it (TrainStep.replay), so its weights
// are those the lost one had, and versions and lineage go on unbroken. A store write that fails is
// retried after store_retry_ms (writes are idempotent). The coordinator itself restarts from the
// store (start_coordinator, coordinator_state.h's restore rule).
//
// Supervision: the coordinator monitors every peer handle it is given (learner, subscribers) and
// reacts to their exit; it spawns no children. Its own parent restarts it (start_coordinator
// again: the store is the state) or escalates; see coordinator_supervisor.h.
//
// Threading and ordering: a CAF event-based actor; every method of its state runs on the actor,
// one message at a time. Store callbacks run on the store's thread and only send a message.
// The new version is published strictly after the write that records it is durable; a
// trajectory is acknowledged strictly after the write that stores it is durable.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/caf_inspect.h"
#include "actors/work_protocol.h"
#include "coordinator/coordinator_state.h"
#include "coordinator/coordinator_store.h"
#include "coordinator/learner_peer.h"
#include "coordinator/membership.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

using heartbeat_atom = caf::atom_constant<caf::atom("cheartbt")>;
using attach_learner_atom = caf::atom_constant<caf::atom("clearner")>;
using subscribe_atom = caf::atom_constant<caf::atom("csubscr")>;
using version_atom = caf::atom_constant<caf::atom("cversion")>;
using status_atom = caf::atom_constant<caf::atom("cstatus")>;
using stored_atom = caf::atom_constant<caf::atom("cstored")>;  // internal
using tick_atom = caf::atom_constant<caf::atom("ctick")>;      // internal

/// Internal: a store write completed (sent by the store's callback).
struct StoreDone {
  std::uint64_t write_id = 0;
  bool ok = false;
  Error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Heartbeat& x) {
  return f(caf::meta::type_name("cuda_agent.Heartbeat"), x.member, x.role, x.degraded);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VersionPublished& x) {
  return f(caf::meta::type_name("cuda_agent.VersionPublished"), x.version, x.step, x.stage);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CoordinatorStatus& x) {
  return f(caf::meta::type_name("cuda_agent.CoordinatorStatus"), x.step, x.version, x.stage,
           x.finished, x.trained, x.stale, x.orphaned, x.waiting, x.in_flight, x.queued, x.accepted,
           x.running, x.rejected, x.members, x.checkpoints, x.aborted, x.failure, x.degraded);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StoreDone& x) {
  return f(caf::meta::type_name("cuda_agent.StoreDone"), x.write_id, x.ok, x.error);
}

/// Receives each published version.
using version_subscriber = caf::typed_actor<caf::reacts_to<version_atom, VersionPublished>>;

/// The coordinator's protocol. stored_atom and tick_atom are its own (store callbacks, timer).
using coordinator_actor =
    caf::typed_actor<caf::replies_to<work_atom, WorkRequest>::with<WorkReply>,
                     caf::replies_to<submit_atom, TrajectorySubmission>::with<SubmitReply>,
                     caf::reacts_to<heartbeat_atom, Heartbeat>,
                     caf::reacts_to<attach_learner_atom, learner_peer>,
                     caf::reacts_to<subscribe_atom, version_subscriber>,
                     caf::replies_to<status_atom>::with<CoordinatorStatus>,
                     caf::reacts_to<stored_atom, StoreDone>, caf::reacts_to<tick_atom>>;

/// One stage of the run's plan.
struct StagePlan {
  EpisodeStage stage = EpisodeStage::kAgenticPpo;
  std::uint64_t steps = 1;  ///< learner steps in this stage
};
/// "single-turn-ppo", "agent-warmup", "agentic-ppo" (LearnerOptions::stage) -> the stage.
Expected<EpisodeStage> stage_from_name(std::string_view name);

struct CoordinatorOptions {
  RunId run;
  /// Stages in order; one entry runs that stage alone. Must not be empty.
  std::vector<StagePlan> stages;
  /// The run's task ids (the sampler's population). Must not be empty.
  std::vector<TaskId> tasks;
  /// [run].seed: the sampler's seed.
  std::uint64_t seed = 0;
  /// [learner] group_size: episodes of each task the sampler draws in a row.
  std::uint64_t group_size = 1;
  /// batch_episodes and S from [learner]; max_concurrent from the rollout plan.
  StalenessOptions staleness;
  /// From [run].
  MembershipOptions membership;
  /// [learner].checkpoint_every_steps. Default: 20.
  std::uint64_t checkpoint_every_steps = 20;
  /// What "none now" replies tell a worker to wait. Default: 1 s.
  std::chrono::milliseconds retry_hint_ms{1000};
  /// A learner step (or checkpoint) taking longer fails and its batch is offered again.
  /// Default: 1 h.
  std::chrono::milliseconds step_timeout_ms{3'600'000};
  /// Pause before a failed store write of a step or checkpoint is tried again. Default: 1 s.
  std::chrono::milliseconds store_retry_ms{1000};
  /// Stored in the RunRecord (TOML text).
  std::string manifest;
  /// A role the run is waiting on with no live member for this long fails the run (a run that
  /// cannot go on ends, with the reason in its status, instead of waiting for ever): the learner
  /// whenever the run is not finished, the rollout workers while no step is being trained. The
  /// clock starts when the role's last member is lost (or at start); at least
  /// first_heartbeat_grace_ms + 2 x heartbeat_timeout_ms is waited. 0: never. Default: 15 min.
  std::chrono::milliseconds vacancy_timeout_ms{900'000};
};

/// Registers every message type of the coordinator and learner protocols with CAF (so they can
/// cross a CAF network boundary and print by name). Call on the config before the system starts.
void add_coordinator_message_types(caf::actor_system_config& config);

/// The inputs of restore_from_store for these options.
RestoreInputs restore_inputs(const CoordinatorOptions& options);

/// Spawns the coordinator on a restored state. `store` must outlive the actor.
coordinator_actor spawn_coordinator(caf::actor_system& system, CoordinatorOptions options,
                                    CoordinatorStore& store, Restored restored);

/// Restores from `store` (restore_from_store) and spawns; errors from the store or the restore.
Expected<coordinator_actor> start_coordinator(caf::actor_system& system, CoordinatorOptions options,
                                              CoordinatorStore& store,
                                              RestorePoint point = RestorePoint::kLatestStep);

}  // namespace cuda_agent
