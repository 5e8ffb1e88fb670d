// plan_launch / render_plan: see launch_plan.h for the process layout.
#include "cluster/launch_plan.h"

#include <unistd.h>

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
constexpr std::int64_t kCoordinatorPort = 0;
constexpr std::int64_t kMetricsPort = 5;
constexpr std::int64_t kLearnerMasterPort = 10;
constexpr std::int64_t kFirstEnginePort = 20;  // policy engine i listens on +20+i

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
    // One client's flood leaves half of the queue to the others (issue 27 item 7).
    o.max_queued_per_client = std::max<std::int64_t>(1, m.compile.max_queued_jobs / 2);
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

std::string coordinator_endpoint(const Manifest& m) {
  return run_endpoint(m, RunPort::kCoordinator, m.coordinator().host);
}

Expected<CoordinatorClientOptions> coordinator_client_options(const Manifest& m, WorkerId member,
                                                              MemberRole role) {
  ASSIGN_OR_RETURN(std::optional<CurveClientKeys> curve, client_curve(m));
  return CoordinatorClientOptions{
      .endpoint = coordinator_endpoint(m),
      .run = RunId{m.run.name},
      .member = std::move(member),
      .role = role,
      .heartbeat_interval = std::chrono::milliseconds(m.run.heartbeat_interval_ms),
      .curve = std::move(curve)};
}

std::string coordinator_bind_endpoint(const Manifest& m) {
  return "tcp://*:" + std::to_string(m.run.port_base + kCoordinatorPort);
}

std::string run_endpoint(const Manifest& m, RunPort port, const std::string& host) {
  std::int64_t offset = kCoordinatorPort;
  switch (port) {
    case RunPort::kCoordinator: offset = kCoordinatorPort; break;
    case RunPort::kCompileClients: offset = kCompileClientPort; break;
    case RunPort::kCompileWorkers: offset = kCompileWorkerPort; break;
    case RunPort::kBenchClients: offset = kBenchClientPort; break;
    case RunPort::kBenchWorkers: offset = kBenchWorkerPort; break;
  }
  return "tcp://" + host + ":" + std::to_string(m.run.port_base + offset);
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1";
}

bool is_this_host(const std::string& host) {
  if (is_loopback_host(host)) return true;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return host == name;
}

std::int64_t coordinator_metrics_port(const Manifest& m) { return m.run.port_base + kMetricsPort; }

std::int64_t rollout_workers(const Manifest& m) {
  std::int64_t n = 0;
  for (const NodeSpec& node : m.nodes) {
    if (!node.has_role("rollout")) continue;
    n += node.gpus == 0 ? 1 : static_cast<std::int64_t>(node.rollout_gpus.size());
  }
  return n;
}

std::filesystem::path initial_model_dir(const Manifest& m) {
  if (!m.paths.model_path.empty()) return m.paths.model_path;
  if (m.corpus.count > 0) return m.paths.store_dir.parent_path() / "warmup-policy";
  return m.paths.store_dir.parent_path() / "tiny-policy";
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
  std::int64_t bench_workers = 0;
  std::string master_addr;
  const bool one_node = manifest.nodes.size() == 1;
  // Every rollout slot (a rollout GPU, or the CPU of a node without GPUs) gets a policy engine;
  // the learner publishes each new version to all of them.
  struct Engine {
    std::string url;
  };
  std::vector<Engine> engines;
  auto rollout_slots = [](const NodeSpec& node) {
    return node.gpus == 0 ? std::vector<std::int64_t>{-1} : ascending(node.rollout_gpus);
  };
  auto learner_slots = [](const NodeSpec& node) {
    return node.gpus == 0 ? std::vector<std::int64_t>{-1} : ascending(node.learner_gpus);
  };
  for (const NodeSpec& node : manifest.nodes) {
    if (node.has_role("bench")) bench_workers += static_cast<std::int64_t>(node.bench_gpus.size());
    if (node.has_role("rollout")) {
      for (std::size_t i = 0; i < rollout_slots(node).size(); ++i) {
        const std::string host = one_node ? "127.0.0.1" : node.host;
        engines.push_back({"http://" + host + ":" +
                           std::to_string(port_base + kFirstEnginePort +
                                          static_cast<std::int64_t>(engines.size()))});
      }
    }
    if (!node.has_role("learner")) continue;
    if (master_addr.empty()) master_addr = node.host;
    world_size += static_cast<std::int64_t>(learner_slots(node).size());
  }
  const std::string model_dir = initial_model_dir(manifest).string();
  const std::string store_dir = manifest.paths.store_dir.string();
  const std::string learner_out = (manifest.paths.store_dir.parent_path() / "learner").string();
  auto slot_name = [](std::int64_t gpu) {
    return gpu < 0 ? std::string("cpu") : "gpu" + std::to_string(gpu);
  };

  std::vector<NodePlan> plan;
  std::int64_t rank = 0;
  std::size_t engine_index = 0;
  for (const NodeSpec& node : manifest.nodes) {
    NodePlan np{.host = node.host, .gpus = node.gpus, .roles = node.roles};
    if (node.has_role("coordinator")) {
      np.processes.push_back(serve("coordinator", "coordinator", {"coordinator"}, m));
      np.processes.push_back(serve("coordinator", "compile-farm", {"compile-farm"}, m));
      if (bench_workers > 0)
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
      for (std::int64_t gpu : rollout_slots(node)) {
        const std::string& url = engines[engine_index].url;
        const std::string port = url.substr(url.rfind(':') + 1);
        ProcessSpec engine{
            .role = "rollout",
            .name = "policy-engine-" + slot_name(gpu),
            .argv = {kProgram, "serve", "policy-engine", "--model", model_dir, "--host",
                     one_node ? "127.0.0.1" : "0.0.0.0", "--port", port, "--device",
                     gpu < 0 ? "cpu" : "cuda:0", "--dtype", manifest.model.dtype,
                     "--served-model-name", "policy", "--max-seq-len",
                     std::to_string(manifest.rollout.max_context_tokens)}};
        // A restarted engine starts from the newest version the learner published there, not
        // from the base model. Where the learner's directory is not on this node, the engine
        // starts from --model and the learner re-publishes to it on its next step.
        if (one_node || node.has_role("learner"))
          engine.argv.insert(engine.argv.end(), {"--policy-dir", learner_out + "/policy"});
        std::vector<std::string> args = {"rollout-worker", "--coordinator",
                                         coordinator_endpoint(manifest), "--compile-farm",
                                         endpoint(kCompileClientPort)};
        if (bench_workers > 0) {
          args.push_back("--bench-pool");
          args.push_back(endpoint(kBenchClientPort));
        }
        args.insert(args.end(), {"--policy-endpoint", url + "/v1", "--policy-model", "policy"});
        if (gpu >= 0) args.insert(args.end(), {"--gpu", "0"});
        ProcessSpec worker = serve("rollout", "rollout-worker-" + slot_name(gpu), args, m);
        if (gpu >= 0) {
          engine.env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
          worker.env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
          engine.env["NCCL_NVLS_ENABLE"] = "0";
          worker.env["NCCL_NVLS_ENABLE"] = "0";
        }
        np.processes.push_back(std::move(engine));
        np.processes.push_back(std::move(worker));
        ++engine_index;
      }
    }
    if (node.has_role("learner")) {
      for (std::int64_t gpu : learner_slots(node)) {
        std::vector<std::string> args = {"learner",
                                         "--rank",
                                         std::to_string(rank),
                                         "--world-size",
                                         std::to_string(world_size),
                                         "--coordinator",
                                         coordinator_endpoint(manifest),
                                         "--store",
                                         store_dir,
                                         "--run",
                                         manifest.run.name,
                                         "--model",
                                         model_dir,
                                         "--out",
                                         learner_out,
                                         "--checkpoint-dir",
                                         manifest.paths.checkpoint_dir.string()};
        for (const Engine& e : engines) args.insert(args.end(), {"--engine", e.url});
        ProcessSpec p =
            serve("learner", "learner-rank" + std::to_string(rank) + "-" + slot_name(gpu), args, m);
        if (gpu >= 0) p.env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
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
