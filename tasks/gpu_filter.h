// The GPU task filter (issue 7 item 4): runs gpu_bench/harness/filter_task.py on one task in a
// sandboxed child, exactly as the bench runs its harness (gpu_bench/harness_sandbox.h: the same
// confinement, environment and limits), and turns its answer into FilterResult rows. The checks
// and the request/result format are in docs/formats/harness.md ("The task filter").
//
//   ASSIGN_OR_RETURN(auto filter, GpuFilter::create({.gpu = 0, .jobs = 8}));
//   filter->run_all(tasks, deadline, [&](std::size_t i, GpuFilterOutcome o) { ... });
//
// Several children share the GPU for the correctness checks (`jobs`); timing sections take the
// GPU alone through the lock files in the work root (filter_task.py's GpuLocks), so the eager
// times inside the window are not measured under contention. A child that runs out of GPU memory
// while sharing is run again at the end with the GPU to itself.
//
// Each thread of run_all forks its children from its own harness zygote (gpu_bench/
// harness_zygote.h serving filter_task.py: a sandboxed Python that imported torch once, started
// on the thread's first task), so a child does not pay for `import torch`. A forked child gets
// the sandbox a fresh one gets (uid, network namespace, environment, limits, job directory, wall
// limit). When the zygote fails around a task (it died, was killed by the task, or never became
// ready), that task's directory is written again and the task runs in a fresh child: a zygote
// failure is never a task's verdict. The zygote is restarted, and after `zygote_max_restarts`
// failures in a row that thread uses fresh children for the rest of the run. Outcomes say which
// path ran (GpuFilterOutcome::forked).
//
// Outcomes: a task that fails a check is an outcome with passed = false and the failed check's
// name and reason. A child that crashes or passes its wall limit is an outcome too
// (failed_filter "filter_crashed" / "filter_timeout": the task is dropped). Only what makes every
// task fail the same way is an Error: no interpreter or script (bench.spawn), no torch
// (filter.no_torch), no GPU (filter.no_gpu), a broken request (filter.request).
//
// Threading: run_one may be called from several threads at once; run_all calls `done` on the
// calling thread only. Each zygote belongs to one run_all thread and dies with it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sandbox.h"
#include "tasks/task.h"

namespace cuda_agent {

class ZygoteSupervisor;  // gpu_bench/zygote_supervisor.h

struct GpuFilterOptions {
  /// The interpreter (needs torch). Default: python3 on PATH.
  std::string python = "python3";
  /// Directory holding filter_task.py. Default (empty): as the bench finds harness.py.
  std::string harness_dir;
  /// "cuda" (the filter's purpose) or "cpu" (tests on machines without a GPU).
  std::string device = "cuda";
  /// CUDA device index, as this process numbers them. Default: 0.
  int gpu = 0;
  /// Filter children at once on the one GPU. Default: 4.
  std::size_t jobs = 4;
  /// The eager time window, ms (manifest [tasks] eager_min_ms / eager_max_ms).
  double eager_min_ms = 1.0;
  double eager_max_ms = 100.0;
  /// Untimed runs before timing, and timed runs (the median counts). Defaults: 3 and 10.
  int warmup_trials = 3;
  int timed_trials = 10;
  /// Check (and time) torch.compile. Default: true.
  bool compile = true;
  /// Wall limit of one child: start-up, checks, compilation, timing. Default: 300000 ms.
  std::int64_t task_wall_ms = 300'000;
  /// Where job directories are made. Default (empty): $TMPDIR/cuda-agent-filter-<pid>.
  std::string work_root;
  /// Keep job directories after the run. Default: false.
  bool keep_jobs = false;
  /// As BenchServiceOptions::run_as_base: the uid of the children when this process is root.
  std::int64_t run_as_base = 62000;
  /// Put the children in an empty network namespace where allowed. Default: true.
  bool isolate_network = true;
  /// Children at once are also limited so their estimated GPU memory stays under this: M x the
  /// task's input bytes plus 1 GiB (9 GiB where the validator did not know the shapes). M starts
  /// at 6 and, once 8 children have reported their peak (torch's max_memory_reserved), becomes
  /// 1.25 x the median of peak / input bytes seen so far, between 3 and 8 (on an H200 the median
  /// was 4.6, the 90th percentile 13.5). A child that runs out of memory is run again alone at
  /// the end.
  /// 0: 70% of the GPU's memory (unlimited on the CPU). Default: 0.
  std::int64_t memory_budget_bytes = 0;
  /// Fork run_all's children from a harness zygote per thread (see above) instead of starting a
  /// fresh Python per task: saves each child's `import torch` (3.9 s of a 19 s median child on
  /// an H200 with 14 at once) for one zygote start per thread. The verdicts are the same either
  /// way; off (`--no-zygote`) is the plain path, for comparison or where forking misbehaves.
  /// run_one and the out-of-memory reruns always use fresh children. Default: true.
  bool zygote = true;
  /// The zygote script. Default (empty): zygote.py beside filter_task.py; where there is none,
  /// fresh children. (Tests give a bogus path to see the fallback.)
  std::string zygote_script;
  /// How long a task waits for its thread's zygote to be ready (imports, preload) before it runs
  /// in a fresh child and the zygote counts as failed. Default: 120000 ms.
  std::int64_t zygote_ready_ms = 120'000;
  /// Zygote failures in a row on one thread (no task served in between) before that thread uses
  /// fresh children for the rest of the run; a zygote that refuses to serve (no torch, threads or
  /// CUDA before fork) is given up at once. Default: 3.
  int zygote_max_restarts = 3;
};

struct GpuFilterOutcome {
  bool passed = false;
  /// One row per check that ran, plus the summary row "gpu_filter" whose details hold the
  /// options key, content hash, times, device and torch version (what resume compares).
  std::vector<FilterResult> results;
  std::string failed_filter;  ///< the first failed check, "filter_timeout", "filter_crashed", ...
  std::string reason;
  double eager_ms = 0;    ///< 0: not measured
  double compile_ms = 0;  ///< 0: not measured
  bool oom = false;       ///< the failure was running out of GPU memory
  double wall_s = 0;
  /// The child's peak GPU memory (torch.cuda.max_memory_reserved); 0 on the CPU or unknown.
  std::int64_t peak_gpu_bytes = 0;
  /// Where the child's time went (seconds): "lock_wait" (waiting for the GPU locks) and the
  /// harness's phases_s ("import_torch", "device_init", "checks", "first_compiled_call"); when
  /// forked, "zygote_wait" (waiting for the thread's zygote to be ready, before the wall time)
  /// and an "import_torch" of about 0 (the zygote imported it).
  std::map<std::string, double> phases_s;
  /// The child was forked from the thread's zygote (else a fresh Python ran it).
  bool forked = false;
  /// Why the zygote did not serve this task, or what happened to it around this task ("harness
  /// zygote: died during a job; restarted (1 in a row)"); empty when nothing happened.
  std::string zygote_note;
};

class GpuFilter {
 public:
  static Expected<std::unique_ptr<GpuFilter>> create(GpuFilterOptions options);
  ~GpuFilter();
  GpuFilter(const GpuFilter&) = delete;
  GpuFilter& operator=(const GpuFilter&) = delete;

  /// One task in one fresh child. Errors as in the header comment.
  Expected<GpuFilterOutcome> run_one(const Task& task);

  /// Every task, `jobs` at a time; `done(i, outcome)` on this thread as each finishes. Tasks not
  /// started by `deadline` are not run (the count is returned). Stops at the first Error.
  Expected<std::size_t> run_all(const std::vector<const Task*>& tasks,
                                std::chrono::steady_clock::time_point deadline,
                                const std::function<void(std::size_t, GpuFilterOutcome)>& done);

  /// What a stored result must match to be reused: the checks' version and options, the device
  /// kind and GPU model. "filter v1 cuda NVIDIA H200 window 1-100 ms trials 3+10 compile on".
  const std::string& options_key() const { return key_; }
  const GpuFilterOptions& options() const { return options_; }

 private:
  GpuFilter(GpuFilterOptions options, std::string python, std::string script, std::string key,
            std::string visible_device);
  std::int64_t estimate_bytes(const Task& task, double multiplier) const;
  /// One task in a child forked from `zygote` (nullptr, or given up on: a fresh child).
  Expected<GpuFilterOutcome> run_task(const Task& task, ZygoteSupervisor* zygote);
  Status write_job(const Task& task, const std::string& dir) const;
  /// A run_all thread's zygote (not started yet); nullptr where there is no zygote script.
  std::unique_ptr<ZygoteSupervisor> make_zygote();

  GpuFilterOptions options_;
  std::string python_;
  std::string script_;
  std::string key_;
  std::string visible_device_;
  std::string lock_dir_;
  std::string zygote_script_;  ///< empty: fresh children only
  std::atomic<std::uint64_t> next_job_{0};
  std::atomic<std::uint64_t> next_zygote_{0};
};

/// Bytes the task's tensor inputs take, from the validator's shapes and dtypes; -1 where it did
/// not know every shape (or found no inputs).
std::int64_t task_input_bytes(const Task& task);

/// The outcome a parsed result file gives (exposed for tests). `key` and `content_hash` go into
/// the summary row.
Expected<GpuFilterOutcome> parse_filter_result(std::string_view json, const std::string& key,
                                               const std::string& content_hash,
                                               std::int64_t now_unix_ms);

/// The outcome of a child that ended without a result: timeout, crash, limits.
GpuFilterOutcome failed_child_outcome(const SandboxResult& r, std::int64_t wall_ms,
                                      const std::string& key, const std::string& content_hash,
                                      std::int64_t now_unix_ms);

/// The stored summary row of a GPU filter run, when `task` has one made with `key` for its
/// current content hash and it is not a timeout (those are run again).
std::optional<FilterResult> stored_gpu_result(const Task& task, const std::string& key);

}  // namespace cuda_agent
