#include "coordinator/coordinator_state.h"

#include <map>

namespace cuda_agent {

CoordinatorStateRecord snapshot_state(const EpisodeLedger& ledger, const RunProgress& progress) {
  CoordinatorStateRecord s;
  s.step = progress.step;
  s.stage_index = progress.stage_index;
  s.stage_steps = progress.stage_steps;
  s.policy_version = progress.version;
  s.sampler_epoch = ledger.sampler().position().epoch;
  s.sampler_index = ledger.sampler().position().index;
  s.next_episode_seq = ledger.next_seq();
  s.accepted = ledger.staleness().counters().accepted;
  s.running = ledger.staleness().counters().running;
  s.rejected = ledger.staleness().counters().rejected;
  s.trained = ledger.trained_total();
  s.stale = ledger.stale_total();
  s.orphaned = ledger.orphaned_total();
  s.next_ack_seq = ledger.next_ack_seq();
  for (const auto& [id, e] : ledger.entries()) {
    // A batch in training is saved as acknowledged: until its step is recorded it is not trained.
    const bool waiting =
        e.phase == EpisodePhase::kAcknowledged || e.phase == EpisodePhase::kTraining;
    if (!waiting && e.phase != EpisodePhase::kInFlight && e.phase != EpisodePhase::kQueued) {
      continue;
    }
    LedgerEpisodeRecord r;
    r.episode_id = e.episode_id;
    r.task_id = e.task_id;
    r.seq = e.seq;
    r.attempt = e.attempt;
    r.worker_id = e.worker_id;
    r.dispatched_version = e.dispatched_version;
    r.phase = static_cast<std::uint8_t>(waiting ? EpisodePhase::kAcknowledged : e.phase);
    r.stage = e.stage;
    r.ack_seq = e.ack_seq;
    s.episodes.push_back(std::move(r));
  }
  s.last_step_episodes = progress.last_step_episodes;
  s.steps_since_checkpoint = progress.steps_since_checkpoint;
  return s;
}

Expected<Restored> restore_ledger(const RestoreInputs& in, const CoordinatorStateRecord* saved,
                                  const std::vector<EpisodeSummary>& stored) {
  const CoordinatorStateRecord empty;
  const CoordinatorStateRecord& s = saved != nullptr ? *saved : empty;
  Restored out{EpisodeLedger(in.run, in.staleness,
                             TaskSampler(in.tasks, in.seed, {s.sampler_epoch, s.sampler_index},
                                         in.group_size)),
               RunProgress{s.step, s.stage_index, s.stage_steps, s.policy_version,
                           s.last_step_episodes, s.steps_since_checkpoint},
               {}};
  EpisodeLedger& ledger = out.ledger;
  StalenessCounters counters{s.accepted, 0, s.rejected};
  std::uint64_t next_ack = s.next_ack_seq;

  // 1. Saved entries; in flight becomes queued.
  for (const LedgerEpisodeRecord& r : s.episodes) {
    LedgerEntry e;
    e.episode_id = r.episode_id;
    e.task_id = r.task_id;
    e.seq = r.seq;
    e.attempt = r.attempt;
    e.dispatched_version = r.dispatched_version;
    e.stage = r.stage;
    e.ack_seq = r.ack_seq;
    e.phase = static_cast<EpisodePhase>(r.phase);
    if (e.phase != EpisodePhase::kAcknowledged) {
      e.phase = EpisodePhase::kQueued;
      ++out.report.requeued;
    }
    ledger.restore_entry(std::move(e));
  }
  ledger.restore_counters(counters, s.next_episode_seq, next_ack, s.trained, s.stale, s.orphaned);

  // 2. Stored episodes the saved state had in flight or queued; collect those minted later.
  std::map<std::uint64_t, const EpisodeSummary*> later;
  std::uint64_t adopted = 0;
  std::uint64_t adopted_aborted = 0;  // stored aborted: settled stale, as acknowledge() does
  auto adopt = [&](const LedgerEntry& e, const EpisodeSummary& sum) {
    LedgerEntry a = e;
    if (sum.status == EpisodeStatus::kAborted) {
      a.phase = EpisodePhase::kStale;
      ++adopted_aborted;
    } else {
      a.phase = EpisodePhase::kAcknowledged;
      a.ack_seq = next_ack++;
    }
    if (a.attempt == 0) a.attempt = 1;
    if (a.seq >= s.next_episode_seq) a.dispatched_version = sum.policy_version;
    ledger.restore_entry(std::move(a));
    ++adopted;
  };
  for (const EpisodeSummary& sum : stored) {
    std::optional<std::uint64_t> seq = parse_episode_seq(in.run, sum.episode_id);
    if (!seq) continue;  // not minted by a coordinator (e.g. a stand-alone rollout)
    if (*seq >= s.next_episode_seq) {
      later[*seq] = &sum;
      continue;
    }
    const LedgerEntry* e = ledger.find(sum.episode_id);
    if (e != nullptr && e->phase == EpisodePhase::kQueued) {
      adopt(*e, sum);
      --out.report.requeued;
    }
  }

  // 3. Re-mint what was minted after the save, in seq order, checking each task.
  const std::uint64_t end = later.empty() ? s.next_episode_seq : later.rbegin()->first + 1;
  for (std::uint64_t seq = s.next_episode_seq; seq < end; ++seq) {
    auto it = later.find(seq);
    const EpisodeStage stage = it != later.end() ? it->second->stage : in.stage;
    LedgerEntry& e = ledger.mint_queued(stage, s.policy_version);
    e.attempt = 1;
    if (it == later.end()) {
      ++out.report.requeued;
      continue;
    }
    if (e.task_id != it->second->task_id) {
      return make_error(ErrorCategory::kInternal, "coordinator.restore_mismatch",
                        "episode " + e.episode_id.value() + " of run " + in.run.value() +
                            " has task " + it->second->task_id.value() +
                            " in the store, but the restored sampler gives " + e.task_id.value() +
                            " (seed, task set or saved position changed)");
    }
    adopt(e, *it->second);
  }
  out.report.adopted = adopted;
  counters.accepted += adopted - adopted_aborted;
  counters.rejected += adopted_aborted;
  ledger.restore_counters(counters, ledger.next_seq(), next_ack, s.trained,
                          s.stale + adopted_aborted, s.orphaned);

  // 4. Versions after the saved one are off the lineage.
  out.report.orphaned = ledger.rollback(s.policy_version);
  return out;
}

Expected<Restored> restore_from_store(const CoordinatorStore& store, const RestoreInputs& in,
                                      RestorePoint point) {
  std::optional<CoordinatorStateRecord> saved;
  if (point == RestorePoint::kLatestStep) {
    ASSIGN_OR_RETURN(std::optional<RunRecord> run, store.get_run(in.run));
    if (run && run->coordinator_state) saved = run->coordinator_state;
  } else {
    ASSIGN_OR_RETURN(std::optional<CheckpointRecord> cp, store.latest_checkpoint(in.run));
    if (cp && cp->coordinator_state) saved = cp->coordinator_state;
  }
  std::vector<EpisodeSummary> stored;
  RETURN_IF_ERROR(store.scan_run(in.run, [&](const EpisodeSummary& s) {
    stored.push_back(s);
    return true;
  }));
  return restore_ledger(in, saved ? &*saved : nullptr, stored);
}

}  // namespace cuda_agent
