#include "messages/coordinator_codec.h"

#include <type_traits>

#include "messages/coordinator.capnp.h"
#include "messages/store_codec.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using namespace wire_detail;  // NOLINT: the codec's vocabulary
using WireBody = wire::CoordinatorFrame::Body;

constexpr const char* kWhat = "CoordinatorFrame";

CA_SAME_ENUM(MemberRole::kRolloutWorker, wire::MemberRole::ROLLOUT_WORKER);
CA_SAME_ENUM(MemberRole::kLearner, wire::MemberRole::LEARNER);
CA_SAME_ENUM(MemberRole::kEngine, wire::MemberRole::ENGINE);
CA_SAME_ENUM(MemberRole::kCompileWorker, wire::MemberRole::COMPILE_WORKER);
CA_SAME_ENUM(MemberRole::kBenchWorker, wire::MemberRole::BENCH_WORKER);
CA_SAME_ENUM(SubmitStatus::kAcknowledged, wire::SubmitStatus::ACKNOWLEDGED);
CA_SAME_ENUM(SubmitStatus::kSuperseded, wire::SubmitStatus::SUPERSEDED);
CA_SAME_ENUM(SubmitStatus::kUnknown, wire::SubmitStatus::UNKNOWN);
CA_SAME_ENUM(SubmitStatus::kStoreFailed, wire::SubmitStatus::STORE_FAILED);

// The union's members are in the variant's order: a member's number is its alternative's index,
// so the error for an unknown member can say what this build knows.
template <WireBody::Which which, class T>
constexpr bool same_member() {
  return std::is_same_v<
      std::variant_alternative_t<static_cast<std::size_t>(which), CoordinatorBody>, T>;
}
static_assert(same_member<WireBody::WORK_REQUEST, WorkRequest>());
static_assert(same_member<WireBody::WORK_REPLY, WorkReply>());
static_assert(same_member<WireBody::TRAJECTORY_SUBMISSION, TrajectorySubmission>());
static_assert(same_member<WireBody::SUBMIT_REPLY, SubmitReply>());
static_assert(same_member<WireBody::HEARTBEAT, Heartbeat>());
static_assert(same_member<WireBody::STATUS_REQUEST, StatusRequest>());
static_assert(same_member<WireBody::COORDINATOR_STATUS, CoordinatorStatus>());
static_assert(same_member<WireBody::ATTACH_LEARNER, AttachLearner>());
static_assert(same_member<WireBody::TRAIN_STEP, TrainStep>());
static_assert(same_member<WireBody::STEP_DONE, StepDone>());
static_assert(same_member<WireBody::CHECKPOINT_REQUEST, CheckpointRequest>());
static_assert(same_member<WireBody::CHECKPOINT_DONE, CheckpointDone>());
static_assert(same_member<WireBody::VERSION_PUBLISHED, VersionPublished>());
static_assert(same_member<WireBody::COORDINATOR_FAILURE, CoordinatorFailure>());
static_assert(std::variant_size_v<CoordinatorBody> == WireBody::COORDINATOR_FAILURE + 1);

Error bad_field(const char* field, const std::string& what) {
  return capnp_io::malformed(std::string(kWhat) + ": " + field + ": " + what);
}

// Enumerants this build does not name are refused, not guessed: a receiver cannot act on a
// submit status or role it does not know (coordinator.capnp: a new one raises formatVersion).
Expected<MemberRole> role_from_wire(wire::MemberRole w, const char* field) {
  const auto v = static_cast<std::uint16_t>(w);
  if (v > static_cast<std::uint16_t>(MemberRole::kNodeAgent)) {
    return bad_field(field, "member role " + std::to_string(v) + " is unknown to this build");
  }
  return static_cast<MemberRole>(v);
}
Expected<SubmitStatus> status_from_wire(wire::SubmitStatus w, const char* field) {
  const auto v = static_cast<std::uint16_t>(w);
  if (v > static_cast<std::uint16_t>(SubmitStatus::kStoreFailed)) {
    return bad_field(field, "submit status " + std::to_string(v) + " is unknown to this build");
  }
  return static_cast<SubmitStatus>(v);
}

std::uint8_t stage_to_wire(EpisodeStage stage) { return static_cast<std::uint8_t>(stage); }
EpisodeStage stage_from_wire(std::uint8_t stage) { return static_cast<EpisodeStage>(stage); }

// --- Encoding: one overload per body kind, chosen by std::visit.

struct BodyWriter {
  WireBody::Builder body;

  void operator()(const WorkRequest& in) {
    body.initWorkRequest().setWorker(text(in.worker.value()));
  }
  void operator()(const WorkReply& in) {
    auto out = body.initWorkReply();
    out.setAssigned(in.assigned);
    auto a = out.initAssignment();
    a.setEpisodeId(text(in.assignment.episode_id.value()));
    a.setTaskId(text(in.assignment.task_id.value()));
    a.setAttempt(in.assignment.attempt);
    a.setPolicyVersion(in.assignment.policy_version.value());
    a.setStage(stage_to_wire(in.assignment.stage));
    out.setRetryAfterMs(in.retry_after_ms);
    out.setReason(text(in.reason));
  }
  void operator()(const TrajectorySubmission& in) {
    auto out = body.initTrajectorySubmission();
    out.setWorker(text(in.worker.value()));
    out.setAttempt(in.attempt);
    out.setEpisode(as_data(encode_store_value(in.episode)));
    auto evaluations = out.initEvaluations(static_cast<unsigned>(in.evaluations.size()));
    for (unsigned i = 0; i < in.evaluations.size(); ++i)
      evaluations.set(i, as_data(encode_store_value(in.evaluations[i])));
    auto baselines = out.initBaselines(static_cast<unsigned>(in.baselines.size()));
    for (unsigned i = 0; i < in.baselines.size(); ++i)
      baselines.set(i, as_data(encode_store_value(in.baselines[i])));
  }
  void operator()(const SubmitReply& in) {
    auto out = body.initSubmitReply();
    out.setEpisodeId(text(in.episode_id.value()));
    out.setStatus(enum_to_wire<wire::SubmitStatus>(in.status));
    out.setMessage(text(in.message));
  }
  void operator()(const Heartbeat& in) {
    auto out = body.initHeartbeat();
    out.setMember(text(in.member.value()));
    out.setRole(enum_to_wire<wire::MemberRole>(in.role));
    out.setDegraded(text(in.degraded));
  }
  void operator()(const StatusRequest&) { body.initStatusRequest(); }
  void operator()(const CoordinatorStatus& in) {
    auto out = body.initCoordinatorStatus();
    out.setStep(in.step);
    out.setVersion(in.version.value());
    out.setStage(stage_to_wire(in.stage));
    out.setFinished(in.finished);
    out.setTrained(in.trained);
    out.setStale(in.stale);
    out.setOrphaned(in.orphaned);
    out.setWaiting(in.waiting);
    out.setInFlight(in.in_flight);
    out.setQueued(in.queued);
    out.setAccepted(in.accepted);
    out.setRunning(in.running);
    out.setRejected(in.rejected);
    out.setMembers(in.members);
    out.setCheckpoints(in.checkpoints);
    out.setAborted(in.aborted);
    out.setFailure(in.failure);
    auto degraded = out.initDegraded(static_cast<unsigned>(in.degraded.size()));
    for (unsigned i = 0; i < in.degraded.size(); ++i) degraded.set(i, text(in.degraded[i]));
  }
  void operator()(const AttachLearner& in) {
    body.initAttachLearner().setLearner(text(in.learner.value()));
  }
  static void put_step(wire::TrainStep::Builder out, std::uint64_t step, EpisodeStage stage,
                       PolicyVersion version, const std::vector<EpisodeId>& ids) {
    out.setStep(step);
    out.setStage(stage_to_wire(stage));
    out.setVersion(version.value());
    auto episodes = out.initEpisodes(ids.size());
    for (unsigned i = 0; i < ids.size(); ++i) episodes.set(i, text(ids[i].value()));
  }
  void operator()(const TrainStep& in) {
    auto out = body.initTrainStep();
    put_step(out, in.step, in.stage, in.version, in.episodes);
    auto replay = out.initReplay(in.replay.size());
    for (unsigned i = 0; i < in.replay.size(); ++i) {
      const RecordedStep& r = in.replay[i];
      put_step(replay[i], r.step, r.stage, r.version, r.episodes);
    }
  }
  void operator()(const StepDone& in) {
    auto out = body.initStepDone();
    out.setStep(in.step);
    out.setNewVersion(in.new_version.value());
    auto metrics = out.initMetrics(in.metrics.size());
    unsigned i = 0;
    for (const auto& [name, value] : in.metrics) {  // a map: sorted by name, names unique
      metrics[i].setName(text(name));
      metrics[i].setValue(value);
      ++i;
    }
  }
  void operator()(const CheckpointRequest& in) {
    auto out = body.initCheckpointRequest();
    out.setStep(in.step);
    out.setVersion(in.version.value());
  }
  void operator()(const CheckpointDone& in) {
    auto out = body.initCheckpointDone();
    out.setStep(in.step);
    out.setPath(text(in.path));
    out.setSizeBytes(in.size_bytes);
    out.setChecksum(text(in.checksum));
  }
  void operator()(const VersionPublished& in) {
    auto out = body.initVersionPublished();
    out.setVersion(in.version.value());
    out.setStep(in.step);
    out.setStage(stage_to_wire(in.stage));
  }
  void operator()(const CoordinatorFailure& in) {
    set_error(body.initCoordinatorFailure(), in.error);
  }
};

// --- Decoding: one function per body kind; each checks what it cannot trust.

Expected<CoordinatorBody> read_work_reply(wire::WorkReply::Reader in) {
  WorkReply out;
  out.assigned = in.getAssigned();
  auto a = in.getAssignment();
  out.assignment.episode_id = EpisodeId{str(a.getEpisodeId())};
  out.assignment.task_id = TaskId{str(a.getTaskId())};
  out.assignment.attempt = a.getAttempt();
  out.assignment.policy_version = PolicyVersion{a.getPolicyVersion()};
  out.assignment.stage = stage_from_wire(a.getStage());
  out.retry_after_ms = in.getRetryAfterMs();
  out.reason = str(in.getReason());
  return CoordinatorBody{std::move(out)};
}

// Store records embedded in a frame, each checked by the store's decoder; a bad one is this
// frame's field, named with its index.
template <class Record>
Status read_store_values(capnp::List<capnp::Data>::Reader in, const std::string& field,
                         std::vector<Record>& out) {
  out.reserve(in.size());
  for (unsigned i = 0; i < in.size(); ++i) {
    const auto data = in[i];
    Record r;
    if (Status s = decode_store_value(
            std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()), &r);
        !s) {
      const std::string where = field + "[" + std::to_string(i) + "]";
      return bad_field(where.c_str(), s.error().code + ": " + s.error().message);
    }
    out.push_back(std::move(r));
  }
  return Status::ok();
}

Expected<CoordinatorBody> read_submission(wire::TrajectorySubmission::Reader in) {
  TrajectorySubmission out;
  out.worker = WorkerId{str(in.getWorker())};
  out.attempt = in.getAttempt();
  // The store's decoder checks the record (prefix, kind, version, structure); its codes are the
  // store's, so the error is restated as this frame's.
  const auto data = in.getEpisode();
  const std::string_view episode(reinterpret_cast<const char*>(data.begin()), data.size());
  if (Status s = decode_store_value(episode, &out.episode); !s) {
    return bad_field("TrajectorySubmission.episode", s.error().code + ": " + s.error().message);
  }
  RETURN_IF_ERROR(
      read_store_values(in.getEvaluations(), "TrajectorySubmission.evaluations", out.evaluations));
  RETURN_IF_ERROR(
      read_store_values(in.getBaselines(), "TrajectorySubmission.baselines", out.baselines));
  return CoordinatorBody{std::move(out)};
}

Expected<CoordinatorBody> read_status(wire::CoordinatorStatus::Reader in) {
  CoordinatorStatus out;
  out.step = in.getStep();
  out.version = PolicyVersion{in.getVersion()};
  out.stage = stage_from_wire(in.getStage());
  out.finished = in.getFinished();
  out.trained = in.getTrained();
  out.stale = in.getStale();
  out.orphaned = in.getOrphaned();
  out.waiting = in.getWaiting();
  out.in_flight = in.getInFlight();
  out.queued = in.getQueued();
  out.accepted = in.getAccepted();
  out.running = in.getRunning();
  out.rejected = in.getRejected();
  out.members = in.getMembers();
  out.checkpoints = in.getCheckpoints();
  out.aborted = in.getAborted();
  out.failure = in.getFailure();
  for (auto d : in.getDegraded()) out.degraded.push_back(str(d));
  return CoordinatorBody{std::move(out)};
}

Expected<CoordinatorBody> read_train_step(wire::TrainStep::Reader in) {
  TrainStep out;
  out.step = in.getStep();
  out.stage = stage_from_wire(in.getStage());
  out.version = PolicyVersion{in.getVersion()};
  out.episodes.reserve(in.getEpisodes().size());
  for (auto id : in.getEpisodes()) out.episodes.push_back(EpisodeId{str(id)});
  for (auto r : in.getReplay()) {
    RecordedStep step;
    step.step = r.getStep();
    step.stage = stage_from_wire(r.getStage());
    step.version = PolicyVersion{r.getVersion()};
    for (auto id : r.getEpisodes()) step.episodes.push_back(EpisodeId{str(id)});
    out.replay.push_back(std::move(step));
  }
  return CoordinatorBody{std::move(out)};
}

Expected<CoordinatorBody> read_step_done(wire::StepDone::Reader in) {
  StepDone out;
  out.step = in.getStep();
  out.new_version = PolicyVersion{in.getNewVersion()};
  for (auto m : in.getMetrics()) {
    // A repeated name would silently drop a figure of the step: refused.
    if (!out.metrics.emplace(str(m.getName()), m.getValue()).second) {
      return bad_field("StepDone.metrics", "metric \"" + str(m.getName()) + "\" appears twice");
    }
  }
  return CoordinatorBody{std::move(out)};
}

Expected<CoordinatorBody> read_body(WireBody::Reader body) {
  switch (body.which()) {
    case WireBody::WORK_REQUEST:
      return CoordinatorBody{WorkRequest{WorkerId{str(body.getWorkRequest().getWorker())}}};
    case WireBody::WORK_REPLY: return read_work_reply(body.getWorkReply());
    case WireBody::TRAJECTORY_SUBMISSION: return read_submission(body.getTrajectorySubmission());
    case WireBody::SUBMIT_REPLY: {
      auto in = body.getSubmitReply();
      ASSIGN_OR_RETURN(SubmitStatus status, status_from_wire(in.getStatus(), "SubmitReply.status"));
      return CoordinatorBody{
          SubmitReply{EpisodeId{str(in.getEpisodeId())}, status, str(in.getMessage())}};
    }
    case WireBody::HEARTBEAT: {
      auto in = body.getHeartbeat();
      ASSIGN_OR_RETURN(MemberRole role, role_from_wire(in.getRole(), "Heartbeat.role"));
      return CoordinatorBody{Heartbeat{WorkerId{str(in.getMember())}, role, str(in.getDegraded())}};
    }
    case WireBody::STATUS_REQUEST: return CoordinatorBody{StatusRequest{}};
    case WireBody::COORDINATOR_STATUS: return read_status(body.getCoordinatorStatus());
    case WireBody::ATTACH_LEARNER:
      return CoordinatorBody{AttachLearner{WorkerId{str(body.getAttachLearner().getLearner())}}};
    case WireBody::TRAIN_STEP: return read_train_step(body.getTrainStep());
    case WireBody::STEP_DONE: return read_step_done(body.getStepDone());
    case WireBody::CHECKPOINT_REQUEST: {
      auto in = body.getCheckpointRequest();
      return CoordinatorBody{CheckpointRequest{in.getStep(), PolicyVersion{in.getVersion()}}};
    }
    case WireBody::CHECKPOINT_DONE: {
      auto in = body.getCheckpointDone();
      return CoordinatorBody{CheckpointDone{in.getStep(), str(in.getPath()), in.getSizeBytes(),
                                            str(in.getChecksum())}};
    }
    case WireBody::VERSION_PUBLISHED: {
      auto in = body.getVersionPublished();
      return CoordinatorBody{VersionPublished{PolicyVersion{in.getVersion()}, in.getStep(),
                                              stage_from_wire(in.getStage())}};
    }
    case WireBody::COORDINATOR_FAILURE:
      return CoordinatorBody{CoordinatorFailure{get_error(body.getCoordinatorFailure())}};
  }
  // A member added after this build (a newer peer): named by its number, since its name is not
  // known here.
  return make_error(ErrorCategory::kInvalidInput, "wire.unknown_body",
                    std::string(kWhat) + ": body member " +
                        std::to_string(static_cast<unsigned>(body.which())) +
                        " is unknown to this build, which knows 0 (workRequest) to " +
                        std::to_string(static_cast<unsigned>(WireBody::COORDINATOR_FAILURE)) +
                        " (coordinatorFailure); a newer peer?");
}

}  // namespace

std::string encode_coordinator_frame(const CoordinatorFrame& frame) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::CoordinatorFrame>();
  stamp(root);
  root.setRequestId(text(frame.request_id));
  root.setRunId(text(frame.run_id.value()));
  std::visit(BodyWriter{root.initBody()}, frame.body);
  return capnp_io::to_bytes(message);
}

Expected<CoordinatorFrame> decode_coordinator_frame(std::string_view bytes,
                                                    const DecodeLimits& limits) {
  return capnp_io::read_root<wire::CoordinatorFrame>(
      bytes, limits, kWhat, [](wire::CoordinatorFrame::Reader r) -> Expected<CoordinatorFrame> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        ASSIGN_OR_RETURN(CoordinatorBody body, read_body(r.getBody()));
        return CoordinatorFrame{str(r.getRequestId()), RunId{str(r.getRunId())}, std::move(body)};
      });
}

}  // namespace cuda_agent
