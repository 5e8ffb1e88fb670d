// The compile farm's build (DESIGN.md sections 4 and 5): one solution in, one checked shared
// object out. A compile worker process holds one CompileService and calls compile() from each of
// its pool slots; `cuda-agent compile` and tests may call it directly.
//
//   ASSIGN_OR_RETURN(auto service, CompileService::create(CompileServiceOptions{}));
//   Expected<CompileResult> r = service->compile(request);
//
// A job: validate the request (arch, policy, flags) -> static source checks (source_checks.h) ->
// launcher prototypes (prototypes.h) -> the whole-job cache (same sources, flags and toolchain:
// the stored result, cache_hit set) -> each .cu/.cpp compiled on its own, in parallel, with
// `-Xptxas -v`, through the object cache (content of the file and of every header of the
// solution, flags, toolchain) -> link with `-cudart shared` (cuBLAS/cuDNN only when included and
// the policy allows) -> the symbol check of the shared object (symbol_policy.h) -> the result.
//
// Every compiler, linker and nm process runs through core/sandbox.h: its own job directory (mode
// 0700, owned by a per-job unprivileged uid when the service runs as root), CPU, memory, file-size
// and output limits, the job's wall-clock budget, no network where the machine allows it. A
// solution that breaks a limit gets a typed error; the service keeps serving.
//
// Errors (all with the file and line where one is known): compile.request (bad arch, policy or
// flag), compile.policy (static or symbol findings), compile.prototype / compile.no_launcher,
// compile.failed (compiler errors, trimmed log in the message), compile.timeout,
// compile.cpu_limit, compile.memory_limit, compile.output_limit, compile.file_limit (the
// solution's fault: category invalid_input), compile.deadline (the request's own deadline passed:
// category timeout), compile.toolchain (nvcc missing or broken: category unavailable).
//
// Threading: compile() may be called from many threads at once; compiler processes across all
// calls are bounded by options.parallel_compilers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compile_farm/compile_options.h"
#include "core/error.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

struct CompileServiceOptions {
  /// Manifest [compile]: default arch, limits, cache size.
  CompileOptions compile;
  /// Where job directories are made. Default (empty): $TMPDIR/cuda-agent-compile-<pid>.
  std::string work_root;
  /// The object and artifact cache. Default (empty): <work_root>/cache (gone with the process);
  /// `cuda-agent serve compile-worker` and EmbeddedCompileFarm use default_compile_cache_dir().
  std::string cache_dir;
  /// The CUDA toolkit. Default: $CUDA_HOME, else /usr/local/cuda.
  std::string cuda_home;
  /// Extra -I and -L directories (e.g. where cuDNN lives on a node whose toolkit lacks it).
  std::vector<std::string> include_dirs;
  std::vector<std::string> library_dirs;
  /// Compiler processes at once across all jobs. 0: one per CPU core.
  std::int64_t parallel_compilers = 0;
  /// When running as root, jobs run as uid/gid run_as_base + (job number mod 4096). -1: never
  /// switch users. Default: 61000.
  std::int64_t run_as_base = 61000;
  /// Put compiler processes in an empty network namespace where allowed. Default: true.
  bool isolate_network = true;
  /// Use the caches. Default: true (benchmarks of cold builds turn them off).
  bool use_cache = true;
};

/// The per-user cache that outlives a process, so that a solution built once is not built again
/// by the next `cuda-agent compile` or eval: $HOME/.cache/cuda-agent/compile (/tmp/.cache/...
/// without HOME). Safe to share between processes: entries are content-addressed and written
/// atomically.
std::string default_compile_cache_dir();

/// The static-check and build limits in one place (what a job may do).
struct CompileJobStats {
  std::uint64_t jobs = 0;
  std::uint64_t job_cache_hits = 0;
  std::uint64_t object_cache_hits = 0;
  std::uint64_t objects_compiled = 0;
};

class CompileService {
 public:
  /// Finds nvcc and the binary tools, probes the toolchain version, creates the directories.
  static Expected<std::unique_ptr<CompileService>> create(CompileServiceOptions options);
  ~CompileService();
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  /// Checks and builds one solution by the request's deadline (0: the job wall limit only).
  Expected<CompileResult> compile(const CompileRequest& request);

  /// "nvcc: Cuda compilation tools, release 13.0, V13.0.88\nhost: g++ (Debian 12.2.0-14) 12.2.0"
  const std::string& toolchain() const;
  /// How compiler processes are confined on this machine, in words.
  const std::string& sandbox_description() const;
  CompileJobStats stats() const;

  class Impl;

 private:
  explicit CompileService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
