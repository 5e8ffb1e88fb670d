// Runs an untrusted or resource-hungry command in a child process with limits: the compile farm's
// nvcc jobs, and later the GPU bench harness. One function, run_sandboxed(), and what it reports.
//
//   SandboxSpec spec{.argv = {"/usr/local/cuda/bin/nvcc", "-c", "k.cu"}, .work_dir = job_dir};
//   spec.limits.wall_ms = 60'000;
//   ASSIGN_OR_RETURN(SandboxResult r, run_sandboxed(spec));
//   if (r.outcome != SandboxOutcome::kExited || r.exit_code != 0) ... r.output ...
//
// What the child gets (set between fork and exec, async-signal-safe calls only):
//  - its own process group, killed as a whole (SIGKILL) at the wall deadline, when its output
//    passes output_bytes (a diagnostic flood), and after the main process exits (no stragglers);
//  - the group dies with the calling process: the program itself through a parent-death signal,
//    the rest of its group (nvcc's cicc, ptxas, cc1plus) through this process's group guard, a
//    helper process (named sandbox-guard, started at the first spawn) that kills every group still
//    registered with it the moment this process dies, however it dies (SIGKILL included);
//  - rlimits: CPU seconds, address space, largest file written, no core dumps, open files;
//  - stdout and stderr merged into one pipe the parent reads (the output), stdin from `stdin_data`;
//  - the environment exactly as given (nothing inherited), the working directory `work_dir`;
//  - a new network namespace with no interfaces when isolate_network is set and the kernel lets
//    this process create one (root, or unprivileged user namespaces); network_isolated says
//    whether it took;
//  - when `run_as` is set (the caller is root): supplementary groups dropped, then gid and uid
//    switched, no_new_privs set.
//
// Threading: run_sandboxed may be called from many threads at once; each call blocks its thread
// until the child and its group are gone (the wall deadline bounds that).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/unique_fd.h"

namespace cuda_agent {

struct SandboxLimits {
  /// Wall-clock limit; the process group is killed past it. Default: 60000 ms.
  std::int64_t wall_ms = 60'000;
  /// RLIMIT_CPU of each process in the group. Default: 60 s.
  std::int64_t cpu_seconds = 60;
  /// RLIMIT_AS of each process. 0: unlimited. Default: 4 GiB.
  std::int64_t memory_bytes = 4ll << 30;
  /// RLIMIT_FSIZE: largest file a process may write. Default: 256 MiB.
  std::int64_t file_bytes = 256ll << 20;
  /// Output (stdout + stderr) kept; past it the group is killed (a flood). Default: 4 MiB.
  std::int64_t output_bytes = 4ll << 20;
  /// RLIMIT_NOFILE. Default: 256.
  std::int64_t open_files = 256;
  /// RLIMIT_NPROC, applied only with run_as (it counts per user). Default: 256.
  std::int64_t processes = 256;
};

/// Credentials to drop to (the caller must be root for this to work).
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct SandboxSpec {
  /// Program and arguments. argv[0] must be an absolute path (no PATH search).
  std::vector<std::string> argv;
  /// The child's whole environment, "NAME=value" each. Nothing is inherited.
  std::vector<std::string> env;
  /// Working directory of the child. Required.
  std::string work_dir;
  SandboxLimits limits;
  /// Drop to these ids before exec. nullopt: keep the caller's.
  std::optional<RunAs> run_as;
  /// Put the child in an empty network namespace where the machine allows it. Default: true.
  bool isolate_network = true;
  /// Written to the child's stdin, which is then closed.
  std::string stdin_data;
};

enum class SandboxOutcome {
  kExited,       ///< exited on its own; see exit_code
  kSignalled,    ///< killed by a signal it did not get from us (a crash); see signal
  kWallTimeout,  ///< killed at the wall deadline
  kCpuLimit,     ///< killed by RLIMIT_CPU (SIGXCPU / SIGKILL after the soft limit)
  kOutputLimit,  ///< killed because its output passed limits.output_bytes
  kFileLimit,    ///< a process tried to write past limits.file_bytes (SIGXFSZ)
};

std::string_view to_string(SandboxOutcome outcome);

struct SandboxResult {
  SandboxOutcome outcome = SandboxOutcome::kExited;
  int exit_code = -1;       ///< when kExited
  int signal = 0;           ///< the terminating signal, when there was one
  std::string output;       ///< stdout and stderr interleaved, at most limits.output_bytes
  double wall_seconds = 0;  ///< from fork to the group's end
  double cpu_seconds = 0;   ///< user + system time of the main process and its waited children
  std::int64_t max_rss_bytes = 0;  ///< peak resident set of the largest waited process
  bool network_isolated = false;   ///< the child ran in an empty network namespace
};

/// Runs the spec. Errors only when the child could not be started at all (sandbox.spawn: bad
/// argv, fork or exec failure, work_dir missing, dropping privileges refused); every way the
/// child itself ends is a SandboxResult.
Expected<SandboxResult> run_sandboxed(const SandboxSpec& spec);

/// A sandboxed child that outlives the call that started it: a pre-started server such as the
/// bench's harness zygote (gpu_bench/harness_zygote.h). The same confinement as run_sandboxed
/// (process group, rlimits, network namespace, uid, no_new_privs, parent-death signal, the
/// environment exactly as given) except that stdin is /dev/null, `control_fd` (when >= 0)
/// becomes the child's fd 3, and the wall limit is the owner's business: nothing here waits.
///
///   ASSIGN_OR_RETURN(SandboxedProcess p, SandboxedProcess::start(spec, child_end.fd));
///   poll({p.pidfd(), POLLIN}, ...);  // readable once the process has exited
///   SandboxResult how = p.stop();    // kills the group, reaps, says how it ended
///
/// Threading: one owner. The destructor kills the group and reaps.
class SandboxedProcess {
 public:
  /// Errors as run_sandboxed's (sandbox.spawn), reported once the child has exec'd or failed.
  static Expected<SandboxedProcess> start(const SandboxSpec& spec, int control_fd);
  SandboxedProcess() = default;
  SandboxedProcess(SandboxedProcess&& o) noexcept;
  SandboxedProcess& operator=(SandboxedProcess&& o) noexcept;
  ~SandboxedProcess();

  bool running() const { return pid_ > 0 && !reaped_; }
  pid_t pid() const { return pid_; }
  /// A pidfd of the process (-1 where the kernel has none): POLLIN once it has exited.
  int pidfd() const { return pidfd_.fd; }
  /// Its stdout and stderr, merged (non-blocking; -1 once closed).
  int output_fd() const { return output_.fd; }
  bool network_isolated() const { return network_isolated_; }
  /// Whether the process has exited (reaps it without blocking).
  bool exited();
  /// What can be read from the output now, at most max_bytes.
  std::string read_output(std::size_t max_bytes);
  /// Kills the group (SIGKILL), reaps the process and says how it ended: kExited with its code
  /// or kSignalled (SIGKILL when this killed it). No-op result when nothing runs.
  SandboxResult stop();

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd output_;
  bool network_isolated_ = false;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::chrono::steady_clock::time_point started_;
};

/// Whether this process may give children an empty network namespace (probed once).
bool can_isolate_network();

/// Reads a file that sandboxed, untrusted code could have replaced (a harness's result.json in its
/// job directory): opened with O_NOFOLLOW | O_NONBLOCK, so a symbolic link is refused and a fifo
/// cannot block; it must be a regular file with one link (a hard link may name a host file) and
/// at most `max_bytes` long. Errors: kNotFound "sandbox.no_file"; kPolicy
/// "sandbox.not_regular_file" (a link, fifo, device, directory or hard link, named, never read);
/// kInvalidInput "sandbox.file_too_large"; kIo "sandbox.read".
Expected<std::string> read_untrusted_file(const std::string& path,
                                          std::size_t max_bytes = 64u << 20);

}  // namespace cuda_agent
