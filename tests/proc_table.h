// Test-only: the machine's processes as /proc tells them, to find what a process left behind
// (compile workers' compilers after a SIGKILL: compile_worker_test, compile_farm_chaos_test).
//
// Threading: pure functions of /proc at the moment of the call.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cuda_agent::testing {

/// One process as /proc/<pid>/stat tells it.
struct Proc {
  pid_t pid = 0, ppid = 0, pgid = 0;
  char state = 0;
  std::string comm;
  unsigned long long start = 0;  // start time in clock ticks since boot: tells a reused pid apart
  bool live() const { return state != 'Z' && state != 'X'; }
};

/// Every process now (those that vanish while /proc is read are left out).
inline std::vector<Proc> processes() {
  std::vector<Proc> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    Proc p;
    p.pid = std::stoi(name);
    p.comm = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 2));
    std::vector<std::string> fields((std::istream_iterator<std::string>(rest)),
                                    std::istream_iterator<std::string>());
    if (fields.size() < 20) continue;
    p.state = fields[0][0];
    p.ppid = std::stoi(fields[1]);
    p.pgid = std::stoi(fields[2]);
    p.start = std::stoull(fields[19]);
    out.push_back(std::move(p));
  }
  return out;
}

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
