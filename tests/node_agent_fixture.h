// Test-only: what the node agent and ssh backend tests share. A shim that plays every role of a
// launch plan (node agents run it with --child-exe instead of cuda-agent), its journal, a
// temporary directory, a child process with a deadline, and node-status.json read back.
//
// The role shim journals "start NAME PID NODE FAKE_HOST NANOS" (NAME and NODE from the agent's
// CUDA_AGENT_PROCESS / CUDA_AGENT_NODE), then behaves as files in $ROLE_SHIM_DIR say for its
// process: crash-NAME exits 1, fatal-NAME exits 3, done-NAME exits 0; otherwise it becomes
// `sleep 600` in the same process (no child that could outlive it), which SIGTERM ends with 143.
// The coordinator creates $SHIM_STORE/CURRENT (the run store the agent waits for) when SHIM_STORE
// is set.
//
// Threading: test-thread only.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/proc_stat.h"

namespace cuda_agent::testing {

namespace fs = std::filesystem;

inline constexpr const char* kRoleShim = R"SH(#!/bin/sh
d=$ROLE_SHIM_DIR
name=$CUDA_AGENT_PROCESS
echo "start $name $$ $CUDA_AGENT_NODE ${FAKE_HOST:--} $(date +%s%N)" >> "$d/journal"
[ -e "$d/crash-$name" ] && exit 1
[ -e "$d/fatal-$name" ] && exit 3
[ -e "$d/done-$name" ] && exit 0
if [ "$1 $2" = "serve coordinator" ] && [ -n "$SHIM_STORE" ]; then
  mkdir -p "$SHIM_STORE" && : > "$SHIM_STORE/CURRENT"
fi
exec sleep 600
)SH";

struct TempTree {
  fs::path path;
  explicit TempTree(const std::string& tag) {
    path = fs::temp_directory_path() /
           (tag + "_" + std::to_string(::getpid()) + "_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline void write_file(const fs::path& p, const std::string& text, bool executable = false) {
  fs::create_directories(p.parent_path());
  {
    std::ofstream out(p, std::ios::trunc);
    out << text;
  }
  if (executable) fs::permissions(p, fs::perms::owner_all | fs::perms::group_read);
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// True when `pred()` held before `timeout` passed (checked every 20 ms).
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

/// One line of the role shim's journal.
struct JournalEntry {
  std::string event;  // start
  std::string name;
  pid_t pid = 0;
  std::string node;       // start only
  std::string fake_host;  // start only ("-" outside the ssh test)
  double seconds = 0;     // start only: wall clock
};

inline std::vector<JournalEntry> read_journal(const fs::path& dir) {
  std::vector<JournalEntry> out;
  std::istringstream in(read_file(dir / "journal"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    JournalEntry e;
    words >> e.event >> e.name >> e.pid;
    if (e.event == "start") {
      long long nanos = 0;
      words >> e.node >> e.fake_host >> nanos;
      e.seconds = static_cast<double>(nanos) / 1e9;
    }
    out.push_back(e);
  }
  return out;
}

/// True while `pid` exists and is not a zombie (an orphan's zombie may wait long for its reaper).
inline bool alive(pid_t pid) {
  const auto p = read_proc_stat(pid);
  return p && p->live();
}

/// node-status.json, or null while it does not exist or is being replaced.
inline nlohmann::json read_status(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

/// The status entry of process `name`, or null.
inline nlohmann::json process_status(const nlohmann::json& status, const std::string& name) {
  if (status.is_null()) return nullptr;
  for (const auto& p : status["processes"])
    if (p["name"] == name) return p;
  return nullptr;
}

/// `program args...` as a child with stdout and stderr in `output`; it dies with the test
/// (PR_SET_PDEATHSIG).
inline pid_t spawn(const std::vector<std::string>& argv, const fs::path& output) {
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string out = output.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    FILE* f = std::fopen(out.c_str(), "w");
    if (f) {
      ::dup2(fileno(f), 1);
      ::dup2(fileno(f), 2);
    }
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  return pid;
}

/// The exit code of child `pid` if it exits within `timeout` (128 + signal when killed), else -1.
inline int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  int status = 0;
  int code = -1;
  wait_until(
      [&] {
        if (::waitpid(pid, &status, WNOHANG) != pid) return false;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      timeout);
  return code;
}

}  // namespace cuda_agent::testing
