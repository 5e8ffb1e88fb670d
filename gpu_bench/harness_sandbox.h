// How a Python script from the harness directory runs sandboxed on one GPU: the bench harness
// (gpu_bench/bench_service.h) and the task filter (tasks/gpu_filter.h) share this, so both get
// the same confinement (core/sandbox.h), environment and limits.
//
//   ASSIGN_OR_RETURN(std::string python, find_python("python3"));
//   ASSIGN_OR_RETURN(std::string script, find_harness_script("", "filter_task.py"));
//   SandboxSpec spec = harness_sandbox_spec({.python = python, .job_dir = dir, ...},
//                                           {script, "--request", req, "--result", res});
//   ASSIGN_OR_RETURN(SandboxResult r, run_sandboxed(spec));
//
// Threading: free functions without shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sandbox.h"

namespace cuda_agent {

/// An absolute path for `program`: itself when it has a slash, else the first match on PATH; a
/// directory never matches. Errors: bench.spawn (unavailable) naming `what` and the program.
Expected<std::string> find_program(const std::string& program, const std::string& what);

/// find_program for the interpreter of the node's PyTorch ("python interpreter" in errors).
Expected<std::string> find_python(const std::string& program);

/// The canonical path of `script` in the harness directory: `configured` when set, else
/// $CUDA_AGENT_HARNESS_DIR, else <executable dir>/../share/cuda-agent/harness, else the source
/// tree's gpu_bench/harness. Errors: bench.spawn naming the script.
Expected<std::string> find_harness_script(const std::string& configured, const std::string& script);

/// CUDA_VISIBLE_DEVICES for a child that must see exactly GPU `device` (as this process numbers
/// them): the GPU's UUID where the driver gives one, else the index.
std::string visible_device_for(int device);

/// The uid/gid a harness child on `device` runs as: run_as_base + device when this process is
/// root and run_as_base >= 0 and CUDA_AGENT_BENCH_KEEP_UID is not 1; else none (the caller's).
std::optional<RunAs> harness_run_as(std::int64_t run_as_base, int device);

/// Hands `job_dir` and `job_dir`/tmp to `who` (chown) and closes `job_dir` to others (0700), so
/// the child can write there and no other uid can read it. Errors: kIo `error_code` naming the
/// path.
Status hand_job_dir(const std::string& job_dir, const RunAs& who, const std::string& error_code);

struct HarnessSandbox {
  std::string python;          ///< absolute path (find_python)
  std::string job_dir;         ///< working directory; HOME; TMPDIR is job_dir/tmp
  std::string visible_device;  ///< visible_device_for(device)
  std::optional<RunAs> run_as;
  bool isolate_network = true;
  std::int64_t wall_ms = 600'000;
};

/// `python -I -B <args...>` confined as the bench harness is: the environment below and nothing
/// else (PATH, HOME, USER and LOGNAME (the sandbox uid has no passwd entry), TMPDIR,
/// PYTHONUNBUFFERED, CUDA_VISIBLE_DEVICES, torch's inductor and triton caches under TMPDIR, one
/// inductor compile thread, plus LD_LIBRARY_PATH, CUDA_HOME and the NVLink-multicast switches from
/// this process), the wall limit, a CPU-time backstop of 4 x wall + 120 s, no address-space limit
/// (CUDA reserves far more than it uses), 2 GiB files, 4 MiB of output, 4096 open files and
/// processes.
SandboxSpec harness_sandbox_spec(const HarnessSandbox& box, const std::vector<std::string>& args);

}  // namespace cuda_agent
