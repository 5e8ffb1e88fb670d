// The node agent: `cuda-agent node-agent --manifest M --host H` (cli/node_agent_command.cpp).
// Every backend starts exactly one per node (issue 26): `launch --ssh` through ssh
// (cluster/ssh_launch.h); `launch --local` in its own process, with run_node_agent() for a single
// node, or a NodeAgent per node of this host polled from one loop (each reaps only its children).
//
//   Expected<int> code = run_node_agent(manifest, {.host = "node-a", .manifest_path_for_argv = M},
//                                       [&] { return stop_flag.load(); });
//
// What it does:
// - Takes node H's processes from the launch plan (cluster/launch_plan.h) and starts them in plan
//   order as supervised children (cluster/local_processes.h: own process group, one log per
//   process, killed with the agent by PR_SET_PDEATHSIG). When this node runs the coordinator, the
//   processes after it start once the run store the coordinator creates exists (the learner
//   reads it), as in `train`, or after `store_wait_ms` at the latest (a learner that starts too
//   early is restarted like any failed process). poll() starts them; nothing blocks.
// - Restarts a process that fails after 1 s, doubling to 60 s, at most `max_restarts_per_window`
//   times per 10 minutes. Past that, or on exit code 3 (a failure a restart cannot fix,
//   kFinalExitCode), the process is given up and the node is marked degraded; the node's other
//   processes keep running. A process that exits 0 has finished its work and is left alone.
// - The coordinator's own end ends the node: exit 0 (the run is finished) drains the node and the
//   agent exits 0; exit 3 (the run cannot go on) drains it and the agent exits 3.
// - A stop request (SIGTERM, SIGINT or SIGHUP in the CLI: SIGHUP is what sshd sends when the
//   launcher's `ssh -tt` goes away) drains: SIGTERM to the processes in reverse start order,
//   SIGKILL to those alive after `stop_grace_ms`; then the agent exits 0.
//
// Reporting: the agent is a member of the run. It heartbeats the coordinator as
// `node-agent/<host>` (role node_agent, every [run] heartbeat_interval_ms, CURVE as the run's
// clients), and each heartbeat says whether the node is degraded and why (the processes given
// up); the coordinator lists degraded members in its status (`train status`, /metrics
// cuda_agent_members_degraded), and takes a silent agent for suspect, then lost, as any member.
// Heartbeats wait on nothing: the coordinator may start later or on another node. It also keeps
// `<log_dir>/node-status.json` current (rewritten atomically on every change and at least every
// `status_interval_ms`; format below) and logs every start, exit, restart, give-up and state
// change to stderr (spdlog, core/log.h), which the ssh backend keeps in its per-host log. A
// given-up role is covered by the same role on other nodes; when none is left, the coordinator
// fails the run after [run] role_vacancy_timeout_ms (coordinator/coordinator_actor.h) and its exit
// 3 ends every node. Not built: starting a spare process in a given-up one's place on another node,
// and drain/stop orders from the coordinator.
//
// node-status.json:
//   {"host": "node-a", "state": "running|degraded|draining|stopped", "reason": "...",
//    "agent_pid": 123, "updated_unix_ms": 1733450000000,
//    "processes": [{"name": "coordinator", "role": "coordinator", "state": "running",
//                   "pid": 124, "restarts": 0, "last_exit": null}, ...]}
// Process states are ChildState's names (running, restart_pending, given_up, finished, stopped:
// by the drain); pid is null when not running; last_exit the last exit code (128 + signal), null
// before any.
//
// Threading: a NodeAgent is owned by one thread, which calls poll() in a loop. Several agents may
// live in one process (launch --local with several nodes on this host): each reaps only its own
// children.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/launch_plan.h"
#include "cluster/local_processes.h"
#include "cluster/manifest.h"
#include "coordinator/coordinator_client.h"
#include "core/error.h"

namespace cuda_agent {

struct NodeAgentOptions {
  /// The node to run: a [[nodes]] host of the manifest. Required.
  std::string host;
  /// Passed as --manifest to every process (the manifest's path on this node); empty for the
  /// embedded single-machine default (see plan_launch).
  std::string manifest_path_for_argv;
  /// Where the per-process logs (<name>.log) and node-status.json go (created). Default: empty,
  /// meaning <run dir>/logs/<host>, the run dir being the parent of [store] dir.
  std::string log_dir;
  /// Restarts of one process within restart_window_ms before it is given up and the node is
  /// marked degraded. Default: 5.
  int max_restarts_per_window = 5;
  /// The window restarts are counted in. Default: 10 minutes.
  std::chrono::milliseconds restart_window_ms{600'000};
  /// First pause before a restart, doubled per restart in the window. Default: 1 s.
  std::chrono::milliseconds restart_backoff_ms{1000};
  /// The longest pause before a restart. Default: 60 s.
  std::chrono::milliseconds max_backoff_ms{60'000};
  /// Drain: SIGKILL to processes still alive this long after their SIGTERM. Default: 15 s.
  std::chrono::milliseconds stop_grace_ms{15'000};
  /// How long the processes after the coordinator wait for its run store; 0: not at all.
  /// Default: 60 s.
  std::chrono::milliseconds store_wait_ms{60'000};
  /// How often run_node_agent polls children and the stop request. Default: 100 ms.
  std::chrono::milliseconds poll_interval_ms{100};
  /// node-status.json is rewritten at least this often (its updated_unix_ms tells a live agent
  /// from a dead one). Default: 5 s.
  std::chrono::milliseconds status_interval_ms{5'000};
  /// What argv[0] "cuda-agent" runs (LocalProcessOptions::cuda_agent_exe): empty for this
  /// executable; tests name a shim. Default: empty.
  std::string cuda_agent_exe;
  /// Heartbeat the run's coordinator as a member (see "Reporting"). Default: true.
  bool report_to_coordinator = true;
};

enum class NodeState : std::uint8_t {
  kRunning,   ///< every process runs, waits for a restart or has finished its work
  kDegraded,  ///< at least one process was given up; the others keep running
  kDraining,  ///< stopping: SIGTERM sent, waiting up to the grace
  kStopped,   ///< nothing runs any more
};

std::string_view to_string(NodeState state);  ///< "running", "degraded", "draining", "stopped"

struct NodeStatus {
  std::string host;
  NodeState state = NodeState::kRunning;
  std::string reason;  ///< why degraded or stopped; empty while running
  std::vector<ChildInfo> processes;
};

/// node-status.json's text for `status` (format in the header comment), ending in a newline.
std::string node_status_json(const NodeStatus& status, std::int64_t agent_pid,
                             std::int64_t updated_unix_ms);

/// The plan of node `host`. Errors: launch.unknown_host, naming `host` and the manifest's hosts.
Expected<NodePlan> node_plan_for_host(const Manifest& manifest,
                                      const std::string& manifest_path_for_argv,
                                      const std::string& host);

class NodeAgent {
 public:
  /// Plans node options.host and starts its processes in plan order. Errors: an unknown host,
  /// a log directory that cannot be made, a process that cannot be started (its program missing,
  /// fork failure): the processes already started are stopped first.
  static Expected<std::unique_ptr<NodeAgent>> start(const Manifest& manifest,
                                                    NodeAgentOptions options);
  ~NodeAgent();  ///< drains what still runs
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  /// Reaps, restarts, logs and updates the status file. False once the node has ended on its own:
  /// the coordinator's final exit, or nothing left running or due for a restart.
  bool poll();
  /// SIGTERM to every process in reverse start order, SIGKILL past stop_grace_ms; state stopped
  /// with `why` as the reason. Returns within about stop_grace_ms.
  void drain(const std::string& why);
  /// The agent's exit code once poll() returned false or drain() ran: 0 (stopped on request, or
  /// the run finished), 3 (the coordinator reported that the run cannot go on), 1 (every process
  /// ended and some failed).
  int exit_code() const { return exit_code_; }
  NodeStatus status() const;
  /// <log_dir>/node-status.json.
  const std::string& status_path() const { return status_path_; }
  const std::string& log_dir() const { return options_.log_dir; }

 private:
  NodeAgent(NodeAgentOptions options, NodePlan plan);
  Status start_next();  // the plan's processes from next_, up to the store wait
  void connect_reporter(const Manifest& manifest);  // reporter_, or a warning why not
  void handle(const ChildEvent& event);
  void write_status();

  NodeAgentOptions options_;
  NodePlan plan_;
  LocalProcesses children_;
  std::string status_path_;
  std::string coordinator_name_;  // the `serve coordinator` process of this node, if any
  std::filesystem::path store_dir_;
  std::size_t next_ = 0;  // index of the next process of plan_ to start
  std::chrono::steady_clock::time_point store_deadline_{};
  bool waiting_for_store_ = false;
  NodeState state_ = NodeState::kRunning;
  std::string reason_;
  bool ended_ = false;
  int exit_code_ = 0;
  std::chrono::steady_clock::time_point next_status_{};
  std::unique_ptr<CoordinatorClient> reporter_;  // heartbeats to the coordinator; may be null
};

/// The node agent's whole life: NodeAgent::start, then poll() every poll_interval_ms until
/// `stop_requested()` returns true (then drain) or the node ends on its own. Returns the exit
/// code (NodeAgent::exit_code), or the start error.
Expected<int> run_node_agent(const Manifest& manifest, const NodeAgentOptions& options,
                             const std::function<bool()>& stop_requested);

}  // namespace cuda_agent
