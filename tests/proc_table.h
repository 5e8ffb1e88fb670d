// Test-only: the machine's processes as /proc tells them, to find what a process left behind
// (compile workers' compilers after a SIGKILL: compile_worker_test, compile_farm_chaos_test).
//
// Threading: pure functions of /proc at the moment of the call (core/proc_stat.h reads it).
#pragma once

#include <sys/types.h>

#include <set>
#include <vector>

#include "core/proc_stat.h"

namespace cuda_agent::testing {

/// One process as /proc/<pid>/stat tells it.
using Proc = ProcStat;

/// Every process now (those that vanish while /proc is read are left out).
inline std::vector<Proc> processes() { return all_processes(); }

/// Every process below `root` (children, their children, ...).
inline std::vector<Proc> descendants(pid_t root) {
  const std::vector<Proc> all = processes();
  std::set<pid_t> tree = {root};
  std::vector<Proc> out;
  for (bool grew = true; grew;) {
    grew = false;
    for (const Proc& p : all)
      if (tree.count(p.ppid) && !tree.count(p.pid)) {
        tree.insert(p.pid);
        out.push_back(p);
        grew = true;
      }
  }
  return out;
}

}  // namespace cuda_agent::testing
