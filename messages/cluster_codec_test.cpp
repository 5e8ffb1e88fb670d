#include "messages/cluster_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::with_format_version;

void expect_process_eq(const ProcessInfo& a, const ProcessInfo& b) {
  EXPECT_EQ(a.worker_id, b.worker_id);
  EXPECT_EQ(a.role, b.role);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.capability_tags, b.capability_tags);
  EXPECT_EQ(a.gpu_model, b.gpu_model);
}

TEST(ClusterCodec, RegisterRoundTrips) {
  const ClusterRegister in = wire_samples::cluster_register();
  const std::string bytes = encode_cluster_register(in);
  auto out = decode_cluster_register(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->header.request_id, in.header.request_id);
  EXPECT_EQ(out->header.policy_version, PolicyVersion{42});
  expect_process_eq(out->process, in.process);
  EXPECT_EQ(encode_cluster_register(*out), bytes);
}

TEST(ClusterCodec, HeartbeatRoundTrips) {
  const ClusterHeartbeat in = wire_samples::cluster_heartbeat();
  auto out = decode_cluster_heartbeat(encode_cluster_heartbeat(in));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->worker_id, WorkerId{"rollout-gpu2"});
  EXPECT_EQ(out->sequence, 1'204u);
  EXPECT_EQ(out->in_flight, 48u);
  EXPECT_DOUBLE_EQ(out->load, 0.93);
}

TEST(ClusterCodec, MembershipRoundTrips) {
  const ClusterMembership in = wire_samples::cluster_membership();
  const std::string bytes = encode_cluster_membership(in);
  auto out = decode_cluster_membership(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->run_id, in.run_id);
  EXPECT_EQ(out->epoch, 17u);
  ASSERT_EQ(out->members.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    expect_process_eq(out->members[i].process, in.members[i].process);
    EXPECT_EQ(out->members[i].state, in.members[i].state);
  }
  EXPECT_TRUE(out->members[1].process.capability_tags.empty());
  EXPECT_EQ(encode_cluster_membership(*out), bytes);
}

TEST(ClusterCodec, CommandRoundTrips) {
  const ClusterCommand in = wire_samples::cluster_command();
  auto out = decode_cluster_command(encode_cluster_command(in));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->header.request_id, RequestId{"cmd-checkpoint-17"});
  EXPECT_EQ(out->kind, CommandKind::kCheckpoint);
  EXPECT_EQ(out->target, WorkerId{"learner-rank0-gpu0"});
  EXPECT_EQ(out->arguments, in.arguments);
}

TEST(ClusterCodec, EmptyAndExtremeValuesRoundTrip) {
  auto membership = decode_cluster_membership(encode_cluster_membership({}));
  ASSERT_TRUE(membership) << membership.error().to_string();
  EXPECT_TRUE(membership->members.empty());
  auto command = decode_cluster_command(encode_cluster_command({}));
  ASSERT_TRUE(command) << command.error().to_string();
  EXPECT_TRUE(command->arguments.empty());
  EXPECT_TRUE(command->target.value().empty());

  ClusterHeartbeat beat{WorkerId{""}, std::numeric_limits<std::uint64_t>::max(),
                        std::numeric_limits<std::uint32_t>::max(), 1.0};
  auto out = decode_cluster_heartbeat(encode_cluster_heartbeat(beat));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->sequence, beat.sequence);
  EXPECT_EQ(out->in_flight, beat.in_flight);

  ClusterRegister reg = wire_samples::cluster_register();
  reg.process.pid = std::numeric_limits<std::uint32_t>::max();
  reg.process.capability_tags.assign(1000, "tag");
  auto back = decode_cluster_register(encode_cluster_register(reg));
  ASSERT_TRUE(back) << back.error().to_string();
  expect_process_eq(back->process, reg.process);
}

TEST(ClusterCodec, EnumValuesFromANewerPeerDecodeAsUnknown) {
  ClusterMembership m = wire_samples::cluster_membership();
  m.members[0].process.role = static_cast<ProcessRole>(8);
  m.members[1].state = static_cast<MemberState>(4);
  auto out = decode_cluster_membership(encode_cluster_membership(m));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->members[0].process.role, ProcessRole::kUnknown);
  EXPECT_EQ(out->members[1].state, MemberState::kUnknown);
  ClusterCommand c = wire_samples::cluster_command();
  c.kind = static_cast<CommandKind>(5);
  EXPECT_EQ(decode_cluster_command(encode_cluster_command(c))->kind, CommandKind::kUnknown);
}

TEST(ClusterCodec, RejectsANewerFormatVersionAndAnotherMessageType) {
  const std::string reg = encode_cluster_register(wire_samples::cluster_register());
  const std::string beat = encode_cluster_heartbeat(wire_samples::cluster_heartbeat());
  const std::string membership = encode_cluster_membership(wire_samples::cluster_membership());
  const std::string command = encode_cluster_command(wire_samples::cluster_command());
  EXPECT_EQ(decode_cluster_register(with_format_version(reg, true, 2)).error().code,
            "wire.version");
  EXPECT_EQ(decode_cluster_heartbeat(with_format_version(beat, false, 2)).error().code,
            "wire.version");
  EXPECT_EQ(decode_cluster_membership(with_format_version(membership, false, 2)).error().code,
            "wire.version");
  EXPECT_EQ(decode_cluster_command(with_format_version(command, true, 2)).error().code,
            "wire.version");
  // Register and Command have the same shape (schemaId, header, ...): only the id tells them apart.
  EXPECT_EQ(decode_cluster_register(command).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_cluster_command(reg).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_cluster_heartbeat(membership).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_cluster_membership(beat).error().code, "wire.wrong_type");
}

}  // namespace
}  // namespace cuda_agent
