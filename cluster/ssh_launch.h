// The ssh backend of `cuda-agent launch --ssh` (issue 26): one node agent (cluster/node_agent.h)
// per host of the manifest, each started through ssh and supervised from here.
//
//   SshLaunchOptions o{.remote_manifest_path = "/shared/run/two-nodes.toml",
//                      .local_version = cli::version_text(), .log_dir = "runs/two-nodes/ssh"};
//   RETURN_IF_ERROR(ssh_preflight(manifest, o));           // nothing started if this fails
//   Expected<int> code = run_ssh_launch(manifest, o, [&] { return stop_flag.load(); });
//
// Preflight: for every distinct host, `SSH... HOST cuda-agent --version`, all hosts at once (at
// most `preflight_parallel`), each within `preflight_timeout_ms`. Refused, before anything starts,
// with every problem named by host: ssh's exit 255 (unreachable, refused key, unknown host key;
// the message carries ssh's stderr tail), no answer in time, the remote command failing
// (cuda-agent not on the remote PATH: its exit code and stderr), or a version whose text differs
// from `local_version` (both versions, at the first line that differs).
//
// Start: per host `SSH... -tt HOST cuda-agent node-agent --manifest M --host HOST [args]`, the
// remote words shell-quoted (ssh hands them to the remote shell as one line), each session a
// supervised child (cluster/local_processes.h: it dies with the launcher by PR_SET_PDEATHSIG),
// its output (the agent's log lines) in `<log_dir>/<host>.log`. A session that ends with a
// failure (ssh's 255 for a lost connection, or the agent's own failure) is started again with
// backoff, at most `max_restarts_per_window` times per 10 minutes; then the host is given up and
// the launch goes on with the others. A session that exits 0 (its node finished) is left alone.
// When the coordinator's node ends (its agent exits 0: the run is finished; 3: it cannot go on),
// every other session is stopped and that is the launch's exit code.
//
// Stop: SIGTERM to every ssh, in reverse start order (SIGKILL past `stop_grace_ms`). ssh then
// closes the session; because of -tt the remote agent holds a pty, and sshd sends it SIGHUP when
// the session goes, which the node agent takes as a drain (its processes get SIGTERM, then SIGKILL
// past its own grace). So stop() returns once the sessions are closed, and each remote node
// drains on its own within the agent's grace. Without -tt (`force_tty = false`) a remote agent
// would only notice the lost session when it next wrote to it: keep it on. The launcher dying
// (even by SIGKILL) ends the ssh sessions the same way.
//
// Threading: the free functions may run on any thread; an SshLaunch is owned by one thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/local_processes.h"
#include "cluster/manifest.h"
#include "core/error.h"

namespace cuda_agent {

struct SshLaunchOptions {
  /// The manifest's path on the remote hosts, passed to every node agent as --manifest. Required.
  std::string remote_manifest_path;
  /// What `cuda-agent --version` prints on this machine (cli::version_text()); every host must
  /// print the same text (compared line by line, trailing white space and \r ignored). Required.
  std::string local_version;
  /// Per-host session logs, <log_dir>/<host>.log (created). Required.
  std::string log_dir;
  /// The ssh command the host and remote command are appended to: argv, or one string through
  /// split_ssh_command. Default: ssh -o BatchMode=yes -o ConnectTimeout=10 (never prompts;
  /// an unreachable host fails within 10 s).
  std::vector<std::string> ssh_command = {"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"};
  /// The cuda-agent program on the remote hosts (their PATH decides). Default: cuda-agent.
  std::string remote_program = "cuda-agent";
  /// More arguments for every node agent (--log-dir DIR, --max-restarts N, ...). Default: none.
  std::vector<std::string> node_agent_args;
  /// Pass -tt so the remote agent has a pty and gets SIGHUP when its session ends (see above).
  /// Default: true.
  bool force_tty = true;
  /// Preflight: how long one host may take to print its version. Default: 30 s.
  std::chrono::milliseconds preflight_timeout_ms{30'000};
  /// Preflight: hosts asked at once. Default: 32.
  int preflight_parallel = 32;
  /// Restarts of a host's session within restart_window_ms before the host is given up.
  /// Default: 5.
  int max_restarts_per_window = 5;
  /// The window restarts are counted in. Default: 10 minutes.
  std::chrono::milliseconds restart_window_ms{600'000};
  /// First pause before a session is started again, doubled per restart (at most 60 s).
  /// Default: 1 s.
  std::chrono::milliseconds restart_backoff_ms{1000};
  /// stop(): SIGKILL to an ssh still alive this long after its SIGTERM. Default: 5 s.
  std::chrono::milliseconds stop_grace_ms{5'000};
  /// How often run_ssh_launch polls the sessions and the stop request. Default: 200 ms.
  std::chrono::milliseconds poll_interval_ms{200};
};

/// "ssh -p 2222 -o BatchMode=yes" as argv: split on runs of spaces and tabs, no quoting rules.
std::vector<std::string> split_ssh_command(std::string_view command);

/// The manifest's hosts, each once, in manifest order.
std::vector<std::string> manifest_hosts(const Manifest& manifest);

/// `SSH... HOST cuda-agent --version`.
std::vector<std::string> ssh_version_argv(const SshLaunchOptions& options, const std::string& host);
/// `SSH... [-tt] HOST cuda-agent node-agent --manifest M --host HOST [node_agent_args]`, the words
/// after HOST shell-quoted.
std::vector<std::string> ssh_node_agent_argv(const SshLaunchOptions& options,
                                             const std::string& host);

/// Asks every host for its version (see the header comment). Errors: launch.host_unreachable,
/// launch.host_timeout, launch.host_check_failed, launch.version_mismatch (the code of the first
/// problem; the message names every host with a problem, one a line), launch.bad_options.
Status ssh_preflight(const Manifest& manifest, const SshLaunchOptions& options);

class SshLaunch {
 public:
  /// Starts one node agent per host through ssh; no preflight (call ssh_preflight first).
  /// Errors: launch.bad_options, the ssh program not found, fork failures (sessions already
  /// started are stopped first).
  static Expected<std::unique_ptr<SshLaunch>> start(const Manifest& manifest,
                                                    SshLaunchOptions options);
  ~SshLaunch();  ///< stop()
  SshLaunch(const SshLaunch&) = delete;
  SshLaunch& operator=(const SshLaunch&) = delete;

  /// Reaps and restarts sessions, logs what happened. False once the launch has ended on its own:
  /// the coordinator's node ended, or no session is left.
  bool poll();
  /// Ends every session (see the header comment). Returns within about stop_grace_ms.
  void stop();
  /// After poll() returned false or stop(): 0 (stopped, or the run finished), 3 (the run cannot go
  /// on), 1 (every session ended and some failed).
  int exit_code() const { return exit_code_; }
  /// The sessions (name = host), in start order.
  std::vector<ChildInfo> sessions() const { return sessions_.children(); }

 private:
  SshLaunch(const Manifest& manifest, SshLaunchOptions options);
  SshLaunchOptions options_;
  std::string coordinator_host_;
  LocalProcesses sessions_;
  bool ended_ = false;
  bool failed_ = false;
  int exit_code_ = 0;
};

/// Free-function form of SshLaunch::start, for `launch --ssh`.
Expected<std::unique_ptr<SshLaunch>> ssh_start(const Manifest& manifest,
                                               const SshLaunchOptions& options);

/// The whole launch: ssh_preflight, ssh_start, then poll every poll_interval_ms until
/// `stop_requested()` (then stop) or the launch ends on its own. Returns the exit code
/// (SshLaunch::exit_code), or the preflight or start error.
Expected<int> run_ssh_launch(const Manifest& manifest, const SshLaunchOptions& options,
                             const std::function<bool()>& stop_requested);

}  // namespace cuda_agent
