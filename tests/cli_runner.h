// Runs the cuda-agent executable as a user does, in a child process, for end-to-end tests.
// The test target defines CUDA_AGENT_EXE (the built binary's path).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace cuda_agent::testing {

struct CmdResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

/// A shell command line (stdout and stderr together unless it redirects them); its exit code and
/// output.
inline CmdResult run_shell(const std::string& command) {
  std::FILE* p = ::popen(command.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// `cuda-agent ARGS` through the shell; returns its exit code and output.
inline CmdResult run_cli(const std::string& args) {
  return run_shell(std::string(CUDA_AGENT_EXE) + " " + args + " 2>&1");
}

}  // namespace cuda_agent::testing
