#include "coordinator/coordinator_actor.h"

#include <caf/all.hpp>

#include <algorithm>
#include <map>
#include <optional>

#include "core/clock.h"
#include "core/log.h"

namespace cuda_agent {
namespace {

enum class StepPhase : std::uint8_t { kIdle, kTraining, kRecording, kCheckpointing };
enum class WriteKind : std::uint8_t { kEpisode, kStep, kCheckpoint };

struct PendingWrite {
  WriteKind kind = WriteKind::kEpisode;
  EpisodeId episode;      // kEpisode
  WorkerId worker;        // kEpisode
  StoreWrite write;       // kStep, kCheckpoint: kept to retry
  bool trainable = true;  // kEpisode: false when it was submitted aborted
  std::vector<caf::typed_response_promise<SubmitReply>> promises;  // kEpisode
  PolicyVersion new_version;                                       // kStep
};

struct CoordinatorActorState {
  static inline const char* name = "cuda_agent.coordinator";
  CoordinatorOptions options;
  CoordinatorStore* store = nullptr;
  std::optional<EpisodeLedger> ledger;
  std::optional<Membership> membership;
  RunProgress progress;
  PolicyVersion published;  // the version admission and dispatch use: durable and announced
  learner_peer learner;
  std::vector<version_subscriber> subscribers;
  std::map<std::uint64_t, PendingWrite> writes;
  std::vector<std::uint64_t> failed_writes;  // kStep/kCheckpoint writes to retry on the tick
  std::map<EpisodeId, std::uint64_t> storing;
  std::uint64_t next_write_id = 0;
  StepPhase phase = StepPhase::kIdle;
  std::optional<Batch> batch;
  std::uint64_t checkpoints = 0;
  std::int64_t created_unix_ms = 0;
  std::uint64_t aborted = 0;         // episodes stored aborted since start
  std::uint64_t aborted_in_row = 0;  // ... since the last one that ran to a reward
  std::string failure;               // why the run cannot go on (then nothing is dispatched)
  // Since when a role the run is waiting on has had no live member (CoordinatorOptions::
  // vacancy_timeout_ms); absent while it has one or is not needed.
  std::map<MemberRole, caf::actor_clock::time_point> vacant_since;
  // Idle time per role since the last recorded step, sampled on every tick: the learner is busy
  // while a step or checkpoint is asked of it, the rollout side while any episode is in flight.
  struct IdleWindow {
    std::optional<caf::actor_clock::time_point> last_tick;
    caf::actor_clock::duration_type total{}, learner_busy{}, rollout_busy{};
  } idle;

  bool finished() const { return progress.stage_index >= options.stages.size(); }
  EpisodeStage stage() const {
    return finished() ? options.stages.back().stage : options.stages[progress.stage_index].stage;
  }
};

using Self = coordinator_actor::stateful_pointer<CoordinatorActorState>;

void submit_write(Self self, std::uint64_t id, StoreWrite write) {
  coordinator_actor me = caf::actor_cast<coordinator_actor>(self);
  self->state.store->submit(std::move(write), [me, id](const Status& s) {
    caf::anon_send(me, stored_atom::value,
                   StoreDone{id, s.is_ok(), s.is_ok() ? Error{} : s.error()});
  });
}

std::uint64_t add_write(Self self, PendingWrite w) {
  const std::uint64_t id = self->state.next_write_id++;
  StoreWrite to_submit;
  if (w.kind == WriteKind::kEpisode) {
    to_submit = std::move(w.write);  // an episode write is not retried here: its worker resubmits
  } else {
    to_submit = w.write;  // kept to retry
  }
  self->state.writes.emplace(id, std::move(w));
  submit_write(self, id, std::move(to_submit));
  return id;
}

RunRecord run_record(CoordinatorActorState& st) {
  RunRecord r;
  r.run_id = st.options.run;
  r.created_unix_ms = st.created_unix_ms;
  r.updated_unix_ms = now_unix_ms();
  r.state = st.finished() ? "finished" : "running";
  r.stage = st.stage();
  r.policy_version = st.progress.version;
  r.manifest = st.options.manifest;
  r.coordinator_state = snapshot_state(*st.ledger, st.progress);
  return r;
}

void maybe_start_step(Self self);

void publish(Self self) {
  auto& st = self->state;
  VersionPublished v{st.published, st.progress.step, st.stage()};
  for (const version_subscriber& s : st.subscribers) self->send(s, version_atom::value, v);
}

void request_checkpoint(Self self) {
  auto& st = self->state;
  st.phase = StepPhase::kCheckpointing;
  self->request(st.learner, st.options.step_timeout_ms, checkpoint_atom::value,
                CheckpointRequest{st.progress.step, st.progress.version})
      .then(
          [self](const CheckpointDone& done) {
            auto& st = self->state;
            CheckpointRecord cp;
            cp.run_id = st.options.run;
            cp.step = done.step;
            cp.policy_version = st.progress.version;
            cp.stage = st.stage();
            cp.path = done.path;
            cp.size_bytes = done.size_bytes;
            cp.checksum = done.checksum;
            cp.created_unix_ms = now_unix_ms();
            // The learner restarts from this checkpoint from now on: the steps it covers need no
            // replay any more.
            std::erase_if(st.progress.steps_since_checkpoint,
                          [&](const RecordedStep& r) { return r.step < done.step; });
            cp.coordinator_state = snapshot_state(*st.ledger, st.progress);
            PendingWrite w;
            w.kind = WriteKind::kCheckpoint;
            w.write.checkpoints.push_back(std::move(cp));
            w.write.runs.push_back(run_record(st));
            add_write(self, std::move(w));
          },
          [self](caf::error& e) {
            log_warn("coordinator: checkpoint at step " +
                     std::to_string(self->state.progress.step) +
                     " failed: " + self->system().render(e));
            self->state.phase = StepPhase::kIdle;
            maybe_start_step(self);
          });
}

void on_step_done(Self self, const StepDone& done) {
  auto& st = self->state;
  if (st.phase != StepPhase::kTraining || !st.batch) return;
  if (done.step != st.batch->step) {
    // The answer to this request names another step: not this batch's result. Offer it again
    // rather than wait for an answer that already came.
    log_warn("coordinator: the learner answered step " + std::to_string(st.batch->step) +
             " with step " + std::to_string(done.step) + "; its batch is offered again");
    st.ledger->step_failed(*st.batch);
    st.batch.reset();
    st.phase = StepPhase::kIdle;
    return;
  }
  const Batch batch = *st.batch;
  st.batch.reset();
  st.ledger->step_done(batch);
  double staleness_sum = 0;
  for (const EpisodeId& id : batch.episodes) staleness_sum += st.ledger->find(id)->staleness;
  st.progress.step += 1;
  st.progress.stage_steps += 1;
  st.progress.version = done.new_version;
  st.progress.last_step_episodes = batch.episodes;
  st.progress.steps_since_checkpoint.push_back(
      RecordedStep{batch.step, batch.stage, batch.version, batch.episodes});
  if (st.progress.stage_steps >= st.options.stages[st.progress.stage_index].steps) {
    st.ledger->end_stage(batch.stage);
    st.progress.stage_index += 1;
    st.progress.stage_steps = 0;
  }
  PendingWrite w;
  w.kind = WriteKind::kStep;
  w.new_version = done.new_version;
  const std::int64_t now = now_unix_ms();
  auto metric = [&](std::string name, double value) {
    w.write.metrics.push_back(
        MetricRecord{st.options.run, std::move(name), batch.step, value, now});
  };
  for (const auto& [name, value] : done.metrics) metric(name, value);
  metric("coordinator/episodes_consumed", static_cast<double>(batch.episodes.size()));
  metric("coordinator/staleness_mean",
         batch.episodes.empty() ? 0.0 : staleness_sum / static_cast<double>(batch.episodes.size()));
  metric("coordinator/stale_total", static_cast<double>(st.ledger->stale_total()));
  metric("coordinator/policy_version", static_cast<double>(done.new_version.value()));
  if (st.idle.total.count() > 0) {
    const double total = static_cast<double>(st.idle.total.count());
    metric("coordinator/window_seconds", std::chrono::duration<double>(st.idle.total).count());
    metric("idle/learner", 1.0 - static_cast<double>(st.idle.learner_busy.count()) / total);
    metric("idle/rollout", 1.0 - static_cast<double>(st.idle.rollout_busy.count()) / total);
  }
  st.idle = {st.idle.last_tick, {}, {}, {}};
  w.write.runs.push_back(run_record(st));
  st.phase = StepPhase::kRecording;
  add_write(self, std::move(w));
}

void maybe_start_step(Self self) {
  auto& st = self->state;
  if (st.finished() || !st.learner || st.phase != StepPhase::kIdle) return;
  std::optional<Batch> batch = st.ledger->form_batch(st.progress.step, st.published, st.stage());
  if (!batch) return;
  st.batch = batch;
  st.phase = StepPhase::kTraining;
  self->request(st.learner, st.options.step_timeout_ms, train_step_atom::value,
                TrainStep{batch->step, batch->stage, batch->version, batch->episodes,
                          st.progress.steps_since_checkpoint})
      .then([self](const StepDone& done) { on_step_done(self, done); },
            [self, step = batch->step](caf::error& e) {
              auto& st = self->state;
              if (st.phase != StepPhase::kTraining || !st.batch || st.batch->step != step) return;
              log_warn("coordinator: step " + std::to_string(step) +
                       " failed; its batch is offered again: " + self->system().render(e));
              st.ledger->step_failed(*st.batch);
              st.batch.reset();
              st.phase = StepPhase::kIdle;  // the tick tries again
            });
}

// A run whose episodes all abort (an unreachable policy server, a prompt over the context limit)
// would otherwise dispatch and store aborted episodes for ever: after this many in a row (at
// least 16, or 4 batches) the coordinator stops dispatching and reports the run failed.
void note_outcome(Self self, const EpisodeId& episode, bool trainable) {
  auto& st = self->state;
  if (trainable) {
    st.aborted_in_row = 0;
    return;
  }
  ++st.aborted;
  ++st.aborted_in_row;
  const std::uint64_t limit = std::max<std::uint64_t>(16, 4 * st.options.staleness.batch_episodes);
  if (st.aborted_in_row < limit || !st.failure.empty()) return;
  st.failure = "the last " + std::to_string(st.aborted_in_row) +
               " episodes were all aborted before a reward (the latest: " + episode.value() +
               "): the policy server or the tools keep failing; the rollout workers' logs and "
               "`cuda-agent trajectories show " +
               episode.value() + " --store STORE` say why";
  log_error("coordinator: run failed: " + st.failure);
}

void on_stored(Self self, const StoreDone& done) {
  auto& st = self->state;
  auto it = st.writes.find(done.write_id);
  if (it == st.writes.end()) return;
  PendingWrite& w = it->second;
  if (w.kind == WriteKind::kEpisode) {
    PendingWrite taken = std::move(w);
    st.writes.erase(it);
    st.storing.erase(taken.episode);
    SubmitReply reply{taken.episode, SubmitStatus::kAcknowledged, ""};
    if (done.ok) {
      st.ledger->acknowledge(taken.episode, taken.trainable);
      note_outcome(self, taken.episode, taken.trainable);
    } else {
      st.ledger->store_failed(taken.episode, !st.membership->known(taken.worker));
      reply.status = SubmitStatus::kStoreFailed;
      reply.message = done.error.to_string();
    }
    for (auto& p : taken.promises) p.deliver(reply);
    maybe_start_step(self);
    return;
  }
  if (!done.ok) {  // the step or checkpoint stays recorded nowhere yet: write it again
    log_warn("coordinator: store write failed, retrying: " + done.error.to_string());
    st.failed_writes.push_back(done.write_id);
    return;
  }
  const WriteKind kind = w.kind;
  const PolicyVersion new_version = w.new_version;
  st.writes.erase(it);
  if (kind == WriteKind::kStep) {
    st.published = new_version;
    publish(self);
    const std::uint64_t every = st.options.checkpoint_every_steps;
    const bool due = (every > 0 && st.progress.step % every == 0) || st.finished();
    if (due && st.learner) {
      request_checkpoint(self);
      return;
    }
  } else {
    st.checkpoints += 1;
  }
  st.phase = StepPhase::kIdle;
  maybe_start_step(self);
}

caf::typed_response_promise<SubmitReply> on_submit(Self self, TrajectorySubmission& s) {
  auto& st = self->state;
  auto promise = self->make_response_promise<SubmitReply>();
  const EpisodeId id = s.episode.episode_id;
  st.membership->heard(s.worker, MemberRole::kRolloutWorker, self->clock().now(), false);
  const LedgerEntry* e = st.ledger->find(id);
  if (s.episode.run_id != st.options.run || e == nullptr || e->task_id != s.episode.task_id) {
    promise.deliver(SubmitReply{id, SubmitStatus::kUnknown,
                                "episode " + id.value() + " (task " + s.episode.task_id.value() +
                                    ") was not dispatched by run " + st.options.run.value()});
    return promise;
  }
  for (const EvaluationRecord& ev : s.evaluations) {
    if (ev.episode_id != id || ev.run_id != st.options.run || ev.task_id != s.episode.task_id) {
      promise.deliver(SubmitReply{id, SubmitStatus::kUnknown,
                                  "evaluation " + ev.evaluation_id.value() + " (episode " +
                                      ev.episode_id.value() + ", run " + ev.run_id.value() +
                                      ") does not belong to episode " + id.value()});
      return promise;
    }
  }
  switch (st.ledger->begin_submit(id, s.attempt)) {
    case SubmitCheck::kStore: {
      PendingWrite w;
      w.kind = WriteKind::kEpisode;
      w.episode = id;
      w.worker = s.worker;
      w.trainable = s.episode.status != EpisodeStatus::kAborted;
      w.promises.push_back(promise);
      EpisodeAttemptRecord attempt;
      attempt.run_id = st.options.run;
      attempt.episode_id = id;
      attempt.attempt = s.attempt;
      attempt.task_id = s.episode.task_id;
      attempt.worker_id = s.worker;
      attempt.state = AttemptState::kCommitted;
      attempt.updated_unix_ms = now_unix_ms();
      w.write.attempts.push_back(std::move(attempt));
      w.write.episodes.push_back(std::move(s.episode));
      // The final evaluation with the bench's audit record, in the episode's own write.
      w.write.evaluations = std::move(s.evaluations);
      w.write.baselines = std::move(s.baselines);
      st.storing[id] = add_write(self, std::move(w));
      return promise;
    }
    case SubmitCheck::kStoring:
      st.writes.at(st.storing.at(id)).promises.push_back(promise);
      return promise;
    case SubmitCheck::kDuplicate:
      promise.deliver(SubmitReply{id, SubmitStatus::kAcknowledged, "already stored"});
      return promise;
    case SubmitCheck::kSuperseded:
      promise.deliver(SubmitReply{id, SubmitStatus::kSuperseded,
                                  "attempt " + std::to_string(s.attempt) + " of " + id.value() +
                                      " was taken for lost; another attempt replaces it"});
      return promise;
    case SubmitCheck::kUnknown: break;
  }
  promise.deliver(SubmitReply{id, SubmitStatus::kUnknown, "unknown episode " + id.value()});
  return promise;
}

void sample_idle(Self self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  if (st.idle.last_tick && !st.finished()) {
    const auto dt = now - *st.idle.last_tick;
    st.idle.total += dt;
    if (st.phase == StepPhase::kTraining || st.phase == StepPhase::kCheckpointing)
      st.idle.learner_busy += dt;
    if (st.ledger->counts().of(EpisodePhase::kInFlight) > 0) st.idle.rollout_busy += dt;
  }
  st.idle.last_tick = now;
}

// The roles the run is waiting on with no live member: after vacancy_timeout_ms the run fails
// (no rollout worker or learner will come back on its own once its node agents gave it up).
void check_vacancies(Self self) {
  auto& st = self->state;
  if (st.options.vacancy_timeout_ms.count() <= 0 || st.finished() || !st.failure.empty()) return;
  const auto& mo = st.options.membership;
  const auto limit = std::max<std::chrono::milliseconds>(
      st.options.vacancy_timeout_ms, mo.first_heartbeat_grace_ms + 2 * mo.heartbeat_timeout_ms);
  const auto now = self->clock().now();
  auto live = [&](MemberRole role) {
    for (const auto& [id, m] : st.membership->members())
      if (m.role == role) return true;
    return false;
  };
  const std::pair<MemberRole, bool> roles[] = {
      {MemberRole::kLearner, !st.learner && !live(MemberRole::kLearner)},
      // Rollout workers are waited on while no step is being trained.
      {MemberRole::kRolloutWorker,
       st.phase == StepPhase::kIdle && !live(MemberRole::kRolloutWorker)}};
  for (const auto& [role, vacant] : roles) {
    if (!vacant) {
      st.vacant_since.erase(role);
      continue;
    }
    const auto since = st.vacant_since.try_emplace(role, now).first->second;
    if (now - since < limit) continue;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - since).count();
    std::string degraded;
    for (const std::string& d : st.membership->degraded())
      degraded += (degraded.empty() ? "" : "; ") + d;
    st.failure = "no " + std::string(to_string(role)) + " has been alive for " +
                 std::to_string(seconds) + " s (" +
                 (degraded.empty() ? std::string("no node reports itself degraded")
                                   : "degraded: " + degraded) +
                 "): the run cannot go on. Start the role's processes again (a node agent gives "
                 "one up after its restart bound; its log says why), then `cuda-agent train` "
                 "resumes the run";
    log_error("coordinator: run failed: " + st.failure);
    return;
  }
}

void on_tick(Self self) {
  auto& st = self->state;
  sample_idle(self);
  for (const Membership::Change& c : st.membership->check(self->clock().now())) {
    if (c.health != MemberHealth::kLost) {
      log_warn("coordinator: " + std::string(to_string(c.role)) + " " + c.id.value() +
               " is suspect (silent past its limit)");
      continue;
    }
    std::vector<EpisodeId> lost = st.ledger->worker_lost(c.id);
    log_warn("coordinator: " + std::string(to_string(c.role)) + " " + c.id.value() +
             " is lost; episodes queued for a rerun: " + std::to_string(lost.size()));
  }
  std::vector<std::uint64_t> retry;
  retry.swap(st.failed_writes);
  for (std::uint64_t id : retry) submit_write(self, id, st.writes.at(id).write);
  maybe_start_step(self);
  check_vacancies(self);
  self->delayed_send(self, st.options.membership.heartbeat_interval_ms, tick_atom::value);
}

coordinator_actor::behavior_type coordinator_fn(Self self, CoordinatorOptions options,
                                                CoordinatorStore* store, Restored restored) {
  auto& st = self->state;
  st.store = store;
  st.membership.emplace(options.membership);
  st.options = std::move(options);
  st.ledger.emplace(std::move(restored.ledger));
  st.progress = std::move(restored.progress);
  st.published = st.progress.version;
  st.created_unix_ms = now_unix_ms();
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.learner && dm.source == st.learner.address()) {
      log_warn("coordinator: the learner exited: " + self->system().render(dm.reason));
      st.learner = nullptr;
      if (st.phase == StepPhase::kTraining && st.batch) {
        st.ledger->step_failed(*st.batch);
        st.batch.reset();
        st.phase = StepPhase::kIdle;
      } else if (st.phase == StepPhase::kCheckpointing) {
        st.phase = StepPhase::kIdle;
      }
    }
    auto& subs = st.subscribers;
    subs.erase(
        std::remove_if(subs.begin(), subs.end(),
                       [&](const version_subscriber& s) { return s.address() == dm.source; }),
        subs.end());
  });
  self->delayed_send(self, st.options.membership.heartbeat_interval_ms, tick_atom::value);
  return {
      [self](work_atom, const WorkRequest& r) -> WorkReply {
        auto& st = self->state;
        st.membership->heard(r.worker, MemberRole::kRolloutWorker, self->clock().now(), false);
        WorkReply reply;
        reply.retry_after_ms = st.options.retry_hint_ms.count();
        if (st.finished()) {
          reply.reason = "run finished";
          return reply;
        }
        if (!st.failure.empty()) {
          reply.reason = "run failed: " + st.failure;
          return reply;
        }
        std::optional<Assignment> a = st.ledger->dispatch(r.worker, st.published, st.stage());
        if (!a) {
          reply.reason = "staleness bound: waiting for policy version " +
                         std::to_string(st.published.value() + 1);
          return reply;
        }
        reply.assigned = true;
        reply.retry_after_ms = 0;
        reply.assignment = std::move(*a);
        return reply;
      },
      [self](submit_atom, TrajectorySubmission& s) { return on_submit(self, s); },
      [self](heartbeat_atom, const Heartbeat& h) {
        if (self->state.membership->heard(h.member, h.role, self->clock().now(), true,
                                          h.degraded)) {
          if (h.degraded.empty())
            log_info("coordinator: " + std::string(to_string(h.role)) + " " + h.member.value() +
                     " reports it is no longer degraded");
          else
            log_warn("coordinator: " + std::string(to_string(h.role)) + " " + h.member.value() +
                     " reports it is degraded: " + h.degraded);
        }
      },
      [self](attach_learner_atom, learner_peer learner) {
        self->monitor(learner);
        self->state.learner = std::move(learner);
        maybe_start_step(self);
      },
      [self](subscribe_atom, version_subscriber s) {
        self->monitor(s);
        auto& st = self->state;
        self->send(s, version_atom::value,
                   VersionPublished{st.published, st.progress.step, st.stage()});
        st.subscribers.push_back(std::move(s));
      },
      [self](status_atom) -> CoordinatorStatus {
        auto& st = self->state;
        const LedgerCounts c = st.ledger->counts();
        const StalenessCounters& k = st.ledger->staleness().counters();
        CoordinatorStatus s;
        s.step = st.progress.step;
        s.version = st.published;
        s.stage = st.stage();
        s.finished = st.finished();
        s.trained = st.ledger->trained_total();
        s.stale = st.ledger->stale_total();
        s.orphaned = st.ledger->orphaned_total();
        s.waiting = c.of(EpisodePhase::kAcknowledged) + c.of(EpisodePhase::kTraining);
        s.in_flight = c.of(EpisodePhase::kInFlight);
        s.queued = c.of(EpisodePhase::kQueued);
        s.accepted = k.accepted;
        s.running = k.running;
        s.rejected = k.rejected;
        s.members = st.membership->members().size();
        s.degraded = st.membership->degraded();
        s.checkpoints = st.checkpoints;
        s.aborted = st.aborted;
        s.failure = st.failure;
        return s;
      },
      [self](stored_atom, const StoreDone& done) { on_stored(self, done); },
      [self](tick_atom) { on_tick(self); },
  };
}

}  // namespace

Expected<EpisodeStage> stage_from_name(std::string_view name) {
  if (name == "single-turn-ppo") return EpisodeStage::kSingleTurnWarmup;
  if (name == "agent-warmup") return EpisodeStage::kAgentWarmup;
  if (name == "agentic-ppo") return EpisodeStage::kAgenticPpo;
  return make_error(
      ErrorCategory::kInvalidInput, "coordinator.unknown_stage",
      "unknown stage '" + std::string(name) + "' (single-turn-ppo, agent-warmup or agentic-ppo)");
}

void add_coordinator_message_types(caf::actor_system_config& config) {
  add_work_message_types(config);
  config.add_message_type<Heartbeat>("cuda_agent.Heartbeat");
  config.add_message_type<VersionPublished>("cuda_agent.VersionPublished");
  config.add_message_type<CoordinatorStatus>("cuda_agent.CoordinatorStatus");
  config.add_message_type<StoreDone>("cuda_agent.StoreDone");
  config.add_message_type<TrainStep>("cuda_agent.TrainStep");
  config.add_message_type<StepDone>("cuda_agent.StepDone");
  config.add_message_type<CheckpointRequest>("cuda_agent.CheckpointRequest");
  config.add_message_type<CheckpointDone>("cuda_agent.CheckpointDone");
  config.add_message_type<learner_peer>("cuda_agent.learner_peer");
  config.add_message_type<version_subscriber>("cuda_agent.version_subscriber");
}

RestoreInputs restore_inputs(const CoordinatorOptions& options) {
  RestoreInputs in;
  in.run = options.run;
  in.staleness = options.staleness;
  in.tasks = options.tasks;
  in.seed = options.seed;
  in.group_size = options.group_size;
  in.stage = options.stages.empty() ? EpisodeStage::kAgenticPpo : options.stages.front().stage;
  return in;
}

coordinator_actor spawn_coordinator(caf::actor_system& system, CoordinatorOptions options,
                                    CoordinatorStore& store, Restored restored) {
  return system.spawn(coordinator_fn, std::move(options), &store, std::move(restored));
}

Expected<coordinator_actor> start_coordinator(caf::actor_system& system, CoordinatorOptions options,
                                              CoordinatorStore& store, RestorePoint point) {
  if (options.stages.empty() || options.tasks.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "coordinator.empty_plan",
                      "run " + options.run.value() + " needs at least one stage and one task");
  }
  ASSIGN_OR_RETURN(Restored restored, restore_from_store(store, restore_inputs(options), point));
  return spawn_coordinator(system, std::move(options), store, std::move(restored));
}

}  // namespace cuda_agent
