// Launch plans: which processes a validated manifest starts on which node, with their command
// lines and environments. `cuda-agent launch` executes a plan (locally, over ssh, or as rendered
// Slurm / Kubernetes files) and can print it with render_plan().
//
// Per node, in this order (COORD:p is the coordinator node's host and [run] port_base + p):
//   coordinator node  cuda-agent serve coordinator | compile-farm --manifest M
//                     (and serve bench-pool when the run has bench GPUs)
//   'compile'         compile_workers x  cuda-agent serve compile-worker
//                                          --connect tcp://COORD:2 --manifest M
//   each bench GPU g  CUDA_VISIBLE_DEVICES=g cuda-agent serve bench-worker --gpu 0
//                                          --connect tcp://COORD:4 --manifest M
//   each rollout GPU  CUDA_VISIBLE_DEVICES=g NCCL_NVLS_ENABLE=0
//   (or, on a node    cuda-agent serve policy-engine --model INITIAL --port base+20+i
//   with gpus = 0,      --device cuda:0|cpu --served-model-name policy ...
//   one on the CPU)     [--policy-dir RUN_DIR/learner/policy]
//                     cuda-agent serve rollout-worker --coordinator tcp://COORD:0
//                       --compile-farm tcp://COORD:1 [--bench-pool tcp://COORD:3]
//                       --policy-endpoint http://HOST:base+20+i/v1 --policy-model policy
//                     (i counts the run's rollout slots; engines listen on 127.0.0.1 in a
//                     one-node run, on every interface otherwise; --policy-dir, where the
//                     learner publishes its versions, in a one-node run and on a node with the
//                     learner role, so a restarted engine starts from the newest one)
//   each learner GPU  CUDA_VISIBLE_DEVICES=g MASTER_ADDR=FIRST_LEARNER_HOST
//   (or the CPU)      MASTER_PORT=port_base+10 NCCL_NVLS_ENABLE=0
//                     cuda-agent serve learner --rank R --world-size W --coordinator ...
//                       --store DIR --run NAME --model INITIAL --out RUN_DIR/learner
//                       --engine URL (every engine) --manifest M
// GPU lists are taken in ascending order. Learner GPUs of all nodes form one data-parallel group;
// ranks count nodes in manifest order, then GPUs in ascending order. NCCL_NVLS_ENABLE=0 is set on
// every process that may join an NCCL communicator: NVLink multicast must stay off.
//
// Threading: plain functions on values. The output depends only on the arguments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "actors/work_pool_broker.h"
#include "cluster/manifest.h"
#include "coordinator/coordinator_client.h"

namespace cuda_agent {

/// One process to start.
struct ProcessSpec {
  std::string role;  ///< the node role it serves: coordinator, compile, bench, rollout, learner
  std::string name;  ///< unique on its node: "bench-worker-gpu6", "learner-rank3-gpu3", ...
  std::vector<std::string> argv;           ///< argv[0] is "cuda-agent", found on PATH
  std::map<std::string, std::string> env;  ///< added to the inherited environment
};

/// The processes of one node, in start order.
struct NodePlan {
  std::string host;
  std::int64_t gpus = 0;
  std::vector<std::string> roles;
  std::vector<ProcessSpec> processes;
};

enum class BrokerRole { kCompileFarm, kBenchPool };

/// What the manifest gives one of the run's two brokers (`serve compile-farm`, `serve
/// bench-pool`): binds tcp://*:port_base+1 and +2 (compile farm) or +3 and +4 (bench pool), the
/// ports the plan's workers and clients connect to; [run] heartbeat timeout and grace; for the
/// compile farm [compile] max_queued_jobs and max_attempts; with [security] keys, CURVE with the
/// server key pair and the run's client key as the only one allowed. Errors: a key file that
/// cannot be read.
Expected<WorkPoolBrokerOptions> broker_options(const Manifest& manifest, BrokerRole role);

/// The CURVE keys every client and worker of a secured run connects to the brokers with ([security]
/// client key pair and the servers' public key); nullopt for a run without [security] keys.
/// Errors: a key file that cannot be read.
Expected<std::optional<CurveClientKeys>> client_curve(const Manifest& manifest);

/// Where the coordinator's gateway listens ([run] port_base + 0): tcp://COORDINATOR_HOST:PORT for
/// the roles that connect, tcp://*:PORT for the coordinator that binds.
std::string coordinator_endpoint(const Manifest& manifest);
/// A CoordinatorClient of the run for `member` in `role`: the coordinator's endpoint, the run's id
/// and heartbeat interval, its client CURVE keys. Errors: as client_curve.
Expected<CoordinatorClientOptions> coordinator_client_options(const Manifest& manifest,
                                                              WorkerId member, MemberRole role);
std::string coordinator_bind_endpoint(const Manifest& manifest);

/// The run's ports ([run] port_base + offset).
enum class RunPort { kCoordinator, kCompileClients, kCompileWorkers, kBenchClients, kBenchWorkers };
/// tcp://HOST:port_base+offset of `port` (the simulation connects to its brokers on 127.0.0.1).
std::string run_endpoint(const Manifest& manifest, RunPort port, const std::string& host);
/// A loopback name: localhost, 127.0.0.1 or ::1.
bool is_loopback_host(const std::string& host);
/// A manifest host that is this machine: a loopback name or exactly its gethostname().
bool is_this_host(const std::string& host);
/// The coordinator's Prometheus metrics port ([run] port_base + 5).
std::int64_t coordinator_metrics_port(const Manifest& manifest);
/// The policy a run starts from: [model] path, or when it is empty the one `cuda-agent train`
/// makes once beside the store: with [corpus] count > 0 the policy warmed up on the seed corpus
/// (warmup-policy/), else a tiny random policy (tiny-policy/).
std::filesystem::path initial_model_dir(const Manifest& manifest);

/// Rollout workers the plan starts: one per rollout GPU, one on a rollout node without GPUs. The
/// coordinator's bound on episodes in flight is this times [rollout] concurrent_episodes.
std::int64_t rollout_workers(const Manifest& manifest);
/// The launch plan of a validated manifest: one NodePlan per node, in manifest order.
/// `manifest_path_for_argv` is passed as --manifest to every process, as given (it must name the
/// manifest on each node, so use a path valid there). Empty means the embedded single-machine
/// default: the processes then get no --manifest and use the default built into them.
std::vector<NodePlan> plan_launch(const Manifest& manifest,
                                  const std::string& manifest_path_for_argv);

/// Plan as text, deterministic: per node a header line "# HOST: N GPUs; roles: a, b", then one
/// line per process, "  ENV=v ... cuda-agent ...  # NAME", shell-quoted, then a blank line.
std::string render_plan(const std::vector<NodePlan>& plan);

/// `word` quoted for a POSIX shell when it needs quoting, else unchanged.
std::string shell_quote(const std::string& word);

}  // namespace cuda_agent
