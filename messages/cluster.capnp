# The cluster protocol: processes register with the coordinator, heartbeat, learn the membership
# and receive commands (DESIGN.md sections 3 and 7).
# Add-only once released: new fields get new ordinals at the end; nothing is renamed, renumbered or
# removed. Codec: messages/cluster_codec.h.
@0xa2bbb3933637bdec;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

using Common = import "common.capnp";

# What a process is (cuda-agent serve <role>).
enum ProcessRole {
  unknown @0;        # a role newer than this build
  coordinator @1;    # the run's coordinator
  learner @2;        # one learner rank
  rollout @3;        # one rollout worker
  compileFarm @4;    # the compile farm broker
  compileWorker @5;  # one compile farm worker
  benchPool @6;      # the GPU bench pool broker
  benchWorker @7;    # one GPU bench worker (one GPU)
}

# One process as it describes itself.
struct ProcessInfo {
  workerId @0 :Text;             # unique within the run
  role @1 :ProcessRole;          # what it is
  host @2 :Text;                 # host name as the manifest names it
  pid @3 :UInt32;                # process id on that host
  capabilityTags @4 :List(Text); # e.g. "gpu:H200", "arch:sm_90"; brokers route on them
  gpuModel @5 :Text;             # e.g. "NVIDIA H200"; empty for CPU-only processes
}

# A process joins the run. The header's policyVersion is the weights version it holds (0: none).
struct ClusterRegister {
  schemaId @0 :UInt64;              # this struct's type id; a frame of another type is rejected
  header @1 :Common.RequestHeader;  # request id, run id, policy version, deadline, format
  worker @2 :ProcessInfo;           # who is joining
}

# A registered process is alive.
struct ClusterHeartbeat {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  workerId @2 :Text;         # the registered process (ProcessInfo.workerId)
  sequence @3 :UInt64;       # increases by one per heartbeat of this process
  inFlight @4 :UInt32;       # requests or episodes it is working on
  load @5 :Float64;          # busy fraction over the last interval, 0 to 1
}

# What the coordinator thinks of a member.
enum MemberState {
  unknown @0;   # a state newer than this build
  alive @1;     # heartbeating
  suspect @2;   # missed heartbeats; its work is not re-queued yet
  draining @3;  # finishing its in-flight work, takes no new work
}

# One member of the run.
struct ClusterMember {
  worker @0 :ProcessInfo;  # as it registered
  state @1 :MemberState;   # as the coordinator sees it
}

# The run's members, as the coordinator sees them.
struct ClusterMembership {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  runId @2 :Text;            # the run it belongs to
  epoch @3 :UInt64;          # increases with every change; a receiver ignores an older epoch
  members @4 :List(ClusterMember);  # every registered process, in registration order
}

# What a command asks.
enum CommandKind {
  unknown @0;     # a command newer than this build; the receiver refuses it
  drain @1;       # finish in-flight work, take no new work
  stop @2;        # exit after draining
  reload @3;      # re-read configuration or weights (see arguments)
  checkpoint @4;  # write a checkpoint now
}

# One key=value argument of a command.
struct CommandArgument {
  key @0 :Text;    # argument name, e.g. "path"
  value @1 :Text;  # its value
}

# The coordinator tells one or every process to do something.
struct ClusterCommand {
  schemaId @0 :UInt64;                # this struct's type id; a frame of another type is rejected
  header @1 :Common.RequestHeader;    # request id (a repeated command runs once), deadline, ...
  kind @2 :CommandKind;               # what to do
  target @3 :Text;                    # worker id it is for; empty: every member
  arguments @4 :List(CommandArgument);  # sorted by key, keys unique
}
