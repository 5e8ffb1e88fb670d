// Finding the interpreter and the harness scripts, and the sandbox of a harness child (see
// harness_sandbox.h).
#include "gpu_bench/harness_sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "gpu_bench/device_probe.h"

#ifndef CUDA_AGENT_SOURCE_HARNESS_DIR
#define CUDA_AGENT_SOURCE_HARNESS_DIR ""
#endif

namespace cuda_agent {
namespace fs = std::filesystem;

Expected<std::string> find_program(const std::string& program, const std::string& what) {
  auto runnable = [](const fs::path& p) {
    return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p);
  };
  if (program.find('/') != std::string::npos) {
    if (runnable(program)) return fs::absolute(program).string();
    return make_error(ErrorCategory::kUnavailable, "bench.spawn",
                      what + " '" + program + "' is not executable");
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / program;
    if (runnable(p)) return p.string();
  }
  return make_error(ErrorCategory::kUnavailable, "bench.spawn",
                    what + " '" + program + "' not found on PATH");
}

Expected<std::string> find_python(const std::string& program) {
  return find_program(program, "python interpreter");
}

Expected<std::string> find_harness_script(const std::string& configured,
                                          const std::string& script) {
  std::vector<std::string> candidates;
  if (!configured.empty()) {
    candidates.push_back(configured);
  } else {
    if (const char* env = std::getenv("CUDA_AGENT_HARNESS_DIR"); env && *env)
      candidates.emplace_back(env);
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back((exe.parent_path() / "../share/cuda-agent/harness").string());
    candidates.emplace_back(CUDA_AGENT_SOURCE_HARNESS_DIR);
  }
  for (const auto& dir : candidates) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / script;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::canonical(p, ec).string();
  }
  return make_error(ErrorCategory::kUnavailable, "bench.spawn",
                    script + " not found (set [bench] harness_dir or CUDA_AGENT_HARNESS_DIR)");
}

std::string visible_device_for(int device) {
  std::string visible = std::to_string(device);
  DeviceList list = list_devices();
  for (const auto& d : list.devices)
    if (d.index == device && !d.uuid.empty()) visible = d.uuid;
  return visible;
}

std::optional<RunAs> harness_run_as(std::int64_t run_as_base, int device) {
  if (run_as_base < 0 || ::geteuid() != 0) return std::nullopt;
  if (const char* v = std::getenv("CUDA_AGENT_BENCH_KEEP_UID"); v && *v == '1') return std::nullopt;
  auto id = static_cast<uid_t>(run_as_base + device);
  return RunAs{id, id};
}

Status hand_job_dir(const std::string& job_dir, const RunAs& who, const std::string& error_code) {
  const fs::path dir(job_dir);
  for (const fs::path& p : {dir, dir / "tmp"}) {
    if (::chown(p.c_str(), who.uid, who.gid) != 0)
      return make_error(ErrorCategory::kIo, error_code,
                        "cannot hand '" + p.string() + "' to uid " + std::to_string(who.uid));
  }
  ::chmod(dir.c_str(), 0700);
  return Status::ok();
}

SandboxSpec harness_sandbox_spec(const HarnessSandbox& box, const std::vector<std::string>& args) {
  const fs::path dir(box.job_dir);
  SandboxSpec spec;
  spec.argv = {box.python, "-I", "-B"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.work_dir = dir.string();
  spec.env = {
      "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir.string(),
      // The sandbox uid has no passwd entry: getpass.getuser() (torch.compile's cache
      // paths) reads these first instead of failing in getpwuid.
      "USER=cuda-agent-bench", "LOGNAME=cuda-agent-bench", "TMPDIR=" + (dir / "tmp").string(),
      "PYTHONUNBUFFERED=1", "CUDA_VISIBLE_DEVICES=" + box.visible_device,
      "TORCHINDUCTOR_CACHE_DIR=" + (dir / "tmp" / "inductor").string(),
      "TRITON_CACHE_DIR=" + (dir / "tmp" / "triton").string(), "TORCHINDUCTOR_COMPILE_THREADS=1"};
  // Kept from this process: library paths, and the NVLink-multicast switches a shared host needs.
  for (const char* name : {"LD_LIBRARY_PATH", "CUDA_HOME", "NCCL_NVLS_ENABLE",
                           "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"}) {
    if (const char* v = std::getenv(name)) spec.env.push_back(std::string(name) + "=" + v);
  }
  spec.limits.wall_ms = box.wall_ms;
  // RLIMIT_CPU counts every thread of the process: a synchronising thread spins, torch.compile
  // and the CPU side of the contenders add more. The wall deadline is the real bound; this is a
  // backstop against a CPU-bound runaway.
  spec.limits.cpu_seconds = 4 * box.wall_ms / 1000 + 120;
  spec.limits.memory_bytes = 0;  // CUDA reserves far more address space than it uses
  spec.limits.file_bytes = 2LL << 30;
  spec.limits.output_bytes = 4LL << 20;
  spec.limits.open_files = 4096;
  spec.limits.processes = 4096;  // counts threads of the uid; torch starts many
  spec.run_as = box.run_as;
  spec.isolate_network = box.isolate_network;
  return spec;
}

}  // namespace cuda_agent
