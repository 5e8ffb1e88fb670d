// The processes of a launch plan (cluster/launch_plan.h) run as children of this process, on this
// machine: `cuda-agent train` starts every role of the run this way and supervises them.
//
//   LocalProcesses children({.log_dir = "runs/local/logs"});
//   for (const ProcessSpec& p : plan.processes) RETURN_IF_ERROR(children.start(p));
//   while (...) {
//     for (const ChildEvent& e : children.poll()) ...;   // exits, restarts, given up
//   }
//   children.stop_all();                                 // SIGTERM, then SIGKILL past the grace
//
// Every child dies with its parent (PR_SET_PDEATHSIG = SIGKILL, set before exec, and checked
// against a parent that died before it was set) and runs in its own process group, so a signal
// to the terminal reaches only the supervisor, which stops the children in reverse start order.
// A child's stdout and stderr go to `<log_dir>/<name>.log` (appended: restarts keep the earlier
// output). "cuda-agent" as argv[0] is this executable (/proc/self/exe), so children are the same
// build as the supervisor, unless `cuda_agent_exe` names another program (tests put a shim
// there). Any other argv[0] without a '/' is looked up on PATH when the child is started.
//
// Restart rule: a child that fails (exits non-zero or is killed) is started again after
// `restart_backoff_ms`, doubled per restart counted (at most `max_backoff_ms`), unless
// `expect_exit` was called for it, it exited with `fatal_exit_code`, or it already used
// `max_restarts` restarts. With `restart_window_ms` = 0 every restart since start() counts;
// otherwise only those of the last window (train and the node agent: 5 per 10 minutes), so a
// child that fails once an hour is restarted each time, after the first pause. A child that exits 0
// has finished its work (the coordinator once the run is finished) and is not restarted either. All
// of these are reported as given up; the caller decides (train stops the run with the child's log
// tail in its message, the node agent marks its node degraded).
//
// Threading: one thread owns the object (poll from one loop). Not copyable.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/launch_plan.h"
#include "core/error.h"

namespace cuda_agent {

struct LocalProcessOptions {
  /// Where each child's log goes (created). Must not be empty.
  std::string log_dir;
  /// Restarts of one child before it is given up: since start() when restart_window_ms is 0, else
  /// within the last restart_window_ms. Default: 5.
  int max_restarts = 5;
  /// The window restarts are counted in; 0 counts them all. Default: 0.
  std::chrono::milliseconds restart_window_ms{0};
  /// First pause before a restart, doubled per restart counted (see above). Default: 1 s.
  std::chrono::milliseconds restart_backoff_ms{1000};
  /// The longest pause before a restart. Default: 60 s.
  std::chrono::milliseconds max_backoff_ms{60'000};
  /// A child exiting with this code reports a failure a restart cannot fix (a run that cannot go
  /// on): it is given up at once. 0 disables. Default: 3 (kFatalExitCode).
  int fatal_exit_code = 3;
  /// stop_all: SIGTERM, then SIGKILL to children still alive after this long. Default: 15 s.
  std::chrono::milliseconds stop_grace_ms{15'000};
  /// The program argv[0] "cuda-agent" runs: empty for this executable (/proc/self/exe); a name
  /// without '/' is looked up on PATH. Tests name a shim that plays the roles. Default: empty.
  std::string cuda_agent_exe;
};

enum class ChildEventKind : std::uint8_t {
  kExited,     ///< it exited (status in the event); a restart follows unless given up
  kRestarted,  ///< it was started again
  kGivenUp,    ///< it exited and will not be restarted (expected exit or restarts spent)
};

struct ChildEvent {
  ChildEventKind kind = ChildEventKind::kExited;
  std::string name;       ///< ProcessSpec::name
  std::string role;       ///< ProcessSpec::role
  int exit_code = 0;      ///< kExited/kGivenUp: the exit code, or 128 + signal
  bool expected = false;  ///< kGivenUp: it exited 0 (its work is done), not a failure
  std::string log_path;
};

/// Where a child stands (LocalProcesses::children()).
enum class ChildState : std::uint8_t {
  kRunning,         ///< it runs (pid set)
  kRestartPending,  ///< it failed; a restart is due after the backoff
  kGivenUp,         ///< it failed and will not be restarted (restarts spent, fatal exit, expected)
  kFinished,        ///< it exited 0: its work is done
  kStopped,         ///< stop_all() ended it (or cancelled its restart)
};

std::string_view to_string(ChildState state);  ///< "running", "restart_pending", ..., "stopped"

/// One child as it stands now.
struct ChildInfo {
  std::string name;
  std::string role;
  ChildState state = ChildState::kRunning;
  pid_t pid = -1;           ///< -1 when not running
  int restarts = 0;         ///< restarts since start(), all windows
  int last_exit_code = -1;  ///< the last exit code (128 + signal when killed); -1 before any
  std::string log_path;
};

class LocalProcesses {
 public:
  explicit LocalProcesses(LocalProcessOptions options);
  ~LocalProcesses();  ///< stop_all()
  LocalProcesses(const LocalProcesses&) = delete;
  LocalProcesses& operator=(const LocalProcesses&) = delete;

  /// Starts `spec` (its env added to ours). Errors: a name already started, fork/exec failures
  /// (an exec failure shows as an exit with code 127 and the reason in the child's log).
  Status start(const ProcessSpec& spec);
  /// The next exit of child `name` ends it for good, without a restart (reported kGivenUp).
  void expect_exit(const std::string& name);
  /// Reaps exited children, restarts those due, and returns what happened since the last call.
  std::vector<ChildEvent> poll();
  /// Sends `signal` to child `name` (tests, chaos); false when it is not running.
  bool kill(const std::string& name, int signal);
  /// Names of the children running now, in start order.
  std::vector<std::string> running() const;
  /// The pid of a running child, or -1.
  pid_t pid(const std::string& name) const;
  /// Every child started, in start order, with its state, pid, restarts and last exit.
  std::vector<ChildInfo> children() const;
  /// SIGTERM to every child in reverse start order, then SIGKILL past stop_grace_ms; reaps all.
  void stop_all();

  /// The last `lines` lines of a child's log (for error messages).
  static std::string log_tail(const std::string& path, int lines);

 private:
  struct Child;
  Status launch(Child& c);
  LocalProcessOptions options_;
  std::vector<Child> children_;
};

}  // namespace cuda_agent
