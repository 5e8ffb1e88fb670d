// The steps of one compile job, each a sandboxed process (core/sandbox.h): probing the toolchain,
// laying out the job directory, compiling one file, linking, and reading the shared object's
// dynamic symbols. compile_service.cpp strings them together; they are separate so each can be
// tested and timed on its own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compile_farm/symbol_policy.h"
#include "core/error.h"
#include "core/sandbox.h"
#include "core/uid_lease.h"
#include "messages/compile_codec.h"

namespace cuda_agent::compile_farm {

using Clock = std::chrono::steady_clock;

/// The compilers found on this machine.
struct Toolchain {
  std::string cuda_home;    ///< e.g. /usr/local/cuda
  std::string nvcc;         ///< <cuda_home>/bin/nvcc
  std::string nm, readelf;  ///< binutils, absolute paths
  std::string path_env;     ///< PATH given to compiler processes
  std::string description;  ///< "nvcc: ... release 13.0, V13.0.88\nhost: g++ ... 12.2.0"
  std::string id;           ///< content hash of the description (part of every cache key)
};

/// Finds nvcc under cuda_home and nm/readelf on PATH; runs `nvcc --version` and `c++ --version`.
/// compile.toolchain (category unavailable) when something is missing or broken.
Expected<Toolchain> probe_toolchain(const std::string& cuda_home, const std::string& scratch_dir);

/// One job's directory and confinement.
struct JobContext {
  std::string dir;  ///< the job directory; sources under kernels/, objects under obj/
  const Toolchain* toolchain = nullptr;
  Clock::time_point deadline;  ///< the job's own budget or the request's deadline, earlier first
  SandboxLimits limits;        ///< per process; wall_ms is cut to the deadline
  std::optional<RunAs> run_as;
  /// Holds run_as's uid on this host while the job lives (no job of another worker gets it).
  std::shared_ptr<const UidLease> uid_lease;
  bool isolate_network = true;
  std::vector<std::string> include_dirs, library_dirs;
};

/// Creates the job directory (0700, owned by the job's uid) with the solution's kernels/ files,
/// obj/ and tmp/.
Status prepare_job_dir(const JobContext& job, const std::vector<SourceFile>& files);

/// Makes an object nvcc wrote independent of the nvcc process that wrote it: nvcc names its
/// intermediate files tmpxft_<pid, 8 hex digits>_<counter>-..., and the host compiler writes that
/// name into the object (the file symbol, the names of static-initialiser functions). Every
/// "tmpxft_XXXXXXXX_" with eight lower-case hex digits becomes "tmpxft_00000000_", in place (the
/// length, so every ELF offset, is unchanged). Returns how many were replaced. A solution's own
/// string literal of exactly that shape would be rewritten as well; nothing else is touched.
std::size_t make_reproducible(std::string& object);

/// What a build depends on besides the request: the toolchain (Toolchain::id: nvcc and host
/// compiler versions, the build recipe) and the service's extra -I and -L directories. Part of
/// every cache key.
std::string build_identity(const Toolchain& toolchain, const std::vector<std::string>& include_dirs,
                           const std::vector<std::string>& library_dirs);

/// The whole-job cache key: hashes the normalised inputs, i.e. every file the compiler sees
/// (path and bytes, in path order, so the order of request.files does not matter; model_new.py,
/// the bench's input, left out), the target arch, the library policy, the extra flags in their
/// order, and build_identity. Everything that changes the artifact is in it: a request with the
/// same key is answered from the cache without starting nvcc.
std::string job_cache_key(const CompileRequest& request, std::string_view build_identity);

/// "obj/<path with / as _>.o" for a source path.
std::string object_path(const std::string& source_path);

struct ObjectBuild {
  std::string object;   ///< the .o bytes
  std::string output;   ///< everything nvcc printed (ptxas report, warnings)
  double seconds = 0;   ///< wall-clock time of the compiler process
  bool cached = false;  ///< restored from the object cache
};

/// nvcc -c of one file with -Xptxas -v (and -ffunction-sections, for link_artifact). Errors:
/// compile.failed (with the trimmed log), compile.timeout / cpu_limit / memory_limit / output_limit
/// / file_limit, compile.deadline.
Expected<ObjectBuild> compile_object(const JobContext& job, const std::string& source_path,
                                     const std::string& arch,
                                     const std::vector<std::string>& extra_flags);

/// Cache form of an ObjectBuild, and back (writing the object into the job directory).
std::string pack_object(const ObjectBuild& build);
Expected<ObjectBuild> restore_object(const JobContext& job, const std::string& source_path,
                                     const std::string& packed);

struct LinkOutput {
  std::string bytes;       ///< the shared object
  std::string output;      ///< what the linker printed
  DynamicSymbols symbols;  ///< its dynamic symbols and NEEDED libraries
};

/// Links the objects into artifact.so with -cudart shared (cuBLAS/cuDNN when a source includes
/// them and the policy allows), exporting only the extern "C" launchers of `files` (a version
/// script) and keeping only the code they and the static initialisers reach (--gc-sections), then
/// reads its dynamic symbols. So nvcc's host stubs of __device__ functions and host helpers with
/// external linkage leave no export or import behind; whatever code can run is still judged by
/// symbol_policy.h.
Expected<LinkOutput> link_artifact(const JobContext& job, const std::vector<std::string>& objects,
                                   const std::string& arch, const std::vector<SourceFile>& files,
                                   LibraryPolicy policy);

}  // namespace cuda_agent::compile_farm
