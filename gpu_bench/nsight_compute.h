// Nsight Compute in profile mode: the bench worker runs the harness a second time under `ncu`,
// which profiles only the candidate's forward calls (the harness brackets them with
// cudaProfilerStart/Stop; ncu runs with --profile-from-start off), and turns ncu's raw CSV into a
// per-kernel table for the agent: time, registers, shared memory, achieved occupancy, DRAM and SM
// throughput as a percentage of peak. Where ncu is missing or may not read the GPU's counters,
// the PyTorch profiler's kernel times stay the report and a line says why.
//
// Threading: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// The ncu to use: `configured` "off" or "" gives "" (disabled); "auto" the first `ncu` on PATH,
/// else /usr/local/cuda/bin/ncu, else "" when neither exists; anything else goes through
/// find_program (a path, or a name on PATH) and gives "" when it is not found.
std::string find_nsight_compute(const std::string& configured);

/// The metrics asked for, in the table's order after the kernel name.
const std::vector<std::string>& nsight_compute_metrics();

/// ncu and its arguments up to the profiled program: raw CSV of nsight_compute_metrics() in base
/// units to `log_path`, only between cudaProfilerStart and cudaProfilerStop.
std::vector<std::string> nsight_compute_argv(const std::string& ncu, const std::string& log_path);

/// One kernel, aggregated over its launches in the profiled region.
struct NcuKernel {
  std::string name;
  std::int64_t launches = 0;
  double total_us = 0;       ///< sum of gpu__time_duration
  double registers = 0;      ///< per thread (the last launch's)
  double shared_bytes = 0;   ///< static + dynamic per block (the last launch's)
  double occupancy_pct = 0;  ///< achieved occupancy, launch-weighted mean
  double dram_pct = 0;       ///< DRAM throughput, % of peak, mean
  double sm_pct = 0;         ///< SM throughput, % of peak, mean
};

/// Parses ncu's `--csv --page raw` output (its log file: "==PROF==" lines, then a header row, a
/// units row and one row per profiled launch). Kernels come back by total time, largest first.
/// Errors: bench.ncu (internal) when there is no header with "Kernel Name" or a metric column is
/// missing; an output with a header and no launches gives an empty list.
Expected<std::vector<NcuKernel>> parse_nsight_compute_csv(std::string_view text);

/// The table for the agent: a title line, a header and at most `max_lines` - 2 kernels.
std::string render_nsight_compute(const std::vector<NcuKernel>& kernels, std::int64_t calls,
                                  std::size_t max_lines);

/// Why ncu produced nothing, from its log: the permission error (ERR_NVGPUCTRPERM) explained, or
/// the first "==ERROR==" line, or "" when the log names no error.
std::string nsight_compute_failure(std::string_view log);

}  // namespace cuda_agent
