// `cuda-agent serve policy-engine ...`: the policy engine service (model/engine_server.h). The
// server links libtorch, so it is its own binary, cuda-agent-engine (model/engine_main.cpp),
// built beside this one; the CLI stays torch-free and execs it with every argument after the
// command name. Found next to /proc/self/exe, else on PATH.
//
// Registered from add_rollout_commands (or wherever `serve` is made) with
//   add_engine_command(*app.get_subcommand("serve"), result);
// and declared in cli/command.h as
//   void add_engine_command(CLI::App& serve, CommandResult& result);  // serve policy-engine
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/command.h"

namespace cuda_agent::cli {
namespace {

// Returns only on failure.
int exec_engine_binary(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::string exe = "cuda-agent-engine";
  if (!ec && fs::exists(self.parent_path() / exe, ec)) exe = (self.parent_path() / exe).string();
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(exe.c_str(), argv.data());
  return report(make_error(ErrorCategory::kNotFound, "cli.no_engine_binary",
                           exe + ": " + std::strerror(errno) +
                               " (build the cuda-agent-engine target: the torch-linked policy "
                               "engine server)"));
}

}  // namespace

void add_engine_command(CLI::App& serve, CommandResult& result) {
  auto* cmd = serve.add_subcommand(
      "policy-engine",
      "The policy engine: an OpenAI-compatible HTTP server over one batched GenerationEngine "
      "(/v1/completions, /v1/chat/completions, /health, /v1/weights/load). Runs "
      "`cuda-agent-engine --model DIR [--port P] [--host H] [--max-batch N] [--max-seq-len N] "
      "[--device cpu|cuda:N] [--dtype D] [--version N]`; see `cuda-agent-engine --help`");
  cmd->prefix_command();  // every argument after the name goes to cuda-agent-engine
  cmd->set_help_flag();
  cmd->callback([cmd, &result] { result.exit_code = exec_engine_binary(cmd->remaining()); });
}

}  // namespace cuda_agent::cli
