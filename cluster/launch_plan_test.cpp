// Launch plans of the examples: process counts, learner ranks, environments, determinism.
#include "cluster/launch_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "actors/curve_keys.h"

namespace cuda_agent {
namespace {

using ::testing::ElementsAre;

Manifest load_example(const char* name) {
  const char* dir = std::getenv("CUDA_AGENT_SOURCE_DIR");
  if (dir == nullptr) {
    ADD_FAILURE() << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
    return {};
  }
  Expected<Manifest> m = load_manifest(std::filesystem::path(dir) / "examples" / name);
  if (!m) {
    ADD_FAILURE() << m.error().to_string();
    return {};
  }
  return *m;
}

std::vector<const ProcessSpec*> with_role(const std::vector<NodePlan>& plan,
                                          std::string_view role) {
  std::vector<const ProcessSpec*> out;
  for (const NodePlan& node : plan) {
    for (const ProcessSpec& p : node.processes) {
      if (p.role == role) out.push_back(&p);
    }
  }
  return out;
}

TEST(LaunchPlanTest, Cluster128) {
  Manifest m = load_example("cluster-128.toml");
  ASSERT_FALSE(m.nodes.empty());
  std::vector<NodePlan> plan = plan_launch(m, "/shared/run.toml");
  ASSERT_EQ(plan.size(), 20u);
  EXPECT_EQ(plan[0].host, "cpu01");
  ASSERT_GE(plan[0].processes.size(), 3u);
  EXPECT_THAT(plan[0].processes[0].argv,
              ElementsAre("cuda-agent", "serve", "coordinator", "--manifest", "/shared/run.toml"));
  EXPECT_EQ(plan[0].processes[1].name, "compile-farm");
  EXPECT_EQ(plan[0].processes[2].name, "bench-pool");

  std::vector<const ProcessSpec*> learners = with_role(plan, "learner");
  ASSERT_EQ(learners.size(), 64u);
  for (std::size_t r = 0; r < learners.size(); ++r) {
    const ProcessSpec& p = *learners[r];
    ASSERT_GE(p.argv.size(), 9u);
    EXPECT_THAT(std::vector<std::string>(p.argv.begin(), p.argv.begin() + 9),
                ElementsAre("cuda-agent", "serve", "learner", "--rank", std::to_string(r),
                            "--world-size", "64", "--coordinator", "tcp://cpu01:5550"));
    EXPECT_EQ(std::count(p.argv.begin(), p.argv.end(), "--engine"), 48);  // every engine
    EXPECT_EQ(p.argv[p.argv.size() - 2], "--manifest");
    EXPECT_EQ(p.argv.back(), "/shared/run.toml");
    EXPECT_EQ(p.env.at("CUDA_VISIBLE_DEVICES"), std::to_string(r % 8));
    EXPECT_EQ(p.env.at("MASTER_ADDR"), "gpu01");
    EXPECT_EQ(p.env.at("MASTER_PORT"), "5560");
    EXPECT_EQ(p.env.at("NCCL_NVLS_ENABLE"), "0");
  }
  EXPECT_EQ(plan[4 + 1].host, "gpu02");  // 4 CPU nodes, then gpu01: rank 8 is gpu02's GPU 0
  EXPECT_EQ(plan[5].processes[0].name, "learner-rank8-gpu0");

  std::vector<const ProcessSpec*> bench = with_role(plan, "bench");
  ASSERT_EQ(bench.size(), 16u);
  for (std::size_t i = 0; i < bench.size(); ++i) {
    std::string gpu = std::to_string(i % 8);
    EXPECT_EQ(bench[i]->name, "bench-worker-gpu" + gpu);
    EXPECT_EQ(bench[i]->env.at("CUDA_VISIBLE_DEVICES"), gpu);
    EXPECT_THAT(bench[i]->argv,
                ElementsAre("cuda-agent", "serve", "bench-worker", "--gpu", "0", "--connect",
                            "tcp://cpu01:5554", "--manifest", "/shared/run.toml"));
  }
  std::vector<const ProcessSpec*> compile = with_role(plan, "compile");
  ASSERT_EQ(compile.size(), 16u);
  EXPECT_THAT(compile[0]->argv, ElementsAre("cuda-agent", "serve", "compile-worker", "--connect",
                                            "tcp://cpu01:5552", "--manifest", "/shared/run.toml"));
  EXPECT_EQ(with_role(plan, "rollout").size(), 2 * 48u);  // a policy engine and a worker each
}

TEST(LaunchPlanTest, RenderingIsDeterministic) {
  Manifest m = load_example("cluster-128.toml");
  std::string once = render_plan(plan_launch(m, "m.toml"));
  EXPECT_EQ(render_plan(plan_launch(m, "m.toml")), once);
  EXPECT_EQ(std::count(once.begin(), once.end(), '\n'),
            20 /*headers*/ + 20 /*blank lines*/ + 3 + 16 + 64 + 2 * 48 + 16);
}

TEST(LaunchPlanTest, SingleMachineRendersExactly) {
  Manifest m = load_example("single-machine.toml");
  const std::string run = m.paths.store_dir.parent_path().string();  // examples/runs/local
  EXPECT_EQ(
      render_plan(plan_launch(m, "my run.toml")),
      std::string(
          "# localhost: 1 GPU; roles: coordinator, learner, rollout, compile, bench\n"
          "  cuda-agent serve coordinator --manifest 'my run.toml'  # coordinator\n"
          "  cuda-agent serve compile-farm --manifest 'my run.toml'  # compile-farm\n"
          "  cuda-agent serve bench-pool --manifest 'my run.toml'  # bench-pool\n"
          "  cuda-agent serve compile-worker --connect tcp://localhost:5552 --manifest "
          "'my run.toml'  # compile-worker-0\n"
          "  CUDA_VISIBLE_DEVICES=0 cuda-agent serve bench-worker --gpu 0 --connect "
          "tcp://localhost:5554 --manifest 'my run.toml'  # bench-worker-gpu0\n"
          "  CUDA_VISIBLE_DEVICES=0 NCCL_NVLS_ENABLE=0 cuda-agent serve policy-engine --model ") +
          run +
          "/tiny-policy --host 127.0.0.1 --port 5570 --device cuda:0 --dtype bf16 "
          "--served-model-name policy --max-seq-len 131072 --policy-dir " +
          run +
          "/learner/policy  # policy-engine-gpu0\n"
          "  CUDA_VISIBLE_DEVICES=0 NCCL_NVLS_ENABLE=0 cuda-agent serve rollout-worker "
          "--coordinator tcp://localhost:5550 --compile-farm tcp://localhost:5551 "
          "--bench-pool tcp://localhost:5553 --policy-endpoint http://127.0.0.1:5570/v1 "
          "--policy-model policy --gpu 0 --manifest 'my run.toml'  # rollout-worker-gpu0\n"
          "  CUDA_VISIBLE_DEVICES=0 MASTER_ADDR=localhost MASTER_PORT=5560 NCCL_NVLS_ENABLE=0 "
          "cuda-agent serve learner --rank 0 --world-size 1 --coordinator "
          "tcp://localhost:5550 --store " +
          run + "/store --run local --model " + run + "/tiny-policy --out " + run +
          "/learner --checkpoint-dir " + run +
          "/checkpoints --engine http://127.0.0.1:5570 --manifest 'my run.toml'  "
          "# learner-rank0-gpu0\n"
          "\n");
}

TEST(LaunchPlanTest, TwoNodesLearnerGroupOnNodeB) {
  Manifest m = load_example("two-nodes.toml");
  std::vector<NodePlan> plan = plan_launch(m, "two-nodes.toml");
  ASSERT_EQ(plan.size(), 2u);
  std::vector<const ProcessSpec*> learners = with_role(plan, "learner");
  ASSERT_EQ(learners.size(), 8u);
  EXPECT_EQ(learners[7]->env.at("MASTER_ADDR"), "node-b");
  EXPECT_EQ(learners[7]->argv[6], "8");  // --world-size
  std::vector<const ProcessSpec*> rollout = with_role(plan, "rollout");
  ASSERT_EQ(rollout.size(), 12u);
  std::set<std::string> urls;
  for (std::size_t i = 0; i < rollout.size(); i += 2) {  // an engine, then the worker using it
    const auto& engine = rollout[i]->argv;
    const auto& worker = rollout[i + 1]->argv;
    EXPECT_EQ(engine[2], "policy-engine");
    EXPECT_EQ(worker[2], "rollout-worker");
    const std::string port = *(std::find(engine.begin(), engine.end(), "--port") + 1);
    EXPECT_EQ(port, std::to_string(5550 + 20 + i / 2));
    const std::string url = *(std::find(worker.begin(), worker.end(), "--policy-endpoint") + 1);
    EXPECT_EQ(url.substr(url.size() - port.size() - 3), port + "/v1");
    EXPECT_EQ(*(std::find(engine.begin(), engine.end(), "--host") + 1), "0.0.0.0");
    // node-a has no learner: its engines start from --model (the learner re-publishes).
    EXPECT_EQ(std::find(engine.begin(), engine.end(), "--policy-dir"), engine.end());
    urls.insert(url);
  }
  EXPECT_EQ(urls.size(), 6u);
  EXPECT_EQ(with_role(plan, "compile").size(), 2u);
  EXPECT_EQ(with_role(plan, "bench").back()->env.at("CUDA_VISIBLE_DEVICES"), "7");
}

// Issue 29's one-host manifests: learner ranks, engines and the bench each on their own GPUs (the
// learner and engine share GPU 0 on two GPUs), NVLink multicast off wherever NCCL may run.
TEST(LaunchPlanTest, OneHostMultiGpuExamplesGiveTheBenchItsOwnGpu) {
  struct Case {
    const char* file;
    std::vector<std::string> learner_gpus, engine_gpus;
    std::string bench_gpu;
  };
  for (const Case& c :
       {Case{"h200x2.toml", {"0"}, {"0"}, "1"}, Case{"h200x4.toml", {"0", "1"}, {"2"}, "3"},
        Case{"h200x8.toml", {"0", "1", "2", "3"}, {"4", "5", "6"}, "7"}}) {
    SCOPED_TRACE(c.file);
    Manifest m = load_example(c.file);
    ASSERT_FALSE(m.nodes.empty());
    EXPECT_FALSE(m.run.allow_shared_bench_gpu);
    std::vector<NodePlan> plan = plan_launch(m, c.file);
    ASSERT_EQ(plan.size(), 1u);
    std::vector<std::string> learner_gpus, engine_gpus;
    for (const ProcessSpec* p : with_role(plan, "learner")) {
      learner_gpus.push_back(p->env.at("CUDA_VISIBLE_DEVICES"));
      EXPECT_EQ(p->env.at("NCCL_NVLS_ENABLE"), "0");
      EXPECT_EQ(p->argv[6], std::to_string(c.learner_gpus.size()));  // --world-size
    }
    for (const ProcessSpec* p : with_role(plan, "rollout")) {
      if (p->argv[2] != "policy-engine") continue;
      engine_gpus.push_back(p->env.at("CUDA_VISIBLE_DEVICES"));
      EXPECT_EQ(p->env.at("NCCL_NVLS_ENABLE"), "0");
    }
    EXPECT_EQ(learner_gpus, c.learner_gpus);
    EXPECT_EQ(engine_gpus, c.engine_gpus);
    std::vector<const ProcessSpec*> bench = with_role(plan, "bench");
    ASSERT_EQ(bench.size(), 1u);  // one bench worker (the bench-pool broker is the coordinator's)
    EXPECT_EQ(bench.back()->env.at("CUDA_VISIBLE_DEVICES"), c.bench_gpu);
  }
}

TEST(LaunchPlanTest, CpuMachineRunsEveryRoleOnTheCpuWithoutABench) {
  Expected<Manifest> m = parse_manifest(embedded_cpu_manifest(), "cpu.toml", "/w");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::vector<NodePlan> plan = plan_launch(*m, "/w/runs/local-cpu/manifest.toml");
  ASSERT_EQ(plan.size(), 1u);
  std::vector<std::string> names;
  for (const ProcessSpec& p : plan[0].processes) {
    names.push_back(p.name);
    EXPECT_EQ(p.env.count("CUDA_VISIBLE_DEVICES"), 0u) << p.name;
  }
  EXPECT_THAT(names, ElementsAre("coordinator", "compile-farm", "compile-worker-0",
                                 "policy-engine-cpu", "rollout-worker-cpu", "learner-rank0-cpu"));
  const auto& engine = plan[0].processes[3].argv;
  EXPECT_EQ(*(std::find(engine.begin(), engine.end(), "--device") + 1), "cpu");
  EXPECT_EQ(*(std::find(engine.begin(), engine.end(), "--model") + 1),
            "/w/runs/local-cpu/tiny-policy");
  // A restarted engine resumes from what the learner published under its --out.
  EXPECT_EQ(*(std::find(engine.begin(), engine.end(), "--policy-dir") + 1),
            "/w/runs/local-cpu/learner/policy");
  const auto& worker = plan[0].processes[4].argv;
  EXPECT_EQ(std::find(worker.begin(), worker.end(), "--bench-pool"), worker.end());
  const auto& learner = plan[0].processes[5].argv;
  EXPECT_EQ(*(std::find(learner.begin(), learner.end(), "--engine") + 1), "http://127.0.0.1:5570");
  EXPECT_EQ(*(std::find(learner.begin(), learner.end(), "--out") + 1), "/w/runs/local-cpu/learner");
}

// In a multi-node run, only the engines on a node that also runs a learner get --policy-dir.
TEST(LaunchPlanTest, PolicyDirOnlyWhereTheLearnerRuns) {
  Expected<Manifest> m = parse_manifest(
      "[store]\ndir = \"/r/store\"\n"
      "[[nodes]]\nhost = \"a\"\ngpus = 2\nroles = [\"coordinator\", \"rollout\", \"learner\"]\n"
      "rollout_gpus = [0]\nlearner_gpus = [1]\n"
      "[[nodes]]\nhost = \"b\"\ngpus = 1\nroles = [\"rollout\"]\nrollout_gpus = [0]\n",
      "t.toml", "/");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::vector<NodePlan> plan = plan_launch(*m, "t.toml");
  ASSERT_EQ(plan.size(), 2u);
  auto policy_dir = [&](std::size_t node) -> std::string {
    for (const ProcessSpec& p : plan[node].processes) {
      if (p.name.rfind("policy-engine-", 0) != 0) continue;
      auto it = std::find(p.argv.begin(), p.argv.end(), "--policy-dir");
      return it == p.argv.end() ? "(none)" : *(it + 1);
    }
    return "(no engine)";
  };
  EXPECT_EQ(policy_dir(0), "/r/learner/policy");
  EXPECT_EQ(policy_dir(1), "(none)");
}

TEST(LaunchPlanTest, GpuListsAreTakenInAscendingOrder) {
  Expected<Manifest> m = parse_manifest(
      "[[nodes]]\nhost = \"a\"\ngpus = 4\nroles = [\"coordinator\", \"learner\"]\n"
      "learner_gpus = [3, 1]\n",
      "t.toml", "/");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::vector<NodePlan> plan = plan_launch(*m, "t.toml");
  std::vector<const ProcessSpec*> learners = with_role(plan, "learner");
  ASSERT_EQ(learners.size(), 2u);
  EXPECT_EQ(learners[0]->name, "learner-rank0-gpu1");
  EXPECT_EQ(learners[1]->name, "learner-rank1-gpu3");
}

TEST(LaunchPlanTest, BrokersListenWhereThePlansWorkersConnect) {
  const Manifest single = load_example("single-machine.toml");
  auto farm = broker_options(single, BrokerRole::kCompileFarm);
  auto pool = broker_options(single, BrokerRole::kBenchPool);
  ASSERT_TRUE(farm && pool);
  const auto port = [&](std::int64_t offset) {
    return std::to_string(single.run.port_base + offset);
  };
  EXPECT_EQ(farm->client_endpoint, "tcp://*:" + port(1));
  EXPECT_EQ(farm->worker_endpoint, "tcp://*:" + port(2));
  EXPECT_EQ(pool->client_endpoint, "tcp://*:" + port(3));
  EXPECT_EQ(pool->worker_endpoint, "tcp://*:" + port(4));
  EXPECT_EQ(farm->max_queued_requests, single.compile.max_queued_jobs);
  EXPECT_EQ(farm->max_attempts, single.compile.max_attempts);
  EXPECT_EQ(pool->heartbeat_timeout_ms, single.run.heartbeat_timeout_ms);
  EXPECT_FALSE(farm->curve || pool->curve);
  // The plan's workers and clients connect to exactly those ports.
  const auto plan = plan_launch(single, "");
  const std::string argv = render_plan(plan);
  EXPECT_NE(argv.find("compile-worker --connect tcp://localhost:" + port(2)), std::string::npos);
  EXPECT_NE(argv.find("--bench-pool tcp://localhost:" + port(3)), std::string::npos);

  const Manifest secured = load_example("cluster-128.toml");
  auto curve_farm = broker_options(secured, BrokerRole::kCompileFarm);
  ASSERT_TRUE(curve_farm) << curve_farm.error().to_string();
  ASSERT_TRUE(curve_farm->curve);
  auto client = read_curve_key_file(secured.paths.client_secret_key_file);
  ASSERT_TRUE(client);
  EXPECT_THAT(curve_farm->curve->allowed_client_public_z85, ElementsAre(client->public_z85));
  EXPECT_TRUE(validate(*curve_farm)) << "a broker that cannot start from the manifest";
  // Its workers and clients connect with the allowed key, to the server key the broker holds.
  auto worker_keys = client_curve(secured);
  ASSERT_TRUE(worker_keys && worker_keys->has_value());
  EXPECT_EQ((*worker_keys)->client.public_z85, client->public_z85);
  EXPECT_EQ((*worker_keys)->server_public_z85, curve_farm->curve->server.public_z85);
  auto plain = client_curve(single);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->has_value());
}

TEST(LaunchPlanTest, ShellQuote) {
  EXPECT_EQ(shell_quote("tcp://a:1"), "tcp://a:1");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace cuda_agent
