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

/// `cuda-agent ARGS` through the shell; returns its exit code and output.
inline CmdResult run_cli(const std::string& args) {
  std::string cmd = std::string(CUDA_AGENT_EXE) + " " + args + " 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace cuda_agent::testing
