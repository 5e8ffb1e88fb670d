// The pre-started harness ("zygote") of one bench worker: a long-lived Python process, started
// through the harness sandbox (gpu_bench/harness_sandbox.h: the same uid, network namespace,
// environment and limits as a per-request harness child), that has imported torch and the
// harness modules but never initialised CUDA. Each job is a child it forks, which runs the
// harness on that job's request and result files exactly as a per-request child would
// (gpu_bench/harness/zygote.py; protocol in docs/formats/harness.md, "The zygote"). A job then
// starts in milliseconds instead of the 1 to 2 s of a fresh `import torch`.
//
//   ASSIGN_OR_RETURN(auto z, HarnessZygote::start({.box = box, .zygote_script = zs,
//                                                  .harness_script = hs}));
//   RETURN_IF_ERROR(z->wait_ready(deadline));
//   Expected<SandboxResult> r = z->run(job);   // a bench.zygote error: restart, run elsewhere
//
// Trust. The zygote runs only the project's code; untrusted code runs in the forked job, under
// the zygote's uid, in its own process group. The zygote is not dumpable, so a job cannot ptrace
// it or touch its memory; a job can still signal it (same uid). Everything a job could do to the
// zygote shows here as a bench.zygote error (the socket closes, a message is missing, malformed
// or late), never as a job outcome: the caller restarts the zygote and re-runs that job in a
// fresh child, so a job that kills or stops the zygote costs a restart, not a wrong verdict.
// Every wait has a deadline: the job's wall limit, the start-up deadline, and a grace period for
// the zygote's messages around a job.
//
// Threading: one owner; run() and wait_ready() block the calling thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sandbox.h"
#include "core/unique_fd.h"
#include "gpu_bench/harness_sandbox.h"

namespace cuda_agent {

struct HarnessZygoteOptions {
  /// The sandbox of the zygote: job_dir is its own directory (HOME, TMPDIR; handed to run_as).
  HarnessSandbox box;
  /// gpu_bench/harness/zygote.py and the harness it serves (harness.py, or a test's fake).
  std::string zygote_script;
  std::string harness_script;
  /// How long a job may wait for the zygote's answers around it (its pid after the job message,
  /// its exit status after the job's process ended or was killed). Default: 5000 ms.
  std::int64_t message_grace_ms = 5'000;
};

/// One job: the harness's arguments, and the sandbox the per-request child would have had.
struct ZygoteJob {
  std::vector<std::string> argv;  ///< harness arguments ("--request", path, "--result", path)
  std::vector<std::string> env;   ///< the child's whole environment (harness_sandbox_spec's)
  std::string dir;                ///< working directory (the job directory)
  SandboxLimits limits;           ///< wall_ms, cpu_seconds and output_bytes are applied per job
};

class HarnessZygote {
 public:
  /// Spawns the zygote (it imports torch in the background; wait_ready waits for that).
  /// Errors: sandbox.spawn.
  static Expected<std::unique_ptr<HarnessZygote>> start(const HarnessZygoteOptions& options);
  ~HarnessZygote();
  HarnessZygote(const HarnessZygote&) = delete;
  HarnessZygote& operator=(const HarnessZygote&) = delete;

  /// Waits (until `deadline`) for the zygote's ready message. Errors: bench.zygote (unavailable)
  /// with the zygote's reason (no torch, CUDA initialised, threads before fork, ...) or its
  /// output when it died, or the deadline.
  Status wait_ready(std::chrono::steady_clock::time_point deadline);
  bool ready() const { return ready_; }
  /// The ready message (JSON: startup seconds, torch version, thread counts), for logs.
  const std::string& ready_info() const { return ready_info_; }
  /// Whether the zygote process still runs.
  bool alive();
  pid_t pid() const { return process_.pid(); }
  /// Why the zygote was last stopped (empty while it never failed), for the worker's notes.
  const std::string& failure() const { return failure_; }

  /// Runs one job to its end and says how it ended, as run_sandboxed would have (kExited with
  /// the code, kSignalled, kCpuLimit, kWallTimeout, kOutputLimit). Errors: bench.zygote
  /// (unavailable) when the zygote failed around this job (died, closed the socket, missed a
  /// grace period, sent something unexpected): the job's process group is killed, the outcome is
  /// unknown and the zygote must be replaced. A job killed at its deadline or for its output is
  /// reported as such even when the zygote then fails to answer (it is stopped all the same:
  /// ready() turns false).
  Expected<SandboxResult> run(const ZygoteJob& job);

 private:
  HarnessZygote() = default;
  Error fail(const std::string& what);
  void keep_output(const std::string& more);

  SandboxedProcess process_;
  UniqueFd control_;  ///< our end of the SOCK_SEQPACKET control socket
  bool ready_ = false;
  std::string ready_info_;
  std::string output_;  ///< the zygote's own output, the last 16 KiB
  std::string failure_;
  std::uint64_t jobs_ = 0;
  std::int64_t grace_ms_ = 5'000;
};

}  // namespace cuda_agent
