// Test-only: the processes below one (core/proc_stat.h's all_processes), to find what a process
// left behind (compile workers' compilers after a SIGKILL: compile_worker_test,
// compile_farm_chaos_test).
//
// Threading: pure functions of /proc at the moment of the call (core/proc_stat.h reads it).
#pragma once

#include <sys/types.h>

#include <set>
#include <vector>

#include "core/proc_stat.h"

namespace cuda_agent::testing {

/// Every process below `root` (children, their children, ...).
inline std::vector<ProcStat> descendants(pid_t root) {
  const std::vector<ProcStat> all = all_processes();
  std::set<pid_t> tree = {root};
  std::vector<ProcStat> out;
  for (bool grew = true; grew;) {
    grew = false;
    for (const ProcStat& p : all)
      if (tree.count(p.ppid) && !tree.count(p.pid)) {
        tree.insert(p.pid);
        out.push_back(p);
        grew = true;
      }
  }
  return out;
}

}  // namespace cuda_agent::testing
