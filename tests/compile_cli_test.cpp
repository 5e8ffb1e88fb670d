// `cuda-agent compile`, `serve compile-farm`, `serve compile-worker` and `artifacts get` driven as
// a user does: JSON report, a policy finding, a missing directory, the artifact kept in a run
// store and fetched back byte for byte, and a build through a farm of separate processes.
// Needs the CUDA toolkit (skipped without it).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "core/content_hash.h"
#include "store_child.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::run_cli;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CompileCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no CUDA toolkit";
    std::random_device rd;
    nonce_ = std::to_string(rd()) + "-" + std::to_string(::getpid());
    root_ = fs::temp_directory_path() / ("compile_cli_test-" + nonce_);
    // A solution whose text is unique to this run (so no cache of an earlier run answers).
    write(root_ / "sol/kernels/scale_relu.cu", "// " + nonce_ + R"(
#include <cuda_runtime.h>
__global__ void scale_relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(2.f * x[i], 0.f);
}
extern "C" void scale_relu_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)");
    write(root_ / "sol/model_new.py", "import kernels\n");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string dir(const char* sub) const { return (root_ / sub).string(); }

  std::string nonce_;
  fs::path root_;
};

TEST_F(CompileCliTest, JsonReportStoreAndFetchTheArtifact) {
  auto r = run_cli("compile " + dir("sol") + " --json --store " + dir("store"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  const std::string hash = j.at("artifact_hash");
  EXPECT_EQ(hash.size(), 64u);
  ASSERT_EQ(j.at("launchers").size(), 1u);
  EXPECT_EQ(j["launchers"][0]["name"], "scale_relu_launch");
  EXPECT_EQ(j["launchers"][0]["params"].size(), 4u);
  ASSERT_EQ(j.at("kernels").size(), 1u);
  EXPECT_EQ(j["kernels"][0]["name"], "scale_relu(float const*, float*, long long)");
  EXPECT_GT(j["kernels"][0]["registers"].get<int>(), 0);

  const std::string out = dir("fetched.so");
  r = run_cli("artifacts get " + hash + " --store " + dir("store") + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string bytes = read(out);
  EXPECT_EQ(bytes.size(), j.at("artifact_size_bytes").get<std::size_t>());
  EXPECT_EQ(content_hash(bytes), hash) << "the fetched artifact is not the one built";

  r = run_cli("artifacts get " + std::string(64, 'a') + " --store " + dir("store") + " -o " + out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(std::string(64, 'a')), std::string::npos) << r.output;
  EXPECT_EQ(read(out), bytes) << "a failed fetch must not overwrite what is there";
}

TEST_F(CompileCliTest, PolicyFindingNamesFileLineAndRule) {
  write(root_ / "sol/kernels/extra.cu", "#include <cuda_runtime.h>\n\n#include <dlfcn.h>\n");
  auto r = run_cli("compile " + dir("sol"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kernels/extra.cu:3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("include.forbidden"), std::string::npos) << r.output;
}

TEST_F(CompileCliTest, MissingSolutionDirectoryIsAClearError) {
  auto r = run_cli("compile " + dir("nothing-here"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing-here"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kernels/"), std::string::npos) << r.output;
}

TEST_F(CompileCliTest, BuildsThroughAFarmOfSeparateProcesses) {
  Child farm({CUDA_AGENT_EXE, "--log-level", "warn", "serve", "compile-farm", "--clients",
              "tcp://127.0.0.1:0", "--workers", "tcp://127.0.0.1:0"});
  ASSERT_TRUE(farm.started());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto line = farm.read_line(deadline);
  ASSERT_TRUE(line) << "the farm printed no endpoints";
  // "compile farm: clients tcp://127.0.0.1:P, workers tcp://127.0.0.1:Q"
  const auto c = line->find("clients ");
  const auto w = line->find(", workers ");
  ASSERT_TRUE(c != std::string::npos && w != std::string::npos) << *line;
  const std::string clients = line->substr(c + 8, w - (c + 8));
  const std::string workers = line->substr(w + 10);

  Child worker({CUDA_AGENT_EXE, "--log-level", "warn", "serve", "compile-worker", "--connect",
                workers, "--jobs", "2", "--cache-dir", dir("worker-cache")});
  ASSERT_TRUE(worker.started());
  auto r = run_cli("compile " + dir("sol") + " --json --farm " + clients);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j.at("launchers").size(), 1u);

  // Both roles stop cleanly on SIGTERM.
  ASSERT_EQ(::kill(worker.pid(), SIGTERM), 0);
  EXPECT_EQ(worker.wait_exit(std::chrono::steady_clock::now() + std::chrono::seconds(30)), 0);
  ASSERT_EQ(::kill(farm.pid(), SIGTERM), 0);
  EXPECT_EQ(farm.wait_exit(std::chrono::steady_clock::now() + std::chrono::seconds(30)), 0);
}

}  // namespace
}  // namespace cuda_agent
