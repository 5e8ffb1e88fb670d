// One process as /proc/<pid>/stat tells it, read without throwing: a process may exit between
// the open and the read, and then read(2) fails with ESRCH (an ifstream's istreambuf_iterator
// throws "basic_filebuf::underflow error reading the file: No such process" there). Used by
// `cuda-agent sim` (CPU seconds of its processes) and the tests that look for what a killed
// process left behind (tests/proc_table.h, core/sandbox_test.cpp, tests/node_agent_fixture.h).
//
//   if (auto p = read_proc_stat(pid); p && p->live()) ...
//
// Threading: pure functions of /proc at the moment of the call.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuda_agent {

struct ProcStat {
  pid_t pid = 0, ppid = 0, pgid = 0;
  char state = 0;                           // R, S, D, Z (zombie), X (dead), ...
  std::string comm;                         // may hold spaces and parentheses
  unsigned long long utime = 0, stime = 0;  // CPU time in clock ticks (user, system)
  unsigned long long start = 0;  // start time in clock ticks since boot: tells a reused pid apart
  bool live() const { return state != 'Z' && state != 'X'; }
  /// utime + stime in seconds.
  double cpu_seconds() const;
};

/// The text of /proc/<pid>/stat parsed; nullopt when it is not that format.
std::optional<ProcStat> parse_proc_stat(pid_t pid, std::string_view text);

/// /proc/<pid>/stat now; nullopt when the process does not exist (or exits while it is read).
std::optional<ProcStat> read_proc_stat(pid_t pid);

/// Every process now; those that vanish while /proc is read are left out.
std::vector<ProcStat> all_processes();

}  // namespace cuda_agent
