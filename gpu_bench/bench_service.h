// The GPU bench's evaluation of one built solution on the local GPU (DESIGN.md section 5): writes a
// job directory, runs the Python harness (gpu_bench/harness/harness.py) in a sandboxed child
// process, parses its result, scores the reward and fills the audit record. A bench worker holds
// one BenchService per GPU it owns; `cuda-agent bench` holds one for its single evaluation.
//
//   ASSIGN_OR_RETURN(auto bench, BenchService::create({.device = 0}));
//   Expected<BenchEvaluation> e = bench->evaluate(job);   // job: model.py, .so, model_new.py
//   if (e) use(e->result.reward.tier, e->result.audit);
//
// Untrusted code (the shared object and model_new.py) runs only in the harness child, under
// core/sandbox.h: its own process group, an unprivileged uid when this process is root, an empty
// network namespace where the machine allows it, CPU, file-size, open-file and output limits, a
// wall-clock deadline, and a resident-memory watchdog inside the harness (an address-space limit
// cannot bound a CUDA process). CUDA_VISIBLE_DEVICES names only this service's GPU.
//
// The harness child is forked from this service's pre-started harness (gpu_bench/harness_zygote.h:
// one long-lived Python in the same sandbox, torch imported, CUDA not initialised) when
// options.bench.harness_zygote is on (the default), else a fresh Python per request. When the
// zygote fails around a job (killed or stopped by that job, or broken), the job's directory is
// written again from scratch and the job re-run in a fresh Python child, so the verdict never
// depends on the zygote; the zygote is restarted (at most zygote_max_restarts times in a row,
// then this service stays on fresh children) and the evaluation's notes say what happened.
//
// Outcomes. A candidate that fails checks is an evaluation with reward tier -1 (and its failed
// checks and violations). An Error means the evaluation could not run:
//   bench.timeout (timeout: the harness passed its wall deadline: a hung kernel or task),
//   bench.crashed (invalid_input: the harness died by a signal, e.g. a segfault in the solution's
//     host code), bench.cpu_limit / bench.output_limit / bench.file_limit (invalid_input),
//   bench.no_result (internal: exited without a result file), bench.result (internal: the result
//     file is malformed), harness.* (the harness's own typed errors: a broken task, no GPU, ...),
//   bench.spawn (unavailable: python or the harness could not be started),
//   bench.gpu_unhealthy (unavailable: the GPU failed its health check; no more work until it
//     passes one).
// After a timeout, a crash, or a result that reports a device fault, the GPU is health-checked
// (gpu_bench/device_probe.h) before this service takes more work.
//
// Threading: evaluate() may be called from any thread; calls are serialised (the GPU is owned
// exclusively). healthy() is safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sandbox.h"
#include "gpu_bench/bench_options.h"
#include "gpu_bench/bench_types.h"
#include "gpu_bench/harness_protocol.h"
#include "gpu_bench/reward.h"
#include "gpu_bench/zygote_supervisor.h"
#include "messages/bench_codec.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

struct BenchServiceOptions {
  /// Manifest [bench]: tolerances, trials, thresholds, limits, the python interpreter.
  BenchOptions bench;
  /// CUDA device index this service owns (as this process sees it). Default: 0.
  int device = 0;
  /// Directory holding harness.py. Default (empty): $CUDA_AGENT_HARNESS_DIR, else
  /// <executable dir>/../share/cuda-agent/harness (installed), else the source tree's
  /// gpu_bench/harness (a build that runs where it was built).
  std::string harness_dir;
  /// Where job directories are made. Default (empty): $TMPDIR/cuda-agent-bench-<pid>.
  std::string work_root;
  /// Keep job directories (request, result, model files) after the evaluation. Default: false.
  bool keep_jobs = false;
  /// When running as root, the harness runs as uid/gid run_as_base + device. -1: never switch
  /// (also forced by CUDA_AGENT_BENCH_KEEP_UID=1, for nodes whose Python only root can read).
  /// Default: 62000.
  std::int64_t run_as_base = 62000;
  /// Put the harness in an empty network namespace where allowed. Default: true.
  bool isolate_network = true;
  /// Deadline of the GPU health check after a fault. Default: 30000 ms.
  std::int64_t health_check_ms = 30'000;
  /// The worker's id, recorded in every audit record.
  WorkerId worker_id;
  /// Health check of the GPU; default (empty): device_probe's health_check(device). Tests inject
  /// a fake here.
  std::function<Status()> health_check;
  /// Reuse this service's own torch.compile median of a task (same task text, same precision
  /// flags; the service owns one GPU and one Python) instead of compiling and timing the
  /// reference again, except for jobs with `overrides.remeasure_baselines` (final evaluations).
  /// Default: true.
  bool reuse_compile_baseline = true;
  /// The same for the eager baseline: a non-final benchmark of a task this service has timed
  /// before times only the candidate against the earlier eager median (the issue's "cached per
  /// task, GPU, torch and precision; re-measured for final evaluations"). The agent's own calls
  /// during an episode get faster feedback (for a 1 ms kernel whose eager takes 8 ms, most of the
  /// timing phase); the reward's final evaluation still times eager interleaved with the
  /// candidate. Default: true.
  bool reuse_eager_baseline = true;
  /// How long the first job may wait for the zygote to be ready (import torch, preload); past it
  /// the job runs in a fresh child. Default: 120000 ms.
  std::int64_t zygote_ready_ms = 120'000;
  /// Zygote restarts in a row (without a job served in between) before this service stays on
  /// fresh children. A zygote that refuses to serve (no torch, threads or CUDA before fork) is
  /// not restarted. Default: 3.
  int zygote_max_restarts = 3;
  /// Grace period for the zygote's messages around a job (HarnessZygoteOptions). Default: 5000 ms.
  std::int64_t zygote_message_grace_ms = 5'000;
};

class BenchService {
 public:
  static Expected<std::unique_ptr<BenchService>> create(BenchServiceOptions options);
  ~BenchService();
  BenchService(const BenchService&) = delete;
  BenchService& operator=(const BenchService&) = delete;

  Expected<BenchEvaluation> evaluate(const BenchJob& job);

  /// False after a fault whose health check failed; evaluate() then re-checks first.
  bool healthy() const;
  /// The harness script this service runs.
  const std::string& harness_path() const { return harness_path_; }
  /// Whether jobs currently go to the zygote (on, started, not given up on).
  bool zygote_enabled() const;
  /// The zygote's ready message (JSON), empty until it is ready; for logs and benchmarks.
  std::string zygote_info() const;

 private:
  BenchService(BenchServiceOptions options, std::string python, std::string harness_path);
  Status ensure_healthy();
  Expected<BenchEvaluation> run_job(const BenchJob& job,
                                    const std::optional<CachedBaseline>& baseline,
                                    const std::string& dir);
  /// The harness's arguments for the job in `dir`: --request dir/request.json --result
  /// dir/result.json.
  static std::vector<std::string> job_args(const std::string& dir);
  /// `python -I -B harness.py <job_args>` confined for this service's GPU (harness_sandbox_spec).
  SandboxSpec harness_spec(const std::string& dir, std::int64_t wall_ms) const;
  /// Writes the job directory from scratch: model.py, solution.so, model_new.py, request.json
  /// (with the harness option ncu_region when `ncu_region`).
  Status write_job_dir(const BenchJob& job, const std::optional<CachedBaseline>& baseline,
                       const std::string& dir, bool ncu_region = false);
  /// Profile mode, after a run that passed: the harness once more under Nsight Compute (a fresh
  /// child in `dir`), its per-kernel table put before the PyTorch profiler's in the report, or a
  /// line saying why there is none (gpu_bench/nsight_compute.h).
  void add_nsight_compute(const BenchJob& job, const std::optional<CachedBaseline>& baseline,
                          const std::string& dir, BenchEvaluation& e);

  BenchServiceOptions options_;
  std::string python_;
  std::string harness_path_;
  std::string visible_device_;   ///< CUDA_VISIBLE_DEVICES for the child (a UUID where known)
  std::optional<RunAs> run_as_;  ///< the child's uid/gid (harness_run_as); none: the caller's
  std::string ncu_;  ///< Nsight Compute for profile mode ([bench] nsight_compute); empty: none
  mutable std::mutex mu_;
  bool healthy_ = true;
  std::uint64_t jobs_ = 0;
  /// torch.compile medians this service measured: task content hash + precision -> us.
  /// This service's own baseline medians per task text and precision (memo_key in evaluate);
  /// 0 where not measured yet.
  std::map<std::string, CachedBaseline> baseline_memo_;
  /// The zygote and its restarts; its notes go into the next evaluation's notes.
  std::unique_ptr<ZygoteSupervisor> zygote_;
};

/// Fills the reward and speedups of `e` from its trials, checks and violations (with `cached`
/// baseline medians standing in for baselines that were not re-measured).
void score_evaluation(BenchEvaluation& e, const RewardRule& rule,
                      const std::optional<CachedBaseline>& cached);

}  // namespace cuda_agent
