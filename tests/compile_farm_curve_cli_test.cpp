// `cuda-agent compile DIR --farm ADDR` against a CURVE-secured farm (issue 27 item 2), driven as a
// user does: the broker (real, with the run's client key as its only allowed one) and a compile
// worker stand-in live in the test process; the CLI is a child process. With --manifest naming the
// run's keys the build comes back; with a key the farm does not allow, or none, the CLI fails
// within seconds with "authentication failed for ADDR" instead of waiting out --timeout-ms; a
// `serve compile-worker` whose key is refused exits 3 with the same message.
//
// The worker stand-in answers every request with a fixed CompileReply (no nvcc): what is under
// test is the path between the CLI and the farm.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "actors/curve_keys.h"
#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "core/log.h"
#include "messages/compile_codec.h"
#include "tests/cli_runner.h"
#include "tests/pool_test_util.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

using pool_test::must;

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::int64_t wall_ms = 0;
};

// `cuda-agent ARGS`, killed after 60 s (timeout(1)) so a hang fails the test instead of blocking.
CliRun run_cli(const std::string& args) {
  const std::string cmd =
      std::string("timeout -k 5 60 ") + CUDA_AGENT_EXE + " --log-level warn " + args + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const testing::CmdResult ran = testing::run_shell(cmd);
  CliRun r{ran.exit_code, ran.output};
  r.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  return r;
}

class CompileFarmCurveCli : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)setup_logging({.level = "error"});
    std::random_device rd;
    root_ = fs::temp_directory_path() / ("compile_farm_curve_cli_test-" + std::to_string(rd()) +
                                         "-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "keys");
    for (const char* name : {"server", "client", "stranger", "impostor"}) {
      ASSERT_TRUE(write_curve_key_files(must(generate_curve_keypair()), root_ / "keys", name));
    }
    write_manifest("run.toml", "client");
    write_manifest("stranger.toml", "stranger");
    write_manifest("impostor.toml", "client", "impostor");  // another farm's keys: the wrong server
    fs::create_directories(root_ / "sol/kernels");
    std::ofstream(root_ / "sol/kernels/k.cu") << "__global__ void k() {}\n";

    const CurveKeyPair server = must(read_curve_key_file(root_ / "keys/server.key_secret"));
    const CurveKeyPair client = must(read_curve_key_file(root_ / "keys/client.key_secret"));
    WorkPoolBrokerOptions bo;
    bo.name = "compile-farm";
    bo.curve = CurveServerKeys{server, {client.public_z85}};
    broker_ = must(WorkPoolBroker::start(bo));
    PoolWorkerOptions wo;
    wo.broker_endpoint = broker_->worker_endpoint();
    wo.worker_id = WorkerId{"fake-compile-worker"};
    wo.curve = CurveClientKeys{server.public_z85, client};
    worker_ = must(PoolWorker::start(wo, [this](const WorkItem& item) -> Expected<std::string> {
      ++builds_;
      auto request = decode_compile_request(item.payload.view());
      if (!request) return request.error();
      CompileResult built;
      built.artifact = "fake shared object";
      built.artifact_size_bytes = built.artifact.size();
      built.artifact_hash = "fake-build-of-" + std::to_string(request->files.size()) + "-files";
      built.log = "built by the test's stand-in worker";
      return encode_compile_reply(CompileReply{request->header.request_id, built});
    }));
  }
  void TearDown() override {
    worker_.reset();
    broker_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void write_manifest(const std::string& file, const std::string& client_key,
                      const std::string& server_key = "server") {
    std::ofstream(root_ / file) << "[run]\nname = \"curve-test\"\n\n[security]\n"
                                << "server_secret_key_file = \"keys/" << server_key
                                << ".key_secret\"\n"
                                << "client_secret_key_file = \"keys/" << client_key
                                << ".key_secret\"\n"
                                << "server_public_key_file = \"keys/" << server_key << ".key\"\n\n"
                                << "[[nodes]]\nhost = \"localhost\"\ngpus = 0\n"
                                << "roles = [\"coordinator\", \"compile\"]\n";
  }
  std::string compile_args(const std::string& manifest) const {
    std::string args = "compile " + (root_ / "sol").string() + " --farm " +
                       broker_->client_endpoint() + " --timeout-ms 30000 --json";
    if (!manifest.empty()) args += " --manifest " + (root_ / manifest).string();
    return args;
  }

  fs::path root_;
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<PoolWorker> worker_;
  std::atomic<int> builds_{0};
};

// Covers: the run's client key, read from the manifest's [security], reaches the farm and the
// build comes back. Before the fix `compile` connected without keys and waited 30 s.
TEST_F(CompileFarmCurveCli, TheManifestsKeysReachTheFarm) {
  const CliRun r = run_cli(compile_args("run.toml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(json.at("artifact_hash"), "fake-build-of-1-files");
  EXPECT_EQ(builds_.load(), 1);
}

// Covers: a client key the farm does not allow (via --manifest), and no keys at all (no
// --manifest). Each fails within seconds, exit 1, naming the endpoint, and nothing is built.
TEST_F(CompileFarmCurveCli, ARefusedKeyFailsAtOnceNamingTheFarm) {
  for (const std::string manifest : {"stranger.toml", ""}) {
    const CliRun r = run_cli(compile_args(manifest));
    EXPECT_EQ(r.exit_code, 1) << manifest << ": " << r.output;
    EXPECT_NE(r.output.find("authentication failed for " + broker_->client_endpoint()),
              std::string::npos)
        << manifest << ": " << r.output;
    EXPECT_NE(r.output.find("pool.auth_failed"), std::string::npos) << r.output;
    // Process start-up included; the refusal itself takes milliseconds.
    EXPECT_LT(r.wall_ms, 5000) << manifest << ": " << r.output;
    std::printf("[ refused key ] %s: failed after %lld ms\n",
                manifest.empty() ? "no --manifest" : manifest.c_str(),
                static_cast<long long>(r.wall_ms));
  }
  EXPECT_EQ(builds_.load(), 0);
}

// Covers: `serve compile-worker` with a client key the farm does not allow (its ZAP handler says
// no) and with a wrong server public key (the farm drops the handshake): the worker prints
// "authentication failed for ADDR" and exits 3 (final: a supervisor does not restart it) within
// seconds, instead of running on and logging "broker silent; reconnecting" forever. The worker
// probes the CUDA toolkit before it connects, so this needs one.
TEST_F(CompileFarmCurveCli, ARefusedWorkerExitsThreeNamingTheFarm) {
  if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no CUDA toolkit";
  for (const std::string manifest : {"stranger.toml", "impostor.toml"}) {
    const CliRun r = run_cli("serve compile-worker --connect " + broker_->worker_endpoint() +
                             " --jobs 1 --cache-dir " + (root_ / "cache").string() +
                             " --manifest " + (root_ / manifest).string());
    EXPECT_EQ(r.exit_code, 3) << manifest << ": " << r.output;
    EXPECT_NE(r.output.find("authentication failed for " + broker_->worker_endpoint()),
              std::string::npos)
        << manifest << ": " << r.output;
    EXPECT_NE(r.output.find("pool.auth_failed"), std::string::npos) << r.output;
    // Process start-up and the toolchain probe included; the refusal itself takes milliseconds.
    EXPECT_LT(r.wall_ms, 15000) << manifest << ": " << r.output;
    std::printf("[ refused worker ] %s: exited %d after %lld ms\n", manifest.c_str(), r.exit_code,
                static_cast<long long>(r.wall_ms));
  }
  auto s = broker_->stats();
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->workers.size(), 1u) << "only the test's own worker may have registered";
}

}  // namespace
}  // namespace cuda_agent
