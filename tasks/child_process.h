// A helper child process that speaks a line protocol: it gets its whole input on stdin and
// answers with one line on stdout per request. Used to run the static task validator
// (tasks/python_validator.h) in `python3 -I`, away from our address space, with resource limits
// and deadlines.
//
//   ChildRun run = run_line_child({.argv = {"python3", "-I", "-c", script}}, requests,
//                                 [&](std::string_view line) { answers.emplace_back(line); });
//   if (run.timed_out) ...  // the answers before the stall were delivered; the rest were not
//
// Every wait has a deadline: the first line must come within `first_line_timeout_ms` of the
// start, each further line within `next_line_timeout_ms` of the previous one, and the child must
// exit within `next_line_timeout_ms` of closing its stdout. A child past a deadline is killed
// (SIGKILL, to its whole process group) and reaped. SIGPIPE is blocked on the calling thread
// while writing, so a child that dies early cannot kill the caller.
//
// Threading: run_line_child may be called from several threads at once; each call owns its
// child. `on_line` runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// Resource limits applied in the child (setrlimit) before it executes the program.
struct ChildLimits {
  /// RLIMIT_AS: virtual memory. Default: 2 GiB (parsing a 1 MiB Python file needs ~100 MiB).
  std::int64_t address_space_bytes = std::int64_t{2} << 30;
  /// RLIMIT_CPU: CPU seconds for the whole child; the kernel kills it past this.
  std::int64_t cpu_seconds = 300;
  /// RLIMIT_FSIZE: the largest file the child may write. Default 0: it writes no files.
  std::int64_t file_size_bytes = 0;
  /// RLIMIT_NOFILE: open file descriptors.
  std::int64_t open_files = 64;
};

struct ChildSpec {
  /// argv[0] is looked up on PATH.
  std::vector<std::string> argv;
  ChildLimits limits;
  /// Deadline for the first stdout line, interpreter start-up included.
  std::int64_t first_line_timeout_ms = 20'000;
  /// Deadline for each further line, and for the exit after stdout closes.
  std::int64_t next_line_timeout_ms = 10'000;
  /// Lines longer than this are cut (and still delivered) so a runaway child cannot fill memory.
  std::size_t max_line_bytes = std::size_t{16} << 20;
};

/// How a child ended. `lines` answers were delivered whatever happened.
struct ChildRun {
  std::uint64_t lines = 0;
  bool timed_out = false;   ///< killed at a deadline
  int exit_code = -1;       ///< when it exited normally
  int signal = 0;           ///< when a signal ended it (SIGKILL after a timeout, SIGXCPU, ...)
  std::string stderr_tail;  ///< the last 4 KiB of its stderr
  /// "exited with 0", "killed by signal 9 (timed out after 10000 ms waiting for line 3)", ...
  std::string describe() const;
  std::int64_t waited_ms = 0;  ///< the deadline that passed, when timed_out
};

/// Starts `spec.argv`, writes `input` to its stdin (then closes it), calls `on_line` for each
/// line of its stdout (without the '\n'), and reaps it. Errors only when the child could not be
/// started (no such program, fork or pipe failure): code task.child_start, naming the program.
Expected<ChildRun> run_line_child(const ChildSpec& spec, std::string_view input,
                                  const std::function<void(std::string_view line)>& on_line);

}  // namespace cuda_agent
