#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cluster/launch_plan.h"
#include "cluster/manifest.h"

namespace cuda_agent::cli {
namespace {

constexpr const char* kEmbeddedName = "<embedded single-machine default>";

}  // namespace

Expected<Manifest> load_manifest_or_default(const std::string& path) {
  if (!path.empty()) return load_manifest(path);
  return parse_manifest(embedded_default_manifest(), kEmbeddedName,
                        std::filesystem::current_path());
}

void add_manifest_commands(CLI::App& app, CommandResult& result) {
  auto* manifest = app.add_subcommand("manifest", "Cluster manifests (TOML): check, defaults");
  manifest->require_subcommand(1);

  auto files = std::make_shared<std::vector<std::string>>();
  auto* check =
      manifest->add_subcommand("check", "Validate manifests; errors name the file, line and key");
  check->add_option("FILE", *files, "manifest files")->required()->check(CLI::ExistingFile);
  check->callback([files, &result] {
    for (const auto& f : *files) {
      auto m = load_manifest(f);
      if (!m) {
        result.exit_code = report(m.error());
        continue;
      }
      int gpus = 0;
      for (const auto& n : m->nodes) gpus += static_cast<int>(n.gpus);
      std::printf("%s: ok (run '%s', %zu node(s), %d GPU(s))\n", f.c_str(), m->run.name.c_str(),
                  m->nodes.size(), gpus);
    }
  });

  manifest
      ->add_subcommand("defaults",
                       "Print a complete manifest of every option with its documentation, "
                       "unit and default (docs/MANIFEST.md is this output)")
      ->callback([] { std::fputs(render_defaults().c_str(), stdout); });

  struct LaunchArgs {
    std::string file;
    bool dry_run = false;
  };
  auto args = std::make_shared<LaunchArgs>();
  auto* launch = app.add_subcommand(
      "launch",
      "Plan every process a manifest names, per node (without FILE: the embedded "
      "single-machine default). Only --dry-run exists; `cuda-agent train` starts the plan of this "
      "machine.");
  launch->add_option("FILE", args->file, "manifest (default: embedded single-machine)")
      ->check(CLI::ExistingFile);
  launch->add_flag("--dry-run", args->dry_run, "print the processes and command lines per node")
      ->required();
  launch->callback([args, &result] {
    auto m = load_manifest_or_default(args->file);
    if (!m) {
      result.exit_code = report(m.error());
      return;
    }
    const std::string shown = args->file.empty() ? std::string(kEmbeddedName) : args->file;
    std::printf("# launch plan for %s (run '%s')\n", shown.c_str(), m->run.name.c_str());
    std::fputs(render_plan(plan_launch(*m, args->file.empty() ? "" : args->file)).c_str(), stdout);
  });
}

}  // namespace cuda_agent::cli
