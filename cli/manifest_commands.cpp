#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/emit.h"
#include "cluster/launch_plan.h"
#include "cluster/manifest.h"
#include "cluster/node_agent.h"
#include "cluster/ssh_launch.h"

namespace cuda_agent::cli {
namespace {

constexpr const char* kEmbeddedName = "<embedded single-machine default>";

// `cuda-agent launch`: one mode per invocation. A mode is a member of LaunchArgs, its option in
// add_launch_command, a row of given_modes(), a branch of the callback and a function below; the
// options that only apply to one mode are checked in check_mode_options.
struct LaunchArgs {
  std::string file;
  bool dry_run = false;
  std::vector<std::string> emit;  // KIND DIR
  bool force = false;
  std::string image;
  bool local = false;
  bool ssh = false;
  std::string ssh_command;      // --ssh-command "ssh -p 2222 ..."
  std::string remote_manifest;  // --remote-manifest PATH (default: FILE's absolute path)
};

constexpr const char* kModeChoices = "--dry-run, --local, --ssh or --emit slurm|k8s DIR";

std::vector<std::string> given_modes(const LaunchArgs& args) {
  std::vector<std::string> modes;
  if (args.dry_run) modes.emplace_back("--dry-run");
  if (!args.emit.empty()) modes.emplace_back("--emit");
  if (args.local) modes.emplace_back("--local");
  if (args.ssh) modes.emplace_back("--ssh");
  return modes;
}

Error usage_error(std::string message) {
  return make_error(ErrorCategory::kInvalidInput, "cli.launch_usage", "launch: " + message);
}

Status check_mode_options(const LaunchArgs& args) {
  std::vector<std::string> modes = given_modes(args);
  if (modes.empty()) return usage_error("say how to launch: " + std::string(kModeChoices));
  if (modes.size() > 1) {
    return usage_error(modes[0] + " and " + modes[1] + " cannot be combined: give one of " +
                       kModeChoices);
  }
  if (!args.emit.empty()) {
    if (args.emit.size() != 2) return usage_error("--emit takes KIND DIR, once");
    RETURN_IF_ERROR(parse_emit_kind(args.emit[0]));
  }
  if (args.emit.empty() && args.force) return usage_error("--force applies to --emit only");
  if (!args.image.empty() && (args.emit.empty() || args.emit[0] != "k8s"))
    return usage_error("--image applies to --emit k8s only");
  if (!args.ssh && (!args.ssh_command.empty() || !args.remote_manifest.empty()))
    return usage_error("--ssh-command and --remote-manifest apply to --ssh only");
  if (args.ssh && args.file.empty())
    return usage_error(
        "--ssh needs a manifest FILE naming the hosts (the embedded default is "
        "this machine alone: use --local or `cuda-agent train`)");
  return Status::ok();
}

std::string shown_name(const LaunchArgs& args) {
  return args.file.empty() ? std::string(kEmbeddedName) : args.file;
}

int launch_dry_run(const LaunchArgs& args, const Manifest& m) {
  std::printf("# launch plan for %s (run '%s')\n", shown_name(args).c_str(), m.run.name.c_str());
  std::fputs(render_plan(plan_launch(m, args.file)).c_str(), stdout);
  return 0;
}

int launch_emit(const LaunchArgs& args, const Manifest& m) {
  const EmitKind kind = *parse_emit_kind(args.emit[0]);  // checked by check_mode_options
  const std::filesystem::path dir = args.emit[1];
  EmitOptions options{.image = args.image};
  // Every node agent is given this path: absolute, so that it does not depend on where Slurm
  // starts the step.
  if (!args.file.empty())
    options.manifest_path = std::filesystem::absolute(args.file).lexically_normal().string();
  Expected<std::vector<EmittedFile>> files = emit_files(kind, m, options);
  if (!files) return report(files.error());
  Expected<WrittenFiles> written = write_emitted_files(dir, *files, args.force);
  if (!written) return report(written.error());
  std::printf("%s files of run '%s' from %s:\n", std::string(to_string(kind)).c_str(),
              m.run.name.c_str(), shown_name(args).c_str());
  for (const auto& path : written->written) std::printf("  wrote %s\n", path.c_str());
  for (const auto& path : written->others) {
    std::printf("  left as it was: %s (not written by this emit)\n", path.c_str());
  }
  if (kind == EmitKind::kSlurm) {
    std::printf("submit with: sbatch %s\n", shell_quote(written->written.front().string()).c_str());
  } else {
    std::printf("apply with: kubectl apply -f %s\n", shell_quote(dir.string()).c_str());
  }
  return 0;
}

// --local: a node agent (cluster/node_agent.h) for every node of the manifest on this host, all
// polled from this thread; a signal drains them all. Exit: 3 if any agent says the run cannot go
// on, else 1 if any failed, else 0.
int launch_local(const LaunchArgs& args, const Manifest& m) {
  PolledStopSignals stop;  // before the agents start any thread
  std::vector<std::string> hosts;
  for (const std::string& h : manifest_hosts(m))
    if (is_this_host(h)) hosts.push_back(h);
  if (hosts.empty()) {
    std::string all;
    for (const std::string& h : manifest_hosts(m)) all += (all.empty() ? "" : ", ") + h;
    return report(make_error(ErrorCategory::kInvalidInput, "launch.no_local_node",
                             "no node of " + shown_name(args) + " is this host (hosts: " + all +
                                 "): start `cuda-agent node-agent --host H` on each, or --ssh"));
  }
  const std::string manifest_path =
      args.file.empty() ? "" : std::filesystem::absolute(args.file).lexically_normal().string();
  std::vector<std::unique_ptr<NodeAgent>> agents;
  for (const std::string& h : hosts) {
    auto agent = NodeAgent::start(m, {.host = h, .manifest_path_for_argv = manifest_path});
    if (!agent) {
      for (auto& a : agents) a->drain("another node of this host could not start");
      return report(agent.error());
    }
    std::printf("launch --local: node %s started; logs and node-status.json in %s\n", h.c_str(),
                (*agent)->log_dir().c_str());
    std::fflush(stdout);
    agents.push_back(std::move(*agent));
  }
  std::vector<bool> running(agents.size(), true);
  while (std::find(running.begin(), running.end(), true) != running.end()) {
    if (stop.poll()) {
      for (std::size_t i = 0; i < agents.size(); ++i)
        if (running[i]) agents[i]->drain("signal " + std::to_string(stop.seen));
      break;
    }
    for (std::size_t i = 0; i < agents.size(); ++i)
      if (running[i]) running[i] = agents[i]->poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the agents' poll interval
  }
  int code = 0;
  for (const auto& a : agents) {
    if (a->exit_code() == 3) code = 3;
    if (a->exit_code() != 0 && code == 0) code = a->exit_code();
  }
  std::printf("launch --local: %zu node(s) ended, exit %d\n", agents.size(), code);
  return code;
}

// --ssh: cluster/ssh_launch.h: every host checked first (reachable, the same cuda-agent
// version), then one node agent per host over ssh, supervised from here.
int launch_ssh(const LaunchArgs& args, const Manifest& m) {
  PolledStopSignals stop;  // before the agents start any thread
  SshLaunchOptions o;
  o.remote_manifest_path = args.remote_manifest.empty()
                               ? std::filesystem::absolute(args.file).lexically_normal().string()
                               : args.remote_manifest;
  o.local_version = version_text();
  // One log per ssh session, beside where the launch runs.
  o.log_dir = (std::filesystem::current_path() / ("launch-" + m.run.name + "-logs")).string();
  if (!args.ssh_command.empty()) o.ssh_command = split_ssh_command(args.ssh_command);
  auto code = run_ssh_launch(m, o, [&] { return stop.poll(); });
  if (!code) return report(code.error());
  return *code;
}

void add_launch_command(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<LaunchArgs>();
  auto* launch = app.add_subcommand(
      "launch",
      "Launch the processes a manifest names, per node (without FILE: the embedded "
      "single-machine default). Give one of: --dry-run prints them; --local runs this host's "
      "nodes under node agents; --ssh starts a node agent on every host; --emit slurm DIR writes "
      "an "
      "sbatch script and --emit k8s DIR Kubernetes files (ConfigMap, Secret, Service, "
      "StatefulSets) that start one `cuda-agent node-agent` per node. `cuda-agent train` starts "
      "the plan of this machine.");
  launch->add_option("FILE", args->file, "manifest (default: embedded single-machine)")
      ->check(CLI::ExistingFile);
  launch->add_flag("--dry-run", args->dry_run, "print the processes and command lines per node");
  launch
      ->add_option("--emit", args->emit,
                   "write the files that start the run under a scheduler into DIR: KIND is "
                   "slurm (DIR/RUN.sbatch) or k8s (DIR/*.yaml)")
      ->expected(2)
      ->option_text("KIND DIR");
  launch->add_flag("--force", args->force,
                   "with --emit: write into a non-empty DIR, replacing files of the same names");
  launch->add_option("--image", args->image,
                     "with --emit k8s: the container image (default cuda-agent:VERSION)");
  launch->add_flag("--local", args->local,
                   "run the nodes of this host here: a node agent per node (restarts, drain on "
                   "SIGTERM, node-status.json)");
  launch->add_flag("--ssh", args->ssh,
                   "check every host over ssh (reachable, the same `cuda-agent --version`), then "
                   "start one node agent per host and supervise them; the manifest must be at "
                   "the same path on every host (or --remote-manifest)");
  launch->add_option("--ssh-command", args->ssh_command,
                     "with --ssh: the ssh command (default: ssh -o BatchMode=yes -o "
                     "ConnectTimeout=10)");
  launch->add_option(
      "--remote-manifest", args->remote_manifest,
      "with --ssh: the manifest's path on the hosts (default: FILE's absolute path)");
  launch->callback([args, &result] {
    // Usage first: a mistyped flag is reported before the manifest is read.
    if (Status s = check_mode_options(*args); !s) {
      result.exit_code = report(s.error());
      return;
    }
    auto m = load_manifest_or_default(args->file);
    if (!m) {
      result.exit_code = report(m.error());
      return;
    }
    if (args->dry_run) {
      result.exit_code = launch_dry_run(*args, *m);
    } else if (args->local) {
      result.exit_code = launch_local(*args, *m);
    } else if (args->ssh) {
      result.exit_code = launch_ssh(*args, *m);
    } else {
      result.exit_code = launch_emit(*args, *m);
    }
  });
}

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

  add_launch_command(app, result);
}

}  // namespace cuda_agent::cli
