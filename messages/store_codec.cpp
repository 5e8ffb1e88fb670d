#include "messages/store_codec.h"

#include "messages/store.capnp.h"
#include "messages/store_value.h"

namespace cuda_agent {
namespace {

namespace ws = wire::store;
using store_value::blob;
using store_value::finish;
using store_value::read_value;
using store_value::str;
using store_value::text;

static_assert(ws::STORE_FORMAT_VERSION == kStoreFormatVersion, "store.capnp and store_codec.h");

void fill_summary(ws::EpisodeSummary::Builder b, const EpisodeSummary& v, std::uint64_t size) {
  b.setEpisodeId(text(v.episode_id.value()));
  b.setRunId(text(v.run_id.value()));
  b.setTaskId(text(v.task_id.value()));
  b.setStage(static_cast<std::uint8_t>(v.stage));
  b.setPolicyVersion(v.policy_version.value());
  b.setStatus(static_cast<ws::EpisodeStatus>(v.status));
  b.setFinalReward(v.final_reward);
  b.setTurns(v.turns);
  b.setInvalidToolCalls(v.invalid_tool_calls);
  b.setWastedLoops(v.wasted_loops);
  b.setTotalTokens(v.total_tokens);
  b.setCreatedUnixMs(v.created_unix_ms);
  b.setTrajectorySize(size);
}

void read_summary(ws::EpisodeSummary::Reader r, EpisodeSummary* v) {
  v->episode_id = EpisodeId{str(r.getEpisodeId())};
  v->run_id = RunId{str(r.getRunId())};
  v->task_id = TaskId{str(r.getTaskId())};
  v->stage = static_cast<EpisodeStage>(r.getStage());
  v->policy_version = PolicyVersion{r.getPolicyVersion()};
  v->status = static_cast<EpisodeStatus>(r.getStatus());
  v->final_reward = r.getFinalReward();
  v->turns = r.getTurns();
  v->invalid_tool_calls = r.getInvalidToolCalls();
  v->wasted_loops = r.getWastedLoops();
  v->total_tokens = r.getTotalTokens();
  v->created_unix_ms = r.getCreatedUnixMs();
  v->trajectory_size = r.getTrajectorySize();
}

void fill_coordinator_state(ws::CoordinatorState::Builder b, const CoordinatorStateRecord& v) {
  b.setStep(v.step);
  b.setStageIndex(v.stage_index);
  b.setStageSteps(v.stage_steps);
  b.setPolicyVersion(v.policy_version.value());
  b.setSamplerEpoch(v.sampler_epoch);
  b.setSamplerIndex(v.sampler_index);
  b.setNextEpisodeSeq(v.next_episode_seq);
  b.setAccepted(v.accepted);
  b.setRunning(v.running);
  b.setRejected(v.rejected);
  b.setTrained(v.trained);
  b.setStale(v.stale);
  b.setOrphaned(v.orphaned);
  b.setNextAckSeq(v.next_ack_seq);
  auto eps = b.initEpisodes(static_cast<unsigned>(v.episodes.size()));
  for (unsigned i = 0; i < v.episodes.size(); ++i) {
    const LedgerEpisodeRecord& e = v.episodes[i];
    auto o = eps[i];
    o.setEpisodeId(text(e.episode_id.value()));
    o.setTaskId(text(e.task_id.value()));
    o.setSeq(e.seq);
    o.setAttempt(e.attempt);
    o.setWorkerId(text(e.worker_id.value()));
    o.setDispatchedVersion(e.dispatched_version.value());
    o.setPhase(e.phase);
    o.setStage(static_cast<std::uint8_t>(e.stage));
    o.setAckSeq(e.ack_seq);
  }
  auto last = b.initLastStepEpisodes(static_cast<unsigned>(v.last_step_episodes.size()));
  for (unsigned i = 0; i < v.last_step_episodes.size(); ++i) {
    last.set(i, text(v.last_step_episodes[i].value()));
  }
  auto steps = b.initStepsSinceCheckpoint(static_cast<unsigned>(v.steps_since_checkpoint.size()));
  for (unsigned i = 0; i < v.steps_since_checkpoint.size(); ++i) {
    const RecordedStep& r = v.steps_since_checkpoint[i];
    auto o = steps[i];
    o.setStep(r.step);
    o.setStage(static_cast<std::uint8_t>(r.stage));
    o.setVersion(r.version.value());
    auto ids = o.initEpisodes(static_cast<unsigned>(r.episodes.size()));
    for (unsigned k = 0; k < r.episodes.size(); ++k) ids.set(k, text(r.episodes[k].value()));
  }
}

CoordinatorStateRecord read_coordinator_state(ws::CoordinatorState::Reader r) {
  CoordinatorStateRecord v;
  v.step = r.getStep();
  v.stage_index = r.getStageIndex();
  v.stage_steps = r.getStageSteps();
  v.policy_version = PolicyVersion{r.getPolicyVersion()};
  v.sampler_epoch = r.getSamplerEpoch();
  v.sampler_index = r.getSamplerIndex();
  v.next_episode_seq = r.getNextEpisodeSeq();
  v.accepted = r.getAccepted();
  v.running = r.getRunning();
  v.rejected = r.getRejected();
  v.trained = r.getTrained();
  v.stale = r.getStale();
  v.orphaned = r.getOrphaned();
  v.next_ack_seq = r.getNextAckSeq();
  for (auto o : r.getEpisodes()) {
    LedgerEpisodeRecord e;
    e.episode_id = EpisodeId{str(o.getEpisodeId())};
    e.task_id = TaskId{str(o.getTaskId())};
    e.seq = o.getSeq();
    e.attempt = o.getAttempt();
    e.worker_id = WorkerId{str(o.getWorkerId())};
    e.dispatched_version = PolicyVersion{o.getDispatchedVersion()};
    e.phase = o.getPhase();
    e.stage = static_cast<EpisodeStage>(o.getStage());
    e.ack_seq = o.getAckSeq();
    v.episodes.push_back(std::move(e));
  }
  for (auto t : r.getLastStepEpisodes()) v.last_step_episodes.push_back(EpisodeId{str(t)});
  for (auto o : r.getStepsSinceCheckpoint()) {
    RecordedStep s;
    s.step = o.getStep();
    s.stage = static_cast<EpisodeStage>(o.getStage());
    s.version = PolicyVersion{o.getVersion()};
    for (auto t : o.getEpisodes()) s.episodes.push_back(EpisodeId{str(t)});
    v.steps_since_checkpoint.push_back(std::move(s));
  }
  return v;
}

}  // namespace

std::string to_string(EpisodeStage stage) {
  switch (stage) {
    case EpisodeStage::kEvaluation: return "evaluation";
    case EpisodeStage::kSingleTurnWarmup: return "single_turn_warmup";
    case EpisodeStage::kAgentWarmup: return "agent_warmup";
    case EpisodeStage::kAgenticPpo: return "agentic_ppo";
  }
  return "stage_" + std::to_string(static_cast<int>(stage));
}

std::string_view to_string(EpisodeStatus status) {
  switch (status) {
    case EpisodeStatus::kCompleted: return "completed";
    case EpisodeStatus::kAborted: return "aborted";
    case EpisodeStatus::kTruncated: return "truncated";
    case EpisodeStatus::kFailed: return "failed";
  }
  return "unknown";
}

std::string encode_store_value(const StoreHeader& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::StoreHeader>();
  b.setMagic(text(v.magic));
  b.setFormatVersion(v.format_version);
  b.setCreatedUnixMs(v.created_unix_ms);
  b.setCreatedBy(text(v.created_by));
  return finish(m, StoreRecordKind::kStoreHeader);
}

std::string encode_store_value(const EpisodeSummary& v) {
  capnp::MallocMessageBuilder m;
  fill_summary(m.initRoot<ws::EpisodeSummary>(), v, v.trajectory_size);
  return finish(m, StoreRecordKind::kEpisodeSummary);
}

std::string encode_store_value(const EpisodeRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Episode>();
  fill_summary(b.initSummary(), v, v.trajectory_bytes.size());
  b.adoptTrajectory(blob(m, v.trajectory_bytes));
  return finish(m, StoreRecordKind::kEpisode);
}

std::string encode_store_value(const TaskRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Task>();
  b.setTaskId(text(v.task_id.value()));
  b.setSuite(text(v.suite));
  b.setContentHash(text(v.content_hash));
  b.adoptBody(blob(m, v.body));
  b.setCreatedUnixMs(v.created_unix_ms);
  return finish(m, StoreRecordKind::kTask);
}

std::string encode_store_value(const BaselineRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Baseline>();
  b.setTaskId(text(v.task_id.value()));
  b.setDevice(text(v.device));
  b.setTorchVersion(text(v.torch_version));
  b.setPrecision(text(v.precision));
  b.setEagerMs(v.eager_ms);
  b.setCompileMs(v.compile_ms);
  b.setRecordedUnixMs(v.recorded_unix_ms);
  return finish(m, StoreRecordKind::kBaseline);
}

std::string encode_store_value(const ArtifactRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Artifact>();
  b.setHash(text(v.hash));
  b.setTaskId(text(v.task_id.value()));
  b.setKind(text(v.kind));
  b.adoptBytes(blob(m, v.bytes));
  b.setBuildLog(text(v.build_log));
  b.setCreatedUnixMs(v.created_unix_ms);
  return finish(m, StoreRecordKind::kArtifact);
}

std::string encode_store_value(const EvaluationRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Evaluation>();
  b.setEvaluationId(text(v.evaluation_id.value()));
  b.setRunId(text(v.run_id.value()));
  b.setTaskId(text(v.task_id.value()));
  b.setEpisodeId(text(v.episode_id.value()));
  b.setArtifactHash(text(v.artifact_hash));
  b.setReward(v.reward);
  b.setVerified(v.verified);
  b.setSpeedupVsEager(v.speedup_vs_eager);
  b.setSpeedupVsCompile(v.speedup_vs_compile);
  b.adoptAudit(blob(m, v.audit));
  b.setCreatedUnixMs(v.created_unix_ms);
  return finish(m, StoreRecordKind::kEvaluation);
}

std::string encode_store_value(const RunRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Run>();
  b.setRunId(text(v.run_id.value()));
  b.setCreatedUnixMs(v.created_unix_ms);
  b.setUpdatedUnixMs(v.updated_unix_ms);
  b.setState(text(v.state));
  b.setStage(static_cast<std::uint8_t>(v.stage));
  b.setPolicyVersion(v.policy_version.value());
  b.setManifest(text(v.manifest));
  if (v.coordinator_state) fill_coordinator_state(b.initCoordinatorState(), *v.coordinator_state);
  return finish(m, StoreRecordKind::kRun);
}

std::string encode_store_value(const CheckpointRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Checkpoint>();
  b.setRunId(text(v.run_id.value()));
  b.setStep(v.step);
  b.setPolicyVersion(v.policy_version.value());
  b.setStage(static_cast<std::uint8_t>(v.stage));
  b.setPath(text(v.path));
  b.setSizeBytes(v.size_bytes);
  b.setChecksum(text(v.checksum));
  b.setCreatedUnixMs(v.created_unix_ms);
  if (v.coordinator_state) fill_coordinator_state(b.initCoordinatorState(), *v.coordinator_state);
  return finish(m, StoreRecordKind::kCheckpoint);
}

std::string encode_store_value(const MetricRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::Metric>();
  b.setRunId(text(v.run_id.value()));
  b.setName(text(v.name));
  b.setStep(v.step);
  b.setValue(v.value);
  b.setUnixMs(v.unix_ms);
  return finish(m, StoreRecordKind::kMetric);
}

std::string encode_store_value(const EpisodeAttemptRecord& v) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<ws::EpisodeAttempt>();
  b.setRunId(text(v.run_id.value()));
  b.setEpisodeId(text(v.episode_id.value()));
  b.setAttempt(v.attempt);
  b.setTaskId(text(v.task_id.value()));
  b.setWorkerId(text(v.worker_id.value()));
  b.setState(static_cast<ws::AttemptState>(v.state));
  b.setStartedUnixMs(v.started_unix_ms);
  b.setUpdatedUnixMs(v.updated_unix_ms);
  b.setNote(text(v.note));
  return finish(m, StoreRecordKind::kEpisodeAttempt);
}

Status decode_store_value(std::string_view bytes, StoreHeader* out) {
  return read_value<ws::StoreHeader>(bytes, StoreRecordKind::kStoreHeader, [&](auto r) {
    out->magic = str(r.getMagic());
    out->format_version = r.getFormatVersion();
    out->created_unix_ms = r.getCreatedUnixMs();
    out->created_by = str(r.getCreatedBy());
  });
}

Status decode_store_value(std::string_view bytes, EpisodeSummary* out) {
  return read_value<ws::EpisodeSummary>(bytes, StoreRecordKind::kEpisodeSummary,
                                        [&](auto r) { read_summary(r, out); });
}

Status decode_store_value(std::string_view bytes, EpisodeRecord* out) {
  return read_value<ws::Episode>(bytes, StoreRecordKind::kEpisode, [&](auto r) {
    read_summary(r.getSummary(), out);
    out->trajectory_bytes = str(r.getTrajectory());
  });
}

Status decode_store_value(std::string_view bytes, TaskRecord* out) {
  return read_value<ws::Task>(bytes, StoreRecordKind::kTask, [&](auto r) {
    out->task_id = TaskId{str(r.getTaskId())};
    out->suite = str(r.getSuite());
    out->content_hash = str(r.getContentHash());
    out->body = str(r.getBody());
    out->created_unix_ms = r.getCreatedUnixMs();
  });
}

Status decode_store_value(std::string_view bytes, BaselineRecord* out) {
  return read_value<ws::Baseline>(bytes, StoreRecordKind::kBaseline, [&](auto r) {
    out->task_id = TaskId{str(r.getTaskId())};
    out->device = str(r.getDevice());
    out->torch_version = str(r.getTorchVersion());
    out->precision = str(r.getPrecision());
    out->eager_ms = r.getEagerMs();
    out->compile_ms = r.getCompileMs();
    out->recorded_unix_ms = r.getRecordedUnixMs();
  });
}

Status decode_store_value(std::string_view bytes, ArtifactRecord* out) {
  return read_value<ws::Artifact>(bytes, StoreRecordKind::kArtifact, [&](auto r) {
    out->hash = str(r.getHash());
    out->task_id = TaskId{str(r.getTaskId())};
    out->kind = str(r.getKind());
    out->bytes = str(r.getBytes());
    out->build_log = str(r.getBuildLog());
    out->created_unix_ms = r.getCreatedUnixMs();
  });
}

Status decode_store_value(std::string_view bytes, EvaluationRecord* out) {
  return read_value<ws::Evaluation>(bytes, StoreRecordKind::kEvaluation, [&](auto r) {
    out->evaluation_id = EvaluationId{str(r.getEvaluationId())};
    out->run_id = RunId{str(r.getRunId())};
    out->task_id = TaskId{str(r.getTaskId())};
    out->episode_id = EpisodeId{str(r.getEpisodeId())};
    out->artifact_hash = str(r.getArtifactHash());
    out->reward = r.getReward();
    out->verified = r.getVerified();
    out->speedup_vs_eager = r.getSpeedupVsEager();
    out->speedup_vs_compile = r.getSpeedupVsCompile();
    out->audit = str(r.getAudit());
    out->created_unix_ms = r.getCreatedUnixMs();
  });
}

Status decode_store_value(std::string_view bytes, RunRecord* out) {
  return read_value<ws::Run>(bytes, StoreRecordKind::kRun, [&](auto r) {
    out->run_id = RunId{str(r.getRunId())};
    out->created_unix_ms = r.getCreatedUnixMs();
    out->updated_unix_ms = r.getUpdatedUnixMs();
    out->state = str(r.getState());
    out->stage = static_cast<EpisodeStage>(r.getStage());
    out->policy_version = PolicyVersion{r.getPolicyVersion()};
    out->manifest = str(r.getManifest());
    out->coordinator_state.reset();
    if (r.hasCoordinatorState())
      out->coordinator_state = read_coordinator_state(r.getCoordinatorState());
  });
}

Status decode_store_value(std::string_view bytes, CheckpointRecord* out) {
  return read_value<ws::Checkpoint>(bytes, StoreRecordKind::kCheckpoint, [&](auto r) {
    out->run_id = RunId{str(r.getRunId())};
    out->step = r.getStep();
    out->policy_version = PolicyVersion{r.getPolicyVersion()};
    out->stage = static_cast<EpisodeStage>(r.getStage());
    out->path = str(r.getPath());
    out->size_bytes = r.getSizeBytes();
    out->checksum = str(r.getChecksum());
    out->created_unix_ms = r.getCreatedUnixMs();
    out->coordinator_state.reset();
    if (r.hasCoordinatorState())
      out->coordinator_state = read_coordinator_state(r.getCoordinatorState());
  });
}

Status decode_store_value(std::string_view bytes, MetricRecord* out) {
  return read_value<ws::Metric>(bytes, StoreRecordKind::kMetric, [&](auto r) {
    out->run_id = RunId{str(r.getRunId())};
    out->name = str(r.getName());
    out->step = r.getStep();
    out->value = r.getValue();
    out->unix_ms = r.getUnixMs();
  });
}

std::string to_string(AttemptState state) {
  switch (state) {
    case AttemptState::kRunning: return "running";
    case AttemptState::kCommitted: return "committed";
    case AttemptState::kAborted: return "aborted";
  }
  return "state_" + std::to_string(static_cast<int>(state));
}

Status decode_store_value(std::string_view bytes, EpisodeAttemptRecord* out) {
  return read_value<ws::EpisodeAttempt>(bytes, StoreRecordKind::kEpisodeAttempt, [&](auto r) {
    out->run_id = RunId{str(r.getRunId())};
    out->episode_id = EpisodeId{str(r.getEpisodeId())};
    out->attempt = r.getAttempt();
    out->task_id = TaskId{str(r.getTaskId())};
    out->worker_id = WorkerId{str(r.getWorkerId())};
    out->state = static_cast<AttemptState>(r.getState());
    out->started_unix_ms = r.getStartedUnixMs();
    out->updated_unix_ms = r.getUpdatedUnixMs();
    out->note = str(r.getNote());
  });
}

}  // namespace cuda_agent
