// plan_launch / render_plan: see launch_plan.h for the process layout.
#include "cluster/launch_plan.h"

#include <algorithm>

#include "actors/curve_keys.h"

namespace cuda_agent {
namespace {

constexpr const char* kProgram = "cuda-agent";

// Port offsets from [run] port_base (RunOptions::port_base documents them).
constexpr std::int64_t kCompileClientPort = 1;
constexpr std::int64_t kCompileWorkerPort = 2;
constexpr std::int64_t kBenchClientPort = 3;
constexpr std::int64_t kBenchWorkerPort = 4;
constexpr std::int64_t kLearnerMasterPort = 10;

std::vector<std::int64_t> ascending(std::vector<std::int64_t> gpus) {
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

ProcessSpec serve(std::string role, std::string name, std::vector<std::string> args,
                  const std::string& manifest_path) {
  ProcessSpec p{.role = std::move(role), .name = std::move(name), .argv = {kProgram, "serve"}};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  if (!manifest_path.empty()) {  // empty: the embedded default, which every process has built in
    p.argv.push_back("--manifest");
    p.argv.push_back(manifest_path);
  }
  return p;
}

}  // namespace

Expected<WorkPoolBrokerOptions> broker_options(const Manifest& m, BrokerRole role) {
  const bool farm = role == BrokerRole::kCompileFarm;
  WorkPoolBrokerOptions o;
  o.name = farm ? "compile-farm" : "bench-pool";
  const std::string bind = "tcp://*:";
  o.client_endpoint =
      bind + std::to_string(m.run.port_base + (farm ? kCompileClientPort : kBenchClientPort));
  o.worker_endpoint =
      bind + std::to_string(m.run.port_base + (farm ? kCompileWorkerPort : kBenchWorkerPort));
  o.heartbeat_timeout_ms = m.run.heartbeat_timeout_ms;
  o.first_heartbeat_grace_ms = m.run.first_heartbeat_grace_ms;
  if (farm) {
    o.max_queued_requests = m.compile.max_queued_jobs;
    o.max_attempts = m.compile.max_attempts;
  }
  if (m.security.enabled()) {
    ASSIGN_OR_RETURN(CurveKeyPair server, read_curve_key_file(m.paths.server_secret_key_file));
    ASSIGN_OR_RETURN(CurveKeyPair client, read_curve_key_file(m.paths.client_secret_key_file));
    o.curve = CurveServerKeys{.server = server, .allowed_client_public_z85 = {client.public_z85}};
  }
  return o;
}

Expected<std::optional<CurveClientKeys>> client_curve(const Manifest& m) {
  if (!m.security.enabled()) return std::optional<CurveClientKeys>();
  ASSIGN_OR_RETURN(CurveKeyPair client, read_curve_key_file(m.paths.client_secret_key_file));
  ASSIGN_OR_RETURN(CurveKeyPair server, read_curve_key_file(m.paths.server_public_key_file));
  return std::optional<CurveClientKeys>(
      CurveClientKeys{.server_public_z85 = server.public_z85, .client = client});
}

std::vector<NodePlan> plan_launch(const Manifest& manifest,
                                  const std::string& manifest_path_for_argv) {
  const std::string& m = manifest_path_for_argv;
  const std::int64_t port_base = manifest.run.port_base;
  const std::string coordinator = manifest.coordinator().host;
  auto endpoint = [&](std::int64_t offset) {
    return "tcp://" + coordinator + ":" + std::to_string(port_base + offset);
  };

  std::int64_t world_size = 0;
  std::int64_t rollout_workers = 0;
  std::string master_addr;
  for (const NodeSpec& node : manifest.nodes) {
    if (node.has_role("rollout"))
      rollout_workers += static_cast<std::int64_t>(node.rollout_gpus.size());
    if (!node.has_role("learner")) continue;
    if (master_addr.empty()) master_addr = node.host;
    world_size += static_cast<std::int64_t>(node.learner_gpus.size());
  }

  std::vector<NodePlan> plan;
  std::int64_t rank = 0;
  std::int64_t shard = 0;
  for (const NodeSpec& node : manifest.nodes) {
    NodePlan np{.host = node.host, .gpus = node.gpus, .roles = node.roles};
    if (node.has_role("coordinator")) {
      np.processes.push_back(serve("coordinator", "coordinator", {"coordinator"}, m));
      np.processes.push_back(serve("coordinator", "compile-farm", {"compile-farm"}, m));
      np.processes.push_back(serve("coordinator", "bench-pool", {"bench-pool"}, m));
    }
    if (node.has_role("compile")) {
      for (std::int64_t i = 0; i < node.compile_workers; ++i) {
        np.processes.push_back(serve("compile", "compile-worker-" + std::to_string(i),
                                     {"compile-worker", "--connect", endpoint(kCompileWorkerPort)},
                                     m));
      }
    }
    if (node.has_role("bench")) {
      for (std::int64_t gpu : ascending(node.bench_gpus)) {
        ProcessSpec p =
            serve("bench", "bench-worker-gpu" + std::to_string(gpu),
                  {"bench-worker", "--gpu", "0", "--connect", endpoint(kBenchWorkerPort)}, m);
        p.env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
        np.processes.push_back(std::move(p));
      }
    }
    if (node.has_role("rollout")) {
      for (std::int64_t gpu : ascending(node.rollout_gpus)) {
        ProcessSpec p =
            serve("rollout", "rollout-worker-gpu" + std::to_string(gpu),
                  {"rollout-worker", "--gpu", "0", "--compile-farm", endpoint(kCompileClientPort),
                   "--bench-pool", endpoint(kBenchClientPort), "--shard",
                   std::to_string(shard++) + "/" + std::to_string(rollout_workers)},
                  m);
        p.env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
        p.env["NCCL_NVLS_ENABLE"] = "0";
        np.processes.push_back(std::move(p));
      }
    }
    if (node.has_role("learner")) {
      for (std::int64_t gpu : ascending(node.learner_gpus)) {
        ProcessSpec p = serve(
            "learner", "learner-rank" + std::to_string(rank) + "-gpu" + std::to_string(gpu),
            {"learner", "--rank", std::to_string(rank), "--world-size", std::to_string(world_size)},
            m);
        p.env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
        p.env["MASTER_ADDR"] = master_addr;
        p.env["MASTER_PORT"] = std::to_string(port_base + kLearnerMasterPort);
        p.env["NCCL_NVLS_ENABLE"] = "0";
        np.processes.push_back(std::move(p));
        ++rank;
      }
    }
    plan.push_back(std::move(np));
  }
  return plan;
}

std::string shell_quote(const std::string& word) {
  bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string render_plan(const std::vector<NodePlan>& plan) {
  std::string out;
  for (const NodePlan& node : plan) {
    out += "# " + node.host + ": " + std::to_string(node.gpus) +
           (node.gpus == 1 ? " GPU" : " GPUs") + "; roles: ";
    for (std::size_t i = 0; i < node.roles.size(); ++i) out += (i ? ", " : "") + node.roles[i];
    out += '\n';
    for (const ProcessSpec& p : node.processes) {
      std::string line = " ";
      for (const auto& [key, value] : p.env) line += " " + key + "=" + shell_quote(value);
      for (const std::string& arg : p.argv) line += " " + shell_quote(arg);
      out += line + "  # " + p.name + '\n';
    }
    out += '\n';
  }
  return out;
}

}  // namespace cuda_agent
