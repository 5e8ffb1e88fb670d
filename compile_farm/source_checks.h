// Static checks of a solution before anything is compiled (DESIGN.md sections 4 and 5, "static
// policy"): which files may exist, which headers and calls the CUDA and C++ sources may use, and
// which include paths. Every finding names the file, the line and the rule.
//
//   std::vector<Finding> f = check_sources(files, LibraryPolicy::kDefault);
//   if (has_errors(f)) -> the job fails with category policy, listing them.
//
// The rules, by name (`Finding::rule`):
//   file.path          only model_new.py and kernels/<name>.{cu,cpp,cuh,h,hpp} may be submitted
//   file.size          too many files, a file too large, or not valid text
//   include.forbidden  torch/ATen/c10/pybind11/Python, threads, processes, files, dlopen, the CUDA
//                      driver API, NVRTC, system headers (sys/, linux/, asm/ ...)
//   include.library    cuBLAS or cuDNN headers under library policy `pure`
//   include.path       absolute or parent-relative paths, #include of a macro, #include_next
//   call.forbidden     process/file/thread/dlopen/environment calls, stream or graph creation,
//                      device limits, L2 persistence, driver entry points, host callbacks
//   asm.host           inline assembly outside __device__ / __global__ functions
//   launch.stream      (warning) a kernel launch without the launcher's stream
// The built shared object is checked again by symbol (symbol_policy.h): a source trick that
// slips past these rules still has to import the function it calls.
#pragma once

#include <string>
#include <vector>

#include "messages/compile_codec.h"

namespace cuda_agent::compile_farm {

struct Finding {
  std::string file;
  int line = 0;  ///< 1-based; 0 when the finding is about the whole file
  std::string rule;
  std::string message;
  bool error = true;  ///< false: a warning, reported but not fatal

  /// "kernels/a.cu:12: include.forbidden: <thread> starts threads; ..."
  std::string to_string() const;
};

/// Limits on what a solution may submit.
struct SourceLimits {
  std::size_t max_files = 32;
  std::size_t max_file_bytes = 1 << 20;
  std::size_t max_total_bytes = 4 << 20;
};

/// Checks every file of a solution.
std::vector<Finding> check_sources(const std::vector<SourceFile>& files, LibraryPolicy policy,
                                   const SourceLimits& limits = {});

bool has_errors(const std::vector<Finding>& findings);

/// The findings as one message, errors first, at most `max_lines` lines.
std::string format_findings(const std::vector<Finding>& findings, std::size_t max_lines = 40);

/// Whether a file takes part in the build (.cu and .cpp are compiled; headers are included).
bool is_compiled_source(const std::string& path);
bool is_header(const std::string& path);

}  // namespace cuda_agent::compile_farm
