#include "coordinator/episode_ledger.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <string_view>

namespace cuda_agent {

std::string_view to_string(EpisodePhase phase) {
  switch (phase) {
    case EpisodePhase::kQueued: return "queued";
    case EpisodePhase::kInFlight: return "in_flight";
    case EpisodePhase::kAcknowledged: return "acknowledged";
    case EpisodePhase::kTraining: return "training";
    case EpisodePhase::kTrained: return "trained";
    case EpisodePhase::kStale: return "stale";
    case EpisodePhase::kOrphaned: return "orphaned";
  }
  return "unknown";
}

EpisodeId make_episode_id(const RunId& run, std::uint64_t seq) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%08llu", static_cast<unsigned long long>(seq));
  return EpisodeId{run.value() + "/ep" + digits};
}

std::optional<std::uint64_t> parse_episode_seq(const RunId& run, const EpisodeId& id) {
  const std::string prefix = run.value() + "/ep";
  const std::string& s = id.value();
  if (s.size() <= prefix.size() || s.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::uint64_t seq = 0;
  for (std::size_t i = prefix.size(); i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9' || seq > (~std::uint64_t{0} - 9) / 10) return std::nullopt;
    seq = seq * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  return seq;
}

EpisodeLedger::EpisodeLedger(RunId run, StalenessOptions staleness, TaskSampler sampler)
    : run_(std::move(run)), staleness_(staleness), sampler_(std::move(sampler)) {}

void EpisodeLedger::set_phase(LedgerEntry& e, EpisodePhase phase) {
  if (e.phase == EpisodePhase::kQueued) queued_.erase(e.seq);
  if (phase == EpisodePhase::kQueued) queued_.insert(e.seq);
  if (phase == EpisodePhase::kTrained) ++trained_total_;
  if (phase == EpisodePhase::kStale) ++stale_total_;
  if (phase == EpisodePhase::kOrphaned) ++orphaned_total_;
  e.phase = phase;
}

LedgerEntry& EpisodeLedger::mint_queued(EpisodeStage stage, PolicyVersion version) {
  LedgerEntry e;
  e.seq = next_seq_++;
  e.episode_id = make_episode_id(run_, e.seq);
  e.task_id = sampler_.next();
  e.attempt = 0;  // the first dispatch makes it 1
  e.stage = stage;
  e.dispatched_version = version;
  e.phase = EpisodePhase::kQueued;
  queued_.insert(e.seq);
  by_seq_[e.seq] = e.episode_id;
  return entries_[e.episode_id] = std::move(e);
}

std::optional<Assignment> EpisodeLedger::dispatch(const WorkerId& worker, PolicyVersion current,
                                                  EpisodeStage stage) {
  LedgerEntry* e = nullptr;
  for (std::uint64_t seq : queued_) {
    LedgerEntry& q = entries_.at(by_seq_.at(seq));
    if (q.stage == stage) {
      e = &q;
      break;
    }
  }
  if (!staleness_.admit(current)) return std::nullopt;
  if (e == nullptr) e = &mint_queued(stage, current);
  set_phase(*e, EpisodePhase::kInFlight);
  ++e->attempt;
  e->worker_id = worker;
  e->dispatched_version = current;
  e->storing = false;
  return Assignment{e->episode_id, e->task_id, e->attempt, current, e->stage};
}

SubmitCheck EpisodeLedger::begin_submit(const EpisodeId& episode, std::uint32_t attempt) {
  auto it = entries_.find(episode);
  if (it == entries_.end()) return SubmitCheck::kUnknown;
  LedgerEntry& e = it->second;
  if (e.phase == EpisodePhase::kInFlight) {
    if (e.attempt != attempt) return SubmitCheck::kSuperseded;
    if (e.storing) return SubmitCheck::kStoring;
    e.storing = true;
    return SubmitCheck::kStore;
  }
  if (e.phase == EpisodePhase::kQueued) return SubmitCheck::kSuperseded;
  // Acknowledged once, whatever became of it since: the repeat gets the same answer.
  return SubmitCheck::kDuplicate;
}

void EpisodeLedger::acknowledge(const EpisodeId& episode, bool trainable) {
  auto it = entries_.find(episode);
  if (it == entries_.end() || it->second.phase != EpisodePhase::kInFlight) return;
  LedgerEntry& e = it->second;
  e.storing = false;
  if (e.off_lineage || e.drop_on_ack || !trainable) {
    staleness_.on_rejected();
    set_phase(e, e.off_lineage ? EpisodePhase::kOrphaned : EpisodePhase::kStale);
    return;
  }
  staleness_.on_accepted();
  e.ack_seq = next_ack_seq_++;
  set_phase(e, EpisodePhase::kAcknowledged);
}

void EpisodeLedger::store_failed(const EpisodeId& episode, bool requeue) {
  auto it = entries_.find(episode);
  if (it == entries_.end() || it->second.phase != EpisodePhase::kInFlight) return;
  it->second.storing = false;
  if (requeue) {
    staleness_.on_lost();
    it->second.worker_id = WorkerId{};
    set_phase(it->second, EpisodePhase::kQueued);
  }
}

std::vector<EpisodeId> EpisodeLedger::worker_lost(const WorkerId& worker) {
  std::vector<EpisodeId> lost;
  for (auto& [id, e] : entries_) {
    if (e.phase != EpisodePhase::kInFlight || e.worker_id != worker || e.storing) continue;
    staleness_.on_lost();
    e.worker_id = WorkerId{};
    set_phase(e, EpisodePhase::kQueued);
    lost.push_back(id);
  }
  return lost;
}

std::optional<Batch> EpisodeLedger::form_batch(std::uint64_t step, PolicyVersion current,
                                               EpisodeStage stage) {
  const std::uint64_t bound = staleness_.options().max_staleness;
  std::vector<LedgerEntry*> ready;
  for (auto& [id, e] : entries_) {
    if (e.phase != EpisodePhase::kAcknowledged) continue;
    if (e.dispatched_version < current && current.value() - e.dispatched_version.value() > bound) {
      staleness_.on_dropped();
      set_phase(e, EpisodePhase::kStale);
      continue;
    }
    if (e.stage == stage) ready.push_back(&e);
  }
  const std::uint64_t want = staleness_.options().batch_episodes;
  if (ready.size() < want) return std::nullopt;
  std::map<TaskId, std::uint64_t> ready_of_task;
  if (sampler_.group() > 1)
    for (const LedgerEntry* e : ready) ready_of_task[e->task_id] += 1;
  auto alone = [&](const LedgerEntry* e) {
    return sampler_.group() > 1 && ready_of_task[e->task_id] < 2;
  };
  std::sort(ready.begin(), ready.end(), [&](const LedgerEntry* a, const LedgerEntry* b) {
    if (a->dispatched_version != b->dispatched_version) {
      return a->dispatched_version < b->dispatched_version;
    }
    if (alone(a) != alone(b)) return !alone(a);
    return a->ack_seq < b->ack_seq;
  });
  // Trained in mint order, however the episodes arrived: a batch formed again after a restart
  // is the same TrainStep, and a learner that replays it computes the same weights.
  std::sort(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(want),
            [](const LedgerEntry* a, const LedgerEntry* b) { return a->seq < b->seq; });
  Batch batch{step, current, stage, {}};
  for (std::uint64_t i = 0; i < want; ++i) {
    set_phase(*ready[i], EpisodePhase::kTraining);
    ready[i]->trained_step = step;
    batch.episodes.push_back(ready[i]->episode_id);
  }
  return batch;
}

void EpisodeLedger::step_done(const Batch& batch) {
  for (const EpisodeId& id : batch.episodes) {
    LedgerEntry& e = entries_.at(id);
    if (e.phase != EpisodePhase::kTraining) continue;
    e.staleness = batch.version.value() - e.dispatched_version.value();
    set_phase(e, EpisodePhase::kTrained);
  }
}

void EpisodeLedger::step_failed(const Batch& batch) {
  for (const EpisodeId& id : batch.episodes) {
    LedgerEntry& e = entries_.at(id);
    if (e.phase == EpisodePhase::kTraining) set_phase(e, EpisodePhase::kAcknowledged);
  }
}

std::uint64_t EpisodeLedger::end_stage(EpisodeStage stage) {
  std::uint64_t marked = 0;
  for (auto& [id, e] : entries_) {
    if (e.stage != stage) continue;
    if (e.phase == EpisodePhase::kAcknowledged) {
      staleness_.on_dropped();
      set_phase(e, EpisodePhase::kStale);
      ++marked;
    } else if (e.phase == EpisodePhase::kQueued) {
      set_phase(e, EpisodePhase::kStale);  // never ran to the end: nothing in the store
      ++marked;
    } else if (e.phase == EpisodePhase::kInFlight) {
      e.drop_on_ack = true;
    }
  }
  return marked;
}

std::uint64_t EpisodeLedger::rollback(PolicyVersion restored) {
  std::uint64_t marked = 0;
  for (auto& [id, e] : entries_) {
    if (e.dispatched_version <= restored) continue;
    if (e.phase == EpisodePhase::kAcknowledged) {
      staleness_.on_dropped();
      set_phase(e, EpisodePhase::kOrphaned);
      ++marked;
    } else if (e.phase == EpisodePhase::kInFlight) {
      e.off_lineage = true;
    }
  }
  return marked;
}

void EpisodeLedger::restore_entry(LedgerEntry entry) {
  queued_.erase(entry.seq);  // an entry restored again (adopted) may leave the queue
  if (entry.phase == EpisodePhase::kQueued) queued_.insert(entry.seq);
  by_seq_[entry.seq] = entry.episode_id;
  entries_[entry.episode_id] = std::move(entry);
}

void EpisodeLedger::restore_counters(StalenessCounters c, std::uint64_t next_seq,
                                     std::uint64_t next_ack_seq, std::uint64_t trained,
                                     std::uint64_t stale, std::uint64_t orphaned) {
  staleness_ = StalenessController(staleness_.options(), c);
  next_seq_ = next_seq;
  next_ack_seq_ = next_ack_seq;
  trained_total_ = trained;
  stale_total_ = stale;
  orphaned_total_ = orphaned;
}

const LedgerEntry* EpisodeLedger::find(const EpisodeId& episode) const {
  auto it = entries_.find(episode);
  return it == entries_.end() ? nullptr : &it->second;
}

LedgerCounts EpisodeLedger::counts() const {
  LedgerCounts c;
  c.minted = next_seq_;
  for (const auto& [id, e] : entries_) ++c.by_phase[static_cast<int>(e.phase)];
  return c;
}

}  // namespace cuda_agent
