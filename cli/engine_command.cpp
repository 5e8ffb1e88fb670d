// `cuda-agent serve policy-engine ...`: the policy engine service (model/engine_server.h). The
// server links libtorch, so it is its own binary, cuda-agent-engine (model/engine_main.cpp),
// built beside this one; the CLI stays torch-free and execs it with every argument after the
// command name. Found next to /proc/self/exe, else on PATH.
#include <string>
#include <vector>

#include "cli/command.h"

namespace cuda_agent::cli {

void add_engine_command(CLI::App& serve, CommandResult& result) {
  auto* cmd = serve.add_subcommand(
      "policy-engine",
      "The policy engine: an OpenAI-compatible HTTP server over one batched GenerationEngine "
      "(/v1/completions, /v1/chat/completions, /health, /v1/weights/load). Runs "
      "`cuda-agent-engine --model DIR [--port P] [--host H] [--max-batch N] [--max-seq-len N] "
      "[--device cpu|cuda:N] [--dtype D] [--version N]`; see `cuda-agent-engine --help`");
  cmd->prefix_command();  // every argument after the name goes to cuda-agent-engine
  cmd->set_help_flag();
  cmd->callback([cmd, &result] {
    result.exit_code =
        exec_torch_binary("cuda-agent-engine", cmd->remaining(), "policy engine server");
  });
}

}  // namespace cuda_agent::cli
