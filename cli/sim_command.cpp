// `cuda-agent sim --manifest M [--duration S] [--speedup K] [--load X] [--set K=V ...] [--json F]`:
// the control-plane simulation of a cluster manifest on this machine (cluster/sim.h): the real
// coordinator, brokers and run store as child processes, every other role simulated. Prints a
// progress line every 10 s and the report at the end (--json writes it as JSON too). SIGINT or
// SIGTERM ends the simulation early; the report of the time run still comes. Exit codes: 0 the
// simulation ran (read the report for the figures); 1 it could not run (a child did not come up);
// 2 bad input.
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/sim.h"

namespace cuda_agent::cli {
namespace {

struct SimArgs {
  SimOptions options;
  std::string manifest;
  std::string work_dir;
  std::int64_t duration_s = 600;
  std::int64_t probe_after_s = 20;
  std::string json;
};

int run(SimArgs& a) {
  PolledStopSignals stop;  // before any thread starts
  SimOptions o = a.options;
  o.manifest = a.manifest;
  o.work_dir = a.work_dir;
  o.duration = std::chrono::seconds(a.duration_s);
  o.probe_after = std::chrono::seconds(a.probe_after_s);
  o.stop = [&] { return stop.poll(); };
  o.progress = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  std::printf("sim: %s for %lld simulated s at speedup %g (%.0f s real), load %gx\n",
              a.manifest.c_str(), static_cast<long long>(a.duration_s), o.speedup,
              static_cast<double>(a.duration_s) / std::max(1.0, o.speedup), o.load);
  std::fflush(stdout);
  auto report = run_simulation(o);
  if (!report) return cli::report(report.error());
  std::printf("%s", sim_report_text(*report).c_str());
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << sim_report_json(*report) << "\n";
    if (!f) {
      std::fprintf(stderr, "cuda-agent: cannot write %s\n", a.json.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

void add_sim_command(CLI::App& app, CommandResult& result) {
  auto a = std::make_shared<SimArgs>();
  auto* cmd = app.add_subcommand(
      "sim",
      "simulate a cluster manifest's control plane on this machine: the real coordinator, brokers "
      "and run store, the other roles simulated with latencies measured on the GPU machine; "
      "prints dispatch, admission and store latencies, CPU, queues and false suspects");
  cmd->add_option("--manifest", a->manifest, "the cluster manifest, e.g. examples/cluster-128.toml")
      ->required();
  cmd->add_option("--duration", a->duration_s, "simulated seconds to run (default 600)")
      ->check(CLI::Range(1, 10'000'000));
  cmd->add_option("--speedup", a->options.speedup,
                  "simulated seconds per real second: every simulated latency is divided by it, "
                  "the protocol's timers are not (default 1)")
      ->check(CLI::Range(1.0, 10000.0));
  cmd->add_option("--load", a->options.load,
                  "the plan's rollout workers times this: concurrent episodes and members scale "
                  "with it (default 1)")
      ->check(CLI::Range(1.0, 100.0));
  cmd->add_option("--set", a->options.settings,
                  "SECTION.KEY=VALUE on top of the manifest (repeatable), as `train --set`");
  cmd->add_option("--work-dir", a->work_dir,
                  "where the store, logs and effective manifest go (default: a new directory "
                  "under /tmp); must be empty");
  cmd->add_option("--port-base", a->options.port_base,
                  "first of the 6 ports the run uses (default: a free block)");
  cmd->add_option("--tasks", a->options.tasks, "synthetic training tasks (default 32)")
      ->check(CLI::Range(1, 100'000));
  cmd->add_option("--seed", a->options.seed, "seed of every draw (default 1)");
  cmd->add_option("--probe-after", a->probe_after_s,
                  "real seconds after which a probe member falls silent, to time suspect and lost "
                  "(0: no probe; default 20)")
      ->check(CLI::Range(0, 100'000));
  cmd->add_option("--mean-turns", a->options.latencies.mean_turns,
                  "mean turns of a multi-turn episode (default 30)")
      ->check(CLI::Range(1.0, 1000.0));
  cmd->add_option("--decode-ms-per-token", a->options.latencies.decode_ms_per_token,
                  "decode time per token of one sequence (default 9.4, measured on the H200)")
      ->check(CLI::Range(0.001, 10000.0));
  cmd->add_option("--model-params", a->options.latencies.model_params,
                  "policy parameters, for checkpoint and weight-sync sizes (default 32e9: "
                  "examples/cluster-128.toml's Qwen3-32B)")
      ->check(CLI::Range(1e3, 1e13));
  cmd->add_option("--json", a->json, "also write the report as JSON to this file");
  cmd->callback([a, &result] { result.exit_code = run(*a); });
}

}  // namespace cuda_agent::cli
