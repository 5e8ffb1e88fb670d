// How the cuda-agent CLI is put together: main.cpp builds the CLI11 app and asks each command
// group to add its subcommands. A subcommand's callback does the work and stores the process
// exit code in CommandResult; nothing below main calls exit().
//
// Exit codes: 0 success; 1 the job ran and failed (a GPU health check failed, ...); 2 bad input
// (malformed manifest, unknown flag, missing file); 3 (kFinalExitCode, cli/stop_signals.h) a
// failure a restart cannot fix (a run that cannot go on, a pool worker whose key is refused):
// supervisors give such a process up instead of restarting it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cluster/launch_plan.h"
#include "cluster/manifest.h"
#include "core/error.h"

namespace cuda_agent::cli {

struct CommandResult {
  int exit_code = 0;
};

/// Prints an Error to stderr as "cuda-agent: <message> [<category>/<code>]" and returns the exit
/// code it maps to (2 for invalid input or not found, 1 otherwise).
int report(const Error& error);

/// The manifest at `path`, or with an empty path the embedded single-machine default (the text of
/// examples/single-machine.toml compiled in), whose relative paths resolve against the working
/// directory. Every `serve` role reads its manifest this way.
Expected<Manifest> load_manifest_or_default(const std::string& path);

/// `serve compile-farm` or `serve bench-pool` under `serve` (cli/serve_broker.cpp).
void add_broker_command(CLI::App& serve, BrokerRole role, CommandResult& result);

void add_manifest_commands(CLI::App& app,
                           CommandResult& result);             // manifest check|defaults, launch
void add_keys_commands(CLI::App& app, CommandResult& result);  // keys generate
void add_gpu_commands(CLI::App& app, CommandResult& result);   // gpu list|check
void add_store_commands(CLI::App& app,
                        CommandResult& result);  // runs list|show, trajectories export|show
void add_tasks_commands(CLI::App& app, CommandResult& result);  // tasks import|synth|list|show
/// `tasks filter` (cli/tasks_filter_command.cpp), added by add_tasks_commands.
void add_tasks_filter_command(CLI::App& tasks, CommandResult& result);
void add_model_commands(
    CLI::App& app,
    CommandResult& result);  // model tokenize|init-tokenizer|init|generate|logits

void add_eval_commands(CLI::App& app, CommandResult& result);  // eval

void add_compile_commands(CLI::App& app,
                          CommandResult& result);  // compile, serve compile-*, artifacts get
void add_bench_commands(CLI::App& app, CommandResult& result);    // bench
void add_rollout_commands(CLI::App& app, CommandResult& result);  // serve rollout-worker
void add_engine_command(CLI::App& serve, CommandResult& result);  // serve policy-engine
void add_learn_commands(CLI::App& app, CommandResult& result);    // learn sft|value|ppo
void add_train_command(CLI::App& app, CommandResult& result);     // train, train status
/// `serve coordinator` under `serve` (cli/coordinator_commands.cpp).
void add_coordinator_command(CLI::App& serve, CommandResult& result);
/// `node-agent` (cli/node_agent_command.cpp).
void add_node_agent_command(CLI::App& app, CommandResult& result);
/// `sim` (cli/sim_command.cpp).
void add_sim_command(CLI::App& app, CommandResult& result);

/// What `cuda-agent --version` prints (cli/main.cpp); `launch --ssh` compares it with every host's.
std::string version_text();

/// Replaces this process with a torch-linked sibling binary (cuda-agent-model, -learn, -engine:
/// the CLI itself stays torch-free), found beside /proc/self/exe, else on PATH, with `args`.
/// Returns only on failure, with the error reported (naming `what` the binary holds).
int exec_torch_binary(const std::string& exe_name, const std::vector<std::string>& args,
                      const std::string& what);

}  // namespace cuda_agent::cli
