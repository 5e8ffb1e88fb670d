#include "messages/coordinator_codec.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::with_format_version;

void expect_record_eq(const EpisodeRecord& a, const EpisodeRecord& b) {
  EXPECT_EQ(a.episode_id, b.episode_id);
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.task_id, b.task_id);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.policy_version, b.policy_version);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.final_reward, b.final_reward);
  EXPECT_EQ(a.turns, b.turns);
  EXPECT_EQ(a.invalid_tool_calls, b.invalid_tool_calls);
  EXPECT_EQ(a.wasted_loops, b.wasted_loops);
  EXPECT_EQ(a.total_tokens, b.total_tokens);
  EXPECT_EQ(a.created_unix_ms, b.created_unix_ms);
  EXPECT_EQ(a.trajectory_size, b.trajectory_size);
  EXPECT_EQ(a.trajectory_bytes, b.trajectory_bytes);
}

// Field by field, per body kind (the plain structs have no operator==).
struct BodyEq {
  const CoordinatorBody& other;

  template <class T>
  const T& peer() const {
    return std::get<T>(other);
  }
  void operator()(const WorkRequest& a) const { EXPECT_EQ(a.worker, peer<WorkRequest>().worker); }
  void operator()(const WorkReply& a) const {
    const WorkReply& b = peer<WorkReply>();
    EXPECT_EQ(a.assigned, b.assigned);
    EXPECT_EQ(a.assignment.episode_id, b.assignment.episode_id);
    EXPECT_EQ(a.assignment.task_id, b.assignment.task_id);
    EXPECT_EQ(a.assignment.attempt, b.assignment.attempt);
    EXPECT_EQ(a.assignment.policy_version, b.assignment.policy_version);
    EXPECT_EQ(a.assignment.stage, b.assignment.stage);
    EXPECT_EQ(a.retry_after_ms, b.retry_after_ms);
    EXPECT_EQ(a.reason, b.reason);
  }
  void operator()(const TrajectorySubmission& a) const {
    const TrajectorySubmission& b = peer<TrajectorySubmission>();
    EXPECT_EQ(a.worker, b.worker);
    EXPECT_EQ(a.attempt, b.attempt);
    expect_record_eq(a.episode, b.episode);
    ASSERT_EQ(a.evaluations.size(), b.evaluations.size());
    for (std::size_t i = 0; i < a.evaluations.size(); ++i) {
      EXPECT_EQ(encode_store_value(a.evaluations[i]), encode_store_value(b.evaluations[i]));
    }
    ASSERT_EQ(a.baselines.size(), b.baselines.size());
    for (std::size_t i = 0; i < a.baselines.size(); ++i) {
      EXPECT_EQ(encode_store_value(a.baselines[i]), encode_store_value(b.baselines[i]));
    }
  }
  void operator()(const SubmitReply& a) const {
    const SubmitReply& b = peer<SubmitReply>();
    EXPECT_EQ(a.episode_id, b.episode_id);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.message, b.message);
  }
  void operator()(const Heartbeat& a) const {
    EXPECT_EQ(a.member, peer<Heartbeat>().member);
    EXPECT_EQ(a.role, peer<Heartbeat>().role);
    EXPECT_EQ(a.degraded, peer<Heartbeat>().degraded);
  }
  void operator()(const StatusRequest&) const { EXPECT_NO_THROW(peer<StatusRequest>()); }
  void operator()(const CoordinatorStatus& a) const {
    const CoordinatorStatus& b = peer<CoordinatorStatus>();
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.finished, b.finished);
    EXPECT_EQ(a.trained, b.trained);
    EXPECT_EQ(a.stale, b.stale);
    EXPECT_EQ(a.orphaned, b.orphaned);
    EXPECT_EQ(a.waiting, b.waiting);
    EXPECT_EQ(a.in_flight, b.in_flight);
    EXPECT_EQ(a.queued, b.queued);
    EXPECT_EQ(a.accepted, b.accepted);
    EXPECT_EQ(a.running, b.running);
    EXPECT_EQ(a.rejected, b.rejected);
    EXPECT_EQ(a.members, b.members);
    EXPECT_EQ(a.checkpoints, b.checkpoints);
    EXPECT_EQ(a.degraded, b.degraded);
  }
  void operator()(const AttachLearner& a) const {
    EXPECT_EQ(a.learner, peer<AttachLearner>().learner);
  }
  void operator()(const TrainStep& a) const {
    const TrainStep& b = peer<TrainStep>();
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.episodes, b.episodes);
    EXPECT_EQ(a.replay, b.replay);
  }
  void operator()(const StepDone& a) const {
    const StepDone& b = peer<StepDone>();
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.new_version, b.new_version);
    EXPECT_EQ(a.metrics, b.metrics);
  }
  void operator()(const CheckpointRequest& a) const {
    EXPECT_EQ(a.step, peer<CheckpointRequest>().step);
    EXPECT_EQ(a.version, peer<CheckpointRequest>().version);
  }
  void operator()(const CheckpointDone& a) const {
    const CheckpointDone& b = peer<CheckpointDone>();
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.size_bytes, b.size_bytes);
    EXPECT_EQ(a.checksum, b.checksum);
  }
  void operator()(const VersionPublished& a) const {
    const VersionPublished& b = peer<VersionPublished>();
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.stage, b.stage);
  }
  void operator()(const CoordinatorFailure& a) const {
    const Error& b = peer<CoordinatorFailure>().error;
    EXPECT_EQ(a.error.category, b.category);
    EXPECT_EQ(a.error.code, b.code);
    EXPECT_EQ(a.error.message, b.message);
  }
};

void expect_frame_eq(const CoordinatorFrame& a, const CoordinatorFrame& b) {
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.run_id, b.run_id);
  ASSERT_EQ(a.body.index(), b.body.index());
  std::visit(BodyEq{b.body}, a.body);
}

// A decode that failed as the header promises: invalid_input, a "wire." code.
void expect_wire_error(const Expected<CoordinatorFrame>& r, const std::string& context) {
  ASSERT_FALSE(r) << context << ": decoded";
  EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput) << context;
  EXPECT_EQ(r.error().code.rfind("wire.", 0), 0u) << context << ": " << r.error().to_string();
}

// Byte offset of the union's discriminant: the root's data section holds schemaId (word 0),
// formatVersion (bytes 8-9), then the discriminant (bytes 10-11; see coordinator.capnp.h).
std::size_t discriminant_offset(const std::string& frame) {
  return wire_samples::format_version_offset(frame, /*request=*/false) + 2;
}

TEST(CoordinatorCodec, EveryBodyKindRoundTripsWithEveryField) {
  const std::vector<CoordinatorFrame> frames = wire_samples::coordinator_frames();
  std::set<std::size_t> kinds;
  for (const CoordinatorFrame& in : frames) {
    SCOPED_TRACE("body kind " + std::to_string(in.body.index()));
    kinds.insert(in.body.index());
    const std::string bytes = encode_coordinator_frame(in);
    Expected<CoordinatorFrame> out = decode_coordinator_frame(bytes);
    ASSERT_TRUE(out) << out.error().to_string();
    expect_frame_eq(*out, in);
    EXPECT_EQ(encode_coordinator_frame(*out), bytes);
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<CoordinatorBody>) << "a body kind has no sample";
}

TEST(CoordinatorCodec, DefaultBodiesAndExtremeValuesRoundTrip) {
  for (std::size_t i = 0; i < std::variant_size_v<CoordinatorBody>; ++i) {
    CoordinatorFrame in;
    in.body = wire_samples::coordinator_frames()[i].body;
    std::visit([](auto& body) { body = std::decay_t<decltype(body)>{}; }, in.body);
    Expected<CoordinatorFrame> out = decode_coordinator_frame(encode_coordinator_frame(in));
    ASSERT_TRUE(out) << i << ": " << out.error().to_string();
    expect_frame_eq(*out, in);
  }
  // An unnamed stage number survives (as in the run store); text keeps embedded NULs.
  CoordinatorFrame in{
      std::string("r\0x", 3), RunId{"run"},
      VersionPublished{PolicyVersion{~0ull}, ~0ull, static_cast<EpisodeStage>(200)}};
  Expected<CoordinatorFrame> out = decode_coordinator_frame(encode_coordinator_frame(in));
  ASSERT_TRUE(out) << out.error().to_string();
  expect_frame_eq(*out, in);
}

TEST(CoordinatorCodec, RejectsAnotherMessageTypeAndANewerFormatVersion) {
  const std::string heartbeat = encode_cluster_heartbeat(wire_samples::cluster_heartbeat());
  EXPECT_EQ(decode_coordinator_frame(heartbeat).error().code, "wire.wrong_type");
  const std::string manifest = encode_weight_manifest(wire_samples::weight_manifest());
  EXPECT_EQ(decode_coordinator_frame(manifest).error().code, "wire.wrong_type");
  const std::string frame = encode_coordinator_frame(wire_samples::coordinator_frames()[0]);
  EXPECT_EQ(decode_cluster_heartbeat(frame).error().code, "wire.wrong_type");

  Expected<CoordinatorFrame> newer = decode_coordinator_frame(with_format_version(frame, false, 2));
  expect_wire_error(newer, "newer format");
  EXPECT_EQ(newer.error().code, "wire.version");
  EXPECT_TRUE(decode_coordinator_frame(with_format_version(frame, false, 1)));
}

TEST(CoordinatorCodec, AnUnknownBodyMemberIsRefusedByNumber) {
  std::string frame = encode_coordinator_frame(wire_samples::coordinator_frames()[0]);
  const std::size_t at = discriminant_offset(frame);
  ASSERT_EQ(frame[at], 0) << "discriminant of workRequest";
  for (unsigned which : {14u, 15u, 300u}) {
    frame[at] = static_cast<char>(which & 0xff);
    frame[at + 1] = static_cast<char>(which >> 8);
    Expected<CoordinatorFrame> r = decode_coordinator_frame(frame);
    expect_wire_error(r, "member " + std::to_string(which));
    EXPECT_EQ(r.error().code, "wire.unknown_body");
    EXPECT_NE(r.error().message.find("body member " + std::to_string(which)), std::string::npos)
        << r.error().message;
  }
  // The last known member still decodes through the same forged path.
  frame[at] = 13;
  frame[at + 1] = 0;
  Expected<CoordinatorFrame> failure = decode_coordinator_frame(frame);
  ASSERT_TRUE(failure) << failure.error().to_string();
  EXPECT_TRUE(std::holds_alternative<CoordinatorFailure>(failure->body));
}

TEST(CoordinatorCodec, EnumerantsUnknownToThisBuildAreRefused) {
  CoordinatorFrame beat{"h", RunId{"run"}, Heartbeat{WorkerId{"w"}, static_cast<MemberRole>(9)}};
  Expected<CoordinatorFrame> r = decode_coordinator_frame(encode_coordinator_frame(beat));
  expect_wire_error(r, "role 9");
  EXPECT_NE(r.error().message.find("Heartbeat.role"), std::string::npos) << r.error().message;

  CoordinatorFrame reply{"s", RunId{"run"},
                         SubmitReply{EpisodeId{"e"}, static_cast<SubmitStatus>(4), ""}};
  r = decode_coordinator_frame(encode_coordinator_frame(reply));
  expect_wire_error(r, "status 4");
  EXPECT_NE(r.error().message.find("SubmitReply.status"), std::string::npos) << r.error().message;
}

TEST(CoordinatorCodec, ACorruptEpisodeRecordIsRefusedAsThisFrame) {
  const CoordinatorFrame submission = wire_samples::coordinator_frames()[2];
  ASSERT_TRUE(std::holds_alternative<TrajectorySubmission>(submission.body));
  std::string frame = encode_coordinator_frame(submission);
  const std::size_t magic = frame.find("CARS");  // the store value's prefix (store_codec.h)
  ASSERT_NE(magic, std::string::npos);
  frame[magic] = 'X';
  Expected<CoordinatorFrame> r = decode_coordinator_frame(frame);
  expect_wire_error(r, "corrupt episode");
  EXPECT_EQ(r.error().code, "wire.malformed");
  EXPECT_NE(r.error().message.find("TrajectorySubmission.episode"), std::string::npos)
      << r.error().message;
}

TEST(CoordinatorCodec, ACorruptEvaluationRecordIsRefusedNamingItsIndex) {
  const CoordinatorFrame submission = wire_samples::coordinator_frames()[2];
  const auto& s = std::get<TrajectorySubmission>(submission.body);
  ASSERT_EQ(s.evaluations.size(), 1u);
  std::string frame = encode_coordinator_frame(submission);
  // The evaluation's store value is the second one in the frame (after the episode's).
  const std::size_t episode = frame.find("CARS");
  const std::size_t evaluation = frame.find("CARS", episode + 1);
  ASSERT_NE(evaluation, std::string::npos);
  frame[evaluation] = 'X';
  Expected<CoordinatorFrame> r = decode_coordinator_frame(frame);
  expect_wire_error(r, "corrupt evaluation");
  EXPECT_EQ(r.error().code, "wire.malformed");
  EXPECT_NE(r.error().message.find("TrajectorySubmission.evaluations[0]"), std::string::npos)
      << r.error().message;
}

TEST(CoordinatorCodec, TruncatedEmptyAndOversizedBytesAreRefused) {
  for (const CoordinatorFrame& f : wire_samples::coordinator_frames()) {
    const std::string bytes = encode_coordinator_frame(f);
    // Every whole-word cut and a few odd ones.
    for (std::size_t n = 0; n < bytes.size(); n += (n % 8 == 0 ? 3 : 5)) {
      expect_wire_error(decode_coordinator_frame(bytes.substr(0, n)),
                        "kind " + std::to_string(f.body.index()) + " cut to " + std::to_string(n));
    }
  }
  const std::string big = encode_coordinator_frame(wire_samples::coordinator_frames()[2]);
  Expected<CoordinatorFrame> r = decode_coordinator_frame(big, DecodeLimits{big.size() - 8});
  expect_wire_error(r, "oversized");
  EXPECT_EQ(r.error().code, "wire.too_large");
  EXPECT_TRUE(decode_coordinator_frame(big, DecodeLimits{big.size()}));
}

TEST(CoordinatorCodec, RandomGarbageGivesATypedErrorNeverAThrow) {
  std::mt19937_64 rng(20261204);
  for (int i = 0; i < 2000; ++i) {
    std::string g(8 * (1 + rng() % 64), '\0');
    for (char& c : g) c = static_cast<char>(rng());
    if (i % 2 == 0) {
      // A plausible segment table (one segment of the right size) so the reader gets further.
      const std::uint64_t words = g.size() / 8 - 1;
      for (int b = 0; b < 8; ++b) g[b] = static_cast<char>((words << 32) >> (8 * b));
    }
    Expected<CoordinatorFrame> r = [&] {
      try {
        return decode_coordinator_frame(g);
      } catch (...) {
        ADD_FAILURE() << "garbage " << i << " threw";
        return Expected<CoordinatorFrame>(make_error(ErrorCategory::kInternal, "threw", ""));
      }
    }();
    // Random words almost never carry this schema id; either way, never a crash or a throw.
    if (!r) {
      EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput) << i;
      EXPECT_EQ(r.error().code.rfind("wire.", 0), 0u) << i << ": " << r.error().to_string();
    }
  }
}

}  // namespace
}  // namespace cuda_agent
