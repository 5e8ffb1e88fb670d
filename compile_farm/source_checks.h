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
//   include.path       absolute or parent-relative paths, #include of a macro, #include_next; the
//                      same for __has_include (an existence oracle otherwise), __has_include_next,
//                      __has_embed and `#pragma GCC dependency` / _Pragma("GCC dependency")
//   call.forbidden     process/file/thread/dlopen/environment calls, stream or graph creation,
//                      device limits, L2 persistence, driver entry points, host callbacks
//   asm.host           inline assembly outside __device__ / __global__ functions, or in a
//                      __host__ __device__ one (its host copy goes to the host assembler, whose
//                      .incbin reads any file); assembler file directives (.incbin, .include)
//   launch.stream      (warning) a kernel launch without the launcher's stream
// The built shared object is checked again by symbol (symbol_policy.h): a source trick that
// slips past these rules still has to import the function it calls.
//
// Reading a solution from disk (read_solution_directory) is here too, so that every reader applies
// one rule: a solution is a tree of regular files inside its directory.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
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

/// DIR/kernels/* and DIR/model_new.py (when present) of a solution directory (DESIGN.md section 4),
/// sorted by path, read without following a link and without opening anything but a regular file:
/// every entry of kernels/ is checked with lstat before it is opened (O_NOFOLLOW | O_NONBLOCK, so a
/// fifo cannot block) and with fstat after (same inode, still a regular file). DIR itself may be a
/// link (the caller named it). Errors, category invalid_input, name the path relative to DIR and
/// what it is, never what a link points to beyond the link's own text:
///   solution.no_kernels          DIR has no kernels/ directory (or DIR is missing)
///   solution.not_regular_file    a symbolic link (and its target text), directory, fifo, socket or
///                                device
///   solution.hard_link           a file with more than one link: it may be a file outside DIR
///   solution.escapes_directory   (read_solution_file) an absolute path, or "." / ".." / empty
///                                components
///   solution.too_large           more than limits.max_files entries, a file past
///                                limits.max_file_bytes or all past limits.max_total_bytes
///   solution.read                (category io) the filesystem failed
Expected<std::vector<SourceFile>> read_solution_directory(const std::string& dir,
                                                          const SourceLimits& limits = {});

/// One file of a solution directory by its relative path ("kernels/a.cu"), opened component by
/// component beneath `dir` with the rules above (no links, no "..", regular, one link, at most
/// `max_bytes`). Errors as read_solution_directory's; a missing file is solution.not_found
/// (category not_found).
Expected<std::string> read_solution_file(const std::string& dir, const std::string& relative_path,
                                         std::size_t max_bytes = 1 << 20);

/// Whether a file takes part in the build (.cu and .cpp are compiled; headers are included).
bool is_compiled_source(const std::string& path);
bool is_header(const std::string& path);

}  // namespace cuda_agent::compile_farm
