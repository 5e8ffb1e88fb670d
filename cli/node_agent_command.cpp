// `cuda-agent node-agent --host H [--manifest M] [--log-dir DIR] [--max-restarts N]`: runs node H's
// processes from the launch plan and keeps them alive (cluster/node_agent.h says how: plan order,
// restarts with backoff, degraded past the bound, node-status.json, the drain). SIGTERM, SIGINT
// and SIGHUP drain the node (SIGHUP is what sshd sends when `launch --ssh`'s `ssh -tt` session
// ends). Exit codes: 0 drained on a signal or the run finished; 1 every process ended and some
// failed; 2 bad input (an unknown host names the manifest's hosts); 3 the coordinator of this
// node reported that the run cannot go on.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/node_agent.h"

namespace cuda_agent::cli {
namespace {

struct NodeAgentArgs {
  std::string manifest;
  NodeAgentOptions options;
  std::int64_t restart_backoff_ms = 1000;
  std::int64_t stop_grace_ms = 15'000;
  std::int64_t store_wait_ms = 60'000;
};

int run(const NodeAgentArgs& a) {
  PolledStopSignals stop;  // before any thread starts

  auto manifest = load_manifest_or_default(a.manifest);
  if (!manifest) return report(manifest.error());
  NodeAgentOptions options = a.options;
  options.manifest_path_for_argv = a.manifest;
  options.restart_backoff_ms = std::chrono::milliseconds(a.restart_backoff_ms);
  options.stop_grace_ms = std::chrono::milliseconds(a.stop_grace_ms);
  options.store_wait_ms = std::chrono::milliseconds(a.store_wait_ms);
  auto code = run_node_agent(*manifest, options, [&] { return stop.poll(); });
  if (!code) return report(code.error());
  if (stop.seen != 0) {
    std::printf("node-agent %s: signal %d, node drained\n", options.host.c_str(), stop.seen);
  }
  return *code;
}

}  // namespace

void add_node_agent_command(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<NodeAgentArgs>();
  auto* cmd = app.add_subcommand(
      "node-agent",
      "run one node's processes from the launch plan: restarts with backoff, a degraded node past "
      "the restart bound, one log per process and node-status.json in the log directory; "
      "SIGTERM drains");
  cmd->add_option("--manifest", args->manifest,
                  "manifest, as every process of the node gets it (default: embedded "
                  "single-machine)");
  cmd->add_option("--host", args->options.host, "the node to run: a [[nodes]] host")->required();
  cmd->add_option("--log-dir", args->options.log_dir,
                  "per-process logs and node-status.json (default: RUN_DIR/logs/HOST, RUN_DIR "
                  "being the parent of [store] dir)");
  cmd->add_option("--max-restarts", args->options.max_restarts_per_window,
                  "restarts of one process per 10 minutes before it is given up and the node "
                  "is marked degraded")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--stop-grace-ms", args->stop_grace_ms,
                  "drain: SIGKILL to processes still alive this long after their SIGTERM")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{600'000}));
  cmd->add_option("--store-wait-ms", args->store_wait_ms,
                  "on the coordinator's node, how long the later processes wait for its run "
                  "store (0: not at all)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{600'000}));
  // For tests: the first restart pause, and a shim that plays the roles instead of this binary.
  cmd->add_option("--restart-backoff-ms", args->restart_backoff_ms, "first restart pause")
      ->group("")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{60'000}));
  cmd->add_option("--child-exe", args->options.cuda_agent_exe,
                  "program to run where the plan says cuda-agent")
      ->group("");
  cmd->callback([args, &result] { result.exit_code = run(*args); });
}

}  // namespace cuda_agent::cli
