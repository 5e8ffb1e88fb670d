// cuda-agent: one executable for every role and tool. `cuda-agent --help` lists the commands
// that exist today; each does real work.
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "core/version.h"

namespace cuda_agent::cli {

int report(const Error& error) {
  std::fprintf(stderr, "cuda-agent: %s [%s/%s]\n", error.message.c_str(),
               std::string(to_string(error.category)).c_str(), error.code.c_str());
  const bool input =
      error.category == ErrorCategory::kInvalidInput || error.category == ErrorCategory::kNotFound;
  return input ? 2 : 1;
}

std::string version_text() {
  return std::string("cuda-agent ") + build_info::kVersion + " (" + build_info::kGitCommit +
         ")\n  compiler " + build_info::kCompiler + ", CUDA toolkit " + build_info::kCudaToolkit +
         " (arch " + build_info::kCudaArchitectures + "), libtorch " + build_info::kTorch +
         " (model, learner), " + build_info::kBuildType;
}

}  // namespace cuda_agent::cli

int main(int argc, char** argv) {
  using namespace cuda_agent;
  // Before any thread: pools, farms and bench workers move MiB payloads (core/malloc_tuning.h).
  (void)tune_malloc_for_large_messages();
  CLI::App app{
      "cuda-agent: train language models to write fast, correct CUDA kernels with "
      "agentic RL, and evaluate kernels with a reward that cannot be gamed.\n"
      "Start with docs/ARCHITECTURE.md; manifest options are in docs/MANIFEST.md.",
      "cuda-agent"};
  app.set_version_flag("--version", cli::version_text());
  app.require_subcommand(1);
  LogSetup log;
  app.add_option("--log-level", log.level, "trace, debug, info, warn or error")
      ->capture_default_str();
  app.add_option("--log-format", log.format, "text or json")->capture_default_str();
  app.parse_complete_callback([&] {
    if (Status s = setup_logging(log); !s)
      throw CLI::ValidationError("--log-level/--log-format", s.error().message);
  });

  cli::CommandResult result;
  cli::add_manifest_commands(app, result);
  cli::add_keys_commands(app, result);
  cli::add_gpu_commands(app, result);
  cli::add_store_commands(app, result);
  cli::add_compile_commands(app, result);
  cli::add_bench_commands(app, result);
  cli::add_tasks_commands(app, result);
  cli::add_model_commands(app, result);
  cli::add_eval_commands(app, result);
  cli::add_rollout_commands(app, result);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports --help and --version as ParseErrors with exit code 0.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return result.exit_code;
}
