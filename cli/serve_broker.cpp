// `cuda-agent serve compile-farm` and `serve bench-pool`: the run's two work-pool brokers, one
// process each on the coordinator node. Both are the same WorkPoolBroker with the options the
// manifest gives it (cluster/launch_plan.h broker_options: ports from [run] port_base, heartbeats,
// limits, CURVE); --clients / --workers override the endpoints.
#include <cstdio>
#include <memory>
#include <string>

#include "actors/endpoint.h"
#include "actors/work_pool_broker.h"
#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/launch_plan.h"
#include "core/log.h"

namespace cuda_agent::cli {
namespace {

struct BrokerArgs {
  std::string clients;
  std::string workers;
  std::string manifest;
};

}  // namespace

void add_broker_command(CLI::App& serve, BrokerRole role, CommandResult& result) {
  const bool farm = role == BrokerRole::kCompileFarm;
  auto args = std::make_shared<BrokerArgs>();
  CLI::App* cmd = serve.add_subcommand(
      farm ? "compile-farm" : "bench-pool",
      farm ? "The compile farm's broker: clients on one endpoint, compile workers on another."
           : "The GPU bench pool's broker: clients on one endpoint, bench workers on another.");
  cmd->add_option("--manifest", args->manifest,
                  std::string("the run's manifest: endpoints from [run] port_base (tcp://*:+") +
                      (farm ? "1 and +2" : "3 and +4") + "), heartbeats, " +
                      (farm ? "[compile] queue and attempt limits, " : "") +
                      "CURVE from [security] (default: the embedded single-machine manifest)");
  cmd->add_option("--clients", args->clients,
                  "endpoint clients connect to (overrides the manifest)")
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kBind); });
  cmd->add_option("--workers", args->workers,
                  "endpoint workers connect to (overrides the manifest)")
      ->check([](const std::string& s) { return endpoint_problem(s, EndpointUse::kBind); });
  cmd->callback([args, role, farm, &result] {
    StopSignals signals;
    auto m = load_manifest_or_default(args->manifest);
    if (!m) {
      result.exit_code = report(m.error());
      return;
    }
    auto o = broker_options(*m, role);
    if (!o) {
      result.exit_code = report(o.error());
      return;
    }
    if (!args->clients.empty()) o->client_endpoint = args->clients;
    if (!args->workers.empty()) o->worker_endpoint = args->workers;
    auto broker = WorkPoolBroker::start(*o);
    if (!broker) {
      result.exit_code = report(broker.error());
      return;
    }
    std::printf("%s: clients %s, workers %s%s\n", farm ? "compile farm" : "bench pool",
                (*broker)->client_endpoint().c_str(), (*broker)->worker_endpoint().c_str(),
                o->curve ? ", CURVE" : "");
    std::fflush(stdout);
    const int sig = signals.wait();
    log_info(o->name + " stopping", {{"signal", std::to_string(sig)}});
    (*broker)->stop();
  });
}

}  // namespace cuda_agent::cli
