// `cuda-agent sim` end to end (issue 26): a small manifest simulated for a few real seconds with
// the real coordinator, brokers and store as children. What must hold: steps are trained from
// simulated episodes, every call is timed, nothing healthy is taken for suspect, the silent probe
// is suspect within the heartbeat timeout + 1 s and lost within twice it + 1 s, and the children
// are gone afterwards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

class SimCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sim_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write_manifest(const std::string& extra_node_keys = "") {
    const fs::path p = dir_ / "small.toml";
    std::ofstream(p) << R"([run]
name = "sim-small"
heartbeat_interval_ms = 200
heartbeat_timeout_ms = 1500
[rollout]
max_turns = 4
max_new_tokens_per_turn = 64
concurrent_episodes = 12
[learner]
stage = "agentic-ppo"
agentic_steps = 1000
batch_episodes = 8
staleness = 1
checkpoint_every_steps = 2
[compile]
jobs_per_worker = 4
[[nodes]]
host = "localhost"
gpus = 0
roles = ["coordinator", "learner", "rollout", "compile"]
compile_workers = 2
)" << extra_node_keys;
    return p;
  }
  fs::path dir_;
};

TEST_F(SimCli, SmallManifestTrainsAndTimesEveryCall) {
  const fs::path manifest = write_manifest();
  const fs::path json = dir_ / "report.json";
  // 12 real seconds at speedup 5: 60 simulated seconds; episodes of ~4 turns of <= 64 tokens at
  // 2 ms a token and 1 s compiles (0.2 s real).
  auto r = run_cli("sim --manifest " + manifest.string() + " --work-dir " + (dir_ / "w").string() +
                   " --duration 60 --speedup 5 --mean-turns 3 --decode-ms-per-token 2" +
                   " --model-params 5e8 --probe-after 2 --json " + json.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["rollout_workers"], 1) << r.output;
  EXPECT_EQ(j["compile_workers"], 2);
  EXPECT_EQ(j["episode_slots"], 12);
  EXPECT_GE(j["steps"].get<int>(), 2) << r.output;
  EXPECT_GE(j["checkpoints"].get<int>(), 1) << r.output;
  EXPECT_GE(j["episodes_acknowledged"].get<int>(), 16) << r.output;
  EXPECT_GT(j["dispatch"]["count"].get<int>(), 0);
  EXPECT_GT(j["store_ack"]["count"].get<int>(), 0);
  EXPECT_GT(j["compile_call"]["count"].get<int>(), 0);
  EXPECT_EQ(j["bench_call"]["count"], 0);  // no bench GPU in this manifest
  EXPECT_EQ(j["failed_calls"], 0) << r.output;
  EXPECT_EQ(j["false_suspects"], 0) << r.output;
  EXPECT_EQ(j["false_lost"], 0) << r.output;
  EXPECT_TRUE(j["child_exits"].empty()) << r.output;
  EXPECT_GT(j["coordinator_cores"].get<double>(), 0.0);
  // The probe: suspect after the timeout (1.5 s) and within it + 1 s; lost within twice it + 1 s.
  const double suspect = j["probe_suspect_s"], lost = j["probe_lost_s"];
  EXPECT_GE(suspect, 1.5 - 0.2 - 0.15) << r.output;  // its last heartbeat may precede the stop
  EXPECT_LE(suspect, 1.5 + 1.0) << r.output;
  EXPECT_GT(lost, suspect) << r.output;
  EXPECT_LE(lost, 3.0 + 1.0) << r.output;
  // The report names what it measured, and the children are gone.
  EXPECT_NE(r.output.find("store acknowledgement"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("silent probe"), std::string::npos) << r.output;
  // "[s]erve": the pattern does not match the shell that runs pgrep.
  auto ps = testing::run_shell("pgrep -f '[s]erve .*" + (dir_ / "w" / "sim.toml").string() + "'");
  EXPECT_NE(ps.exit_code, 0) << "children left running: " << ps.output;
}

TEST_F(SimCli, BadInputIsNamed) {
  auto missing = run_cli("sim --manifest " + (dir_ / "nope.toml").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("nope.toml"), std::string::npos) << missing.output;

  const fs::path manifest = write_manifest();
  fs::create_directories(dir_ / "used");
  std::ofstream(dir_ / "used" / "keep") << "x";
  auto used = run_cli("sim --manifest " + manifest.string() + " --work-dir " +
                      (dir_ / "used").string() + " --duration 5");
  EXPECT_EQ(used.exit_code, 2) << used.output;
  EXPECT_NE(used.output.find("not empty"), std::string::npos) << used.output;
  EXPECT_TRUE(fs::exists(dir_ / "used" / "keep"));  // nothing already there is touched

  auto setting = run_cli("sim --manifest " + manifest.string() + " --set learner.nonsense=1");
  EXPECT_EQ(setting.exit_code, 2) << setting.output;
  EXPECT_NE(setting.output.find("nonsense"), std::string::npos) << setting.output;
}

}  // namespace
}  // namespace cuda_agent
