// The cluster protocol (messages/cluster.capnp) as plain C++ types, and its codec: processes
// register with the coordinator (ClusterRegister), heartbeat (ClusterHeartbeat), learn the
// membership (ClusterMembership) and receive commands (ClusterCommand). DESIGN.md sections 3, 7.
//
//   std::string frame = encode_cluster_heartbeat(beat);
//   Expected<ClusterHeartbeat> back = decode_cluster_heartbeat(frame);
//
// Decoding never trusts its input: truncated, garbage, oversized, another message type
// ("wire.wrong_type") or a newer format version ("wire.version") give an Error of category
// invalid_input, never an exception. Enum values from a newer peer decode to kUnknown; a process
// that receives a CommandKind::kUnknown refuses the command.
// Texts, lists and data must each hold fewer than 2^29 elements (a Cap'n Proto limit).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"

namespace cuda_agent {

/// What a process is (`cuda-agent serve <role>`).
enum class ProcessRole : std::uint8_t {
  kUnknown = 0,        ///< a role newer than this build
  kCoordinator = 1,    ///< the run's coordinator
  kLearner = 2,        ///< one learner rank
  kRollout = 3,        ///< one rollout worker
  kCompileFarm = 4,    ///< the compile farm broker
  kCompileWorker = 5,  ///< one compile farm worker
  kBenchPool = 6,      ///< the GPU bench pool broker
  kBenchWorker = 7,    ///< one GPU bench worker (one GPU)
};

/// One process as it describes itself.
struct ProcessInfo {
  WorkerId worker_id;                        ///< unique within the run
  ProcessRole role = ProcessRole::kUnknown;  ///< what it is
  std::string host;                          ///< as the manifest names it
  std::uint32_t pid = 0;                     ///< process id on that host
  /// What it offers ("gpu:NVIDIA H200", "arch:sm_90"); brokers route on them.
  std::vector<std::string> capability_tags;
  std::string gpu_model;  ///< "NVIDIA H200"; empty for CPU-only processes
};

/// A process joins the run. header.policy_version is the weights version it holds (0: none).
struct ClusterRegister {
  RequestHeader header;  ///< request id, run id, policy version, deadline
  ProcessInfo process;   ///< who is joining
};

/// A registered process is alive.
struct ClusterHeartbeat {
  WorkerId worker_id;           ///< the registered process
  std::uint64_t sequence = 0;   ///< +1 per heartbeat of this process
  std::uint32_t in_flight = 0;  ///< requests or episodes it is working on
  double load = 0;              ///< busy fraction over the last interval, 0 to 1
};

/// What the coordinator thinks of a member.
enum class MemberState : std::uint8_t {
  kUnknown = 0,   ///< a state newer than this build
  kAlive = 1,     ///< heartbeating
  kSuspect = 2,   ///< missed heartbeats; its work is not re-queued yet
  kDraining = 3,  ///< finishing its in-flight work, takes no new work
};

/// One member of the run.
struct ClusterMember {
  ProcessInfo process;                        ///< as it registered
  MemberState state = MemberState::kUnknown;  ///< as the coordinator sees it
};

/// The run's members as the coordinator sees them.
struct ClusterMembership {
  RunId run_id;             ///< the run
  std::uint64_t epoch = 0;  ///< grows with every change; a receiver ignores an older epoch
  std::vector<ClusterMember> members;  ///< every registered process, in registration order
};

/// What a command asks.
enum class CommandKind : std::uint8_t {
  kUnknown = 0,     ///< a command newer than this build: the receiver refuses it
  kDrain = 1,       ///< finish in-flight work, take no new work
  kStop = 2,        ///< exit after draining
  kReload = 3,      ///< re-read configuration or weights (see arguments)
  kCheckpoint = 4,  ///< write a checkpoint now
};

/// The coordinator tells one or every process to do something. header.request_id makes a repeated
/// command run once.
struct ClusterCommand {
  RequestHeader header;                          ///< request id, run id, deadline
  CommandKind kind = CommandKind::kUnknown;      ///< what to do
  WorkerId target;                               ///< the process it is for; empty: every member
  std::map<std::string, std::string> arguments;  ///< on the wire sorted by key; last key wins
};

std::string encode_cluster_register(const ClusterRegister& message);
Expected<ClusterRegister> decode_cluster_register(std::string_view bytes,
                                                  const DecodeLimits& limits = {});

std::string encode_cluster_heartbeat(const ClusterHeartbeat& message);
Expected<ClusterHeartbeat> decode_cluster_heartbeat(std::string_view bytes,
                                                    const DecodeLimits& limits = {});

std::string encode_cluster_membership(const ClusterMembership& message);
Expected<ClusterMembership> decode_cluster_membership(std::string_view bytes,
                                                      const DecodeLimits& limits = {});

std::string encode_cluster_command(const ClusterCommand& message);
Expected<ClusterCommand> decode_cluster_command(std::string_view bytes,
                                                const DecodeLimits& limits = {});

}  // namespace cuda_agent
