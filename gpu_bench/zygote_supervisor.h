// One owner's harness zygote (gpu_bench/harness_zygote.h) kept alive across jobs, with the policy
// the bench worker and the task filter share: the zygote lives in its own directory under a work
// root (HOME, TMPDIR; handed to the harness uid like a job directory); a failure around a job
// (it died, was killed or stopped by the job, never became ready) restarts it, at most
// `max_restarts` times in a row, after which, or at once when it refuses to serve (no torch,
// threads or CUDA before fork) or its directory cannot be made, the owner uses fresh children for
// good. A failure is never a job's verdict: run() then says "run it in a fresh child", and
// whether the job's directory must be written again first. What happened is kept as notes
// ("harness zygote: ...; restarted (1 in a row)") for the owner's next outcome.
//
//   ZygoteSupervisor z({.box = box, .work_root = root, .zygote_script = zs, .harness_script = hs});
//   z.start();                                   // optional: imports torch while the owner waits
//   ZygoteRun r = z.run(job, ready_by);
//   if (!r.result) { if (r.pid) write_job_again(); r.result = run_sandboxed(fresh_spec); }
//
// Threading: one owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu_bench/harness_sandbox.h"
#include "gpu_bench/harness_zygote.h"

namespace cuda_agent {

/// How a job went through the zygote.
struct ZygoteRun {
  /// The forked child's result; nullopt: run the job in a fresh child instead.
  std::optional<SandboxResult> result;
  /// The zygote the job was handed to; 0 when it was not (none, or not ready). Handed over and
  /// no result: the job ran partly and may have changed its directory.
  pid_t pid = 0;
  /// Seconds spent waiting for the zygote to be ready.
  double wait_ready_s = 0;
};

struct ZygoteSupervisorOptions {
  /// The zygote's sandbox; job_dir is ignored (each zygote gets work_root/<dir_prefix>-N).
  HarnessSandbox box;
  std::string work_root;
  std::string dir_prefix = "zygote";
  /// Empty: no zygote, every job in a fresh child.
  std::string zygote_script;
  std::string harness_script;
  std::int64_t message_grace_ms = 5'000;
  int max_restarts = 3;
  /// Said of a job the zygote lost after it was handed over (the owner then runs it fresh).
  std::string rerun_note = "the job was re-run in a fresh child";
  /// Error code of a directory that cannot be handed to the harness uid ("bench.job", ...).
  std::string error_code = "bench.job";
};

class ZygoteSupervisor {
 public:
  explicit ZygoteSupervisor(ZygoteSupervisorOptions options);
  ~ZygoteSupervisor();  // stops the zygote, then removes its directory
  ZygoteSupervisor(const ZygoteSupervisor&) = delete;
  ZygoteSupervisor& operator=(const ZygoteSupervisor&) = delete;

  /// Starts a zygote (not waiting for it) unless there is one, it is off or given up on.
  void start();
  /// `job` in a child forked from the zygote (started here if needed), waiting for it to be
  /// ready until `ready_by`. With `job_deadline`, the job's wall limit is what is left until it
  /// once the zygote is ready (at least 1 ms).
  ZygoteRun run(ZygoteJob job, std::chrono::steady_clock::time_point ready_by,
                std::optional<std::chrono::steady_clock::time_point> job_deadline = std::nullopt);
  /// The running zygote (nullptr when there is none): pid, ready_info.
  const HarnessZygote* process() const { return zygote_.get(); }
  bool given_up() const { return given_up_; }
  /// Adds an owner's note to those take_notes() returns.
  void note(std::string text) { notes_.push_back(std::move(text)); }
  /// What happened since the last call, oldest first.
  std::vector<std::string> take_notes();

 private:
  void stop();
  /// Notes `why` (a copy: it may be the failing zygote's own failure()), restarts within the bound.
  void failed(std::string why);

  ZygoteSupervisorOptions options_;
  std::unique_ptr<HarnessZygote> zygote_;
  std::string dir_;  ///< the running zygote's directory
  std::uint64_t dirs_ = 0;
  int restarts_ = 0;  ///< in a row, without a job served in between
  bool given_up_ = false;
  std::vector<std::string> notes_;
};

}  // namespace cuda_agent
