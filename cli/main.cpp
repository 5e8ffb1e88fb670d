// cuda-agent: one executable for every role and tool. `cuda-agent --help` lists the commands
// that exist today; each does real work.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

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

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The word typed where a command was expected that names none, as a sentence with the nearest
/// command; "" when the parse failed for another reason.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "cuda-agent";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return "";
    if (word.size() > 1 && word[0] == '-') {
      const CLI::Option* o = at->get_option_no_throw(word);
      if (word.find('=') == std::string::npos && o && o->get_items_expected_min() > 0) ++i;
      continue;
    }
    const auto subs = at->get_subcommands([](CLI::App* s) { return !s->get_name().empty(); });
    CLI::App* next = nullptr;
    for (CLI::App* s : subs)
      if (s->check_name(word)) next = s;
    if (next) {
      at = next;
      path += " " + word;
      continue;
    }
    const bool takes_positionals =
        !at->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
    if (subs.empty() || takes_positionals) return "";
    std::string nearest;
    std::size_t best = std::string::npos;
    for (CLI::App* s : subs) {
      const std::size_t d =
          s->get_name().rfind(word, 0) == 0 ? 0 : edit_distance(word, s->get_name());
      if (d < best) best = d, nearest = s->get_name();
    }
    std::string out = "unknown command '" + word + "' for '" + path + "'";
    if (best <= std::max<std::size_t>(2, word.size() / 3))
      out += "; did you mean '" + nearest + "'?";
    return out + " (`" + path + " --help` lists the commands)";
  }
  return "";
}

}  // namespace
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
  cli::add_engine_command(*app.get_subcommand("serve"), result);
  cli::add_coordinator_command(*app.get_subcommand("serve"), result);
  cli::add_learn_commands(app, result);
  cli::add_train_command(app, result);
  cli::add_node_agent_command(app, result);
  cli::add_sim_command(app, result);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports --help and --version as ParseErrors with exit code 0. A mistyped command gets
    // "A subcommand is required" from CLI11: name the word and the nearest command instead.
    if (e.get_exit_code() != 0) {
      if (std::string unknown = cli::unknown_command(app, argc, argv); !unknown.empty()) {
        std::fprintf(stderr, "cuda-agent: %s\n", unknown.c_str());
        return 2;
      }
    }
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return result.exit_code;
}
