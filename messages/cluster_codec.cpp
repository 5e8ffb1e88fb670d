#include "messages/cluster_codec.h"

#include "messages/cluster.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using namespace wire_detail;  // NOLINT: the codec's vocabulary

CA_SAME_ENUM(ProcessRole::kUnknown, wire::ProcessRole::UNKNOWN);
CA_SAME_ENUM(ProcessRole::kCoordinator, wire::ProcessRole::COORDINATOR);
CA_SAME_ENUM(ProcessRole::kLearner, wire::ProcessRole::LEARNER);
CA_SAME_ENUM(ProcessRole::kRollout, wire::ProcessRole::ROLLOUT);
CA_SAME_ENUM(ProcessRole::kCompileFarm, wire::ProcessRole::COMPILE_FARM);
CA_SAME_ENUM(ProcessRole::kCompileWorker, wire::ProcessRole::COMPILE_WORKER);
CA_SAME_ENUM(ProcessRole::kBenchPool, wire::ProcessRole::BENCH_POOL);
CA_SAME_ENUM(ProcessRole::kBenchWorker, wire::ProcessRole::BENCH_WORKER);
CA_SAME_ENUM(MemberState::kUnknown, wire::MemberState::UNKNOWN);
CA_SAME_ENUM(MemberState::kAlive, wire::MemberState::ALIVE);
CA_SAME_ENUM(MemberState::kSuspect, wire::MemberState::SUSPECT);
CA_SAME_ENUM(MemberState::kDraining, wire::MemberState::DRAINING);
CA_SAME_ENUM(CommandKind::kUnknown, wire::CommandKind::UNKNOWN);
CA_SAME_ENUM(CommandKind::kDrain, wire::CommandKind::DRAIN);
CA_SAME_ENUM(CommandKind::kStop, wire::CommandKind::STOP);
CA_SAME_ENUM(CommandKind::kReload, wire::CommandKind::RELOAD);
CA_SAME_ENUM(CommandKind::kCheckpoint, wire::CommandKind::CHECKPOINT);

void set_process(wire::ProcessInfo::Builder out, const ProcessInfo& in) {
  out.setWorkerId(text(in.worker_id.value()));
  out.setRole(enum_to_wire<wire::ProcessRole>(in.role));
  out.setHost(text(in.host));
  out.setPid(in.pid);
  set_texts(out.initCapabilityTags(in.capability_tags.size()), in.capability_tags);
  out.setGpuModel(text(in.gpu_model));
}

ProcessInfo get_process(wire::ProcessInfo::Reader in) {
  ProcessInfo out;
  out.worker_id = WorkerId{str(in.getWorkerId())};
  out.role = enum_from_wire(in.getRole(), ProcessRole::kBenchWorker);
  out.host = str(in.getHost());
  out.pid = in.getPid();
  out.capability_tags = get_texts(in.getCapabilityTags());
  out.gpu_model = str(in.getGpuModel());
  return out;
}

}  // namespace

std::string encode_cluster_register(const ClusterRegister& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::ClusterRegister>();
  stamp_request(root, message.header);
  set_process(root.initWorker(), message.process);
  return capnp_io::to_bytes(builder);
}

Expected<ClusterRegister> decode_cluster_register(std::string_view bytes,
                                                  const DecodeLimits& limits) {
  static constexpr const char* kWhat = "ClusterRegister";
  return capnp_io::read_root<wire::ClusterRegister>(
      bytes, limits, kWhat, [](wire::ClusterRegister::Reader r) -> Expected<ClusterRegister> {
        ClusterRegister out;
        ASSIGN_OR_RETURN(out.header, read_request_header(r, kWhat));
        out.process = get_process(r.getWorker());
        return out;
      });
}

std::string encode_cluster_heartbeat(const ClusterHeartbeat& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::ClusterHeartbeat>();
  stamp(root);
  root.setWorkerId(text(message.worker_id.value()));
  root.setSequence(message.sequence);
  root.setInFlight(message.in_flight);
  root.setLoad(message.load);
  return capnp_io::to_bytes(builder);
}

Expected<ClusterHeartbeat> decode_cluster_heartbeat(std::string_view bytes,
                                                    const DecodeLimits& limits) {
  static constexpr const char* kWhat = "ClusterHeartbeat";
  return capnp_io::read_root<wire::ClusterHeartbeat>(
      bytes, limits, kWhat, [](wire::ClusterHeartbeat::Reader r) -> Expected<ClusterHeartbeat> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        ClusterHeartbeat out;
        out.worker_id = WorkerId{str(r.getWorkerId())};
        out.sequence = r.getSequence();
        out.in_flight = r.getInFlight();
        out.load = r.getLoad();
        return out;
      });
}

std::string encode_cluster_membership(const ClusterMembership& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::ClusterMembership>();
  stamp(root);
  root.setRunId(text(message.run_id.value()));
  root.setEpoch(message.epoch);
  auto members = root.initMembers(message.members.size());
  for (unsigned i = 0; i < message.members.size(); ++i) {
    set_process(members[i].initWorker(), message.members[i].process);
    members[i].setState(enum_to_wire<wire::MemberState>(message.members[i].state));
  }
  return capnp_io::to_bytes(builder);
}

Expected<ClusterMembership> decode_cluster_membership(std::string_view bytes,
                                                      const DecodeLimits& limits) {
  static constexpr const char* kWhat = "ClusterMembership";
  return capnp_io::read_root<wire::ClusterMembership>(
      bytes, limits, kWhat, [](wire::ClusterMembership::Reader r) -> Expected<ClusterMembership> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        ClusterMembership out;
        out.run_id = RunId{str(r.getRunId())};
        out.epoch = r.getEpoch();
        for (auto m : r.getMembers()) {
          out.members.push_back(ClusterMember{
              get_process(m.getWorker()), enum_from_wire(m.getState(), MemberState::kDraining)});
        }
        return out;
      });
}

std::string encode_cluster_command(const ClusterCommand& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::ClusterCommand>();
  stamp_request(root, message.header);
  root.setKind(enum_to_wire<wire::CommandKind>(message.kind));
  root.setTarget(text(message.target.value()));
  auto arguments = root.initArguments(message.arguments.size());
  unsigned i = 0;
  for (const auto& [key, value] : message.arguments) {
    arguments[i].setKey(text(key));
    arguments[i].setValue(text(value));
    ++i;
  }
  return capnp_io::to_bytes(builder);
}

Expected<ClusterCommand> decode_cluster_command(std::string_view bytes,
                                                const DecodeLimits& limits) {
  static constexpr const char* kWhat = "ClusterCommand";
  return capnp_io::read_root<wire::ClusterCommand>(
      bytes, limits, kWhat, [](wire::ClusterCommand::Reader r) -> Expected<ClusterCommand> {
        ClusterCommand out;
        ASSIGN_OR_RETURN(out.header, read_request_header(r, kWhat));
        out.kind = enum_from_wire(r.getKind(), CommandKind::kCheckpoint);
        out.target = WorkerId{str(r.getTarget())};
        for (auto a : r.getArguments()) out.arguments[str(a.getKey())] = str(a.getValue());
        return out;
      });
}

}  // namespace cuda_agent
