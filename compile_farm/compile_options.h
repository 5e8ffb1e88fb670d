// Options of the compile farm (manifest section [compile]). See core/option_fields.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct CompileOptions {
  static constexpr std::string_view kSection = "compile";
  static constexpr std::string_view kDoc =
      "The compile farm: CPU workers that check and build agent solutions with nvcc.";

  std::string target_arch = "sm_90";
  std::string library_policy = "default";
  std::int64_t jobs_per_worker = 0;
  std::int64_t job_wall_ms = 120'000;
  std::int64_t job_cpu_seconds = 120;
  std::int64_t job_memory_bytes = 4LL << 30;
  std::int64_t job_output_bytes = 64LL << 20;
  std::int64_t max_queued_jobs = 4096;
  std::int64_t max_attempts = 3;
  std::int64_t cache_bytes = 8LL << 30;

  template <class V>
  void visit(V& v) {
    v({.key = "target_arch",
       .doc = "GPU architecture solutions are built for (nvcc -arch). Use sm_90a to allow "
              "Hopper-only instructions (wgmma, TMA); such code runs on Hopper only.",
       .choices = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a"}},
      target_arch);
    v({.key = "library_policy",
       .doc = "Libraries a solution may call: 'default' allows cuBLAS (GEMM) and cuDNN "
              "(convolution), as CUDA Agent did; 'pure' allows neither.",
       .choices = {"default", "pure"}},
      library_policy);
    v({.key = "jobs_per_worker",
       .unit = "jobs",
       .doc = "Compilations one worker process runs at once; 0 means one per CPU core.",
       .min = 0},
      jobs_per_worker);
    v({.key = "job_wall_ms",
       .unit = "ms",
       .doc = "Wall-clock limit of one compile job (all files and the link); the job is killed "
              "and reported as a timeout past it.",
       .min = 1000},
      job_wall_ms);
    v({.key = "job_cpu_seconds",
       .unit = "s",
       .doc = "CPU-time limit (RLIMIT_CPU) of each compiler process.",
       .min = 1},
      job_cpu_seconds);
    v({.key = "job_memory_bytes",
       .unit = "bytes",
       .doc = "Address-space limit of each compiler process; stops runaway templates and "
              "multi-gigabyte static arrays.",
       .min = 256LL << 20},
      job_memory_bytes);
    v({.key = "job_output_bytes",
       .unit = "bytes",
       .doc = "Largest file a compiler process may write (RLIMIT_FSIZE) and largest log kept.",
       .min = 1 << 20},
      job_output_bytes);
    v({.key = "max_queued_jobs",
       .unit = "jobs",
       .doc = "Jobs the farm broker queues before it answers 'busy' instead of growing.",
       .min = 1},
      max_queued_jobs);
    v({.key = "max_attempts",
       .unit = "attempts",
       .doc = "Times a job is handed to a worker before a lost worker's job fails with a typed "
              "error.",
       .min = 1},
      max_attempts);
    v({.key = "cache_bytes",
       .unit = "bytes",
       .doc = "Size of the content-addressed object cache of each worker (least recently used "
              "entries are evicted).",
       .min = 0},
      cache_bytes);
  }
};

}  // namespace cuda_agent
