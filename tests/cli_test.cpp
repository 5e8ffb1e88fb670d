// End to end: the cuda-agent executable run as a user runs it, in a child process.
#include <gtest/gtest.h>

#include "tests/cli_runner.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using cuda_agent::testing::CmdResult;
CmdResult run(const std::string& args) { return cuda_agent::testing::run_cli(args); }

std::string source_dir() {
  const char* s = std::getenv("CUDA_AGENT_SOURCE_DIR");
  return s ? s : "";
}

std::filesystem::path temp_dir(const char* name) {
  auto d = std::filesystem::temp_directory_path() /
           (std::string("ca_cli_") + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(Cli, VersionAndHelp) {
  CmdResult v = run("--version");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("cuda-agent 0."), std::string::npos) << v.output;
  CmdResult h = run("--help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* cmd : {"manifest", "launch", "keys", "gpu", "model"}) {
    EXPECT_NE(h.output.find(cmd), std::string::npos) << cmd << " missing from --help";
  }
  EXPECT_EQ(run("no-such-command").exit_code, 2);
}

TEST(Cli, ExampleManifestsPassCheck) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set (run through ctest)";
  for (const char* f : {"single-machine.toml", "two-nodes.toml", "cluster-128.toml"}) {
    CmdResult r = run("manifest check " + source_dir() + "/examples/" + f);
    EXPECT_EQ(r.exit_code, 0) << f << ": " << r.output;
    EXPECT_NE(r.output.find(": ok"), std::string::npos) << r.output;
  }
}

TEST(Cli, MalformedManifestFailsWithFileLineAndKey) {
  auto dir = temp_dir("bad");
  std::ofstream(dir / "run.toml") << "[run]\nname = \"x\"\nnmae = 3\n";
  CmdResult r = run("manifest check " + (dir / "run.toml").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("run.toml:3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nmae"), std::string::npos) << r.output;
  // Every command that reads a manifest reports the same way.
  CmdResult l = run("launch --dry-run " + (dir / "run.toml").string());
  EXPECT_EQ(l.exit_code, 2) << l.output;
  EXPECT_NE(l.output.find("run.toml:3"), std::string::npos) << l.output;
  std::filesystem::remove_all(dir);
}

TEST(Cli, LaunchDryRunPrintsOneBlockPerNode) {
  ASSERT_FALSE(source_dir().empty());
  CmdResult r = run("launch --dry-run " + source_dir() + "/examples/cluster-128.toml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t blocks = 0;
  // One "# host: N GPUs; roles: ..." header per node block.
  for (size_t pos = 0; (pos = r.output.find("\n# ", pos)) != std::string::npos; ++pos) ++blocks;
  EXPECT_EQ(blocks, 20u) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("serve learner"), std::string::npos);
  EXPECT_NE(r.output.find("NCCL_NVLS_ENABLE=0"), std::string::npos);
  CmdResult d = run("launch --dry-run");  // the embedded single-machine default
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("serve bench-worker"), std::string::npos) << d.output;
  // Its processes use the default built into them: no --manifest argument.
  EXPECT_EQ(d.output.find("--manifest"), std::string::npos) << d.output;
  EXPECT_EQ(run("launch").exit_code, 2);  // --dry-run is required until the roles land
}

TEST(Cli, KeysGenerateWritesFilesTheManifestAccepts) {
  auto dir = temp_dir("keys");
  for (const char* name : {"server", "client"}) {
    CmdResult r = run("keys generate --dir " + (dir / "keys").string() + " --name " + name);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_EQ(run("keys generate --dir " + (dir / "keys").string() + " --name server").exit_code, 2);
  std::ofstream(dir / "secure.toml")
      << "[security]\nserver_secret_key_file = \"keys/server.key_secret\"\n"
         "server_public_key_file = \"keys/server.key\"\n"
         "client_secret_key_file = \"keys/client.key_secret\"\n\n"
         "[[nodes]]\nhost = \"localhost\"\nroles = [\"coordinator\", \"compile\"]\n";
  CmdResult ok = run("manifest check " + (dir / "secure.toml").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  std::filesystem::remove(dir / "keys" / "client.key_secret");
  CmdResult missing = run("manifest check " + (dir / "secure.toml").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("client_secret_key_file"), std::string::npos) << missing.output;
  std::filesystem::remove_all(dir);
}

TEST(Cli, ModelTokenizeRoundTripsThroughTheTinyTokenizer) {
  auto dir = temp_dir("tokenizer");
  CmdResult init = run("model init-tokenizer " + dir.string());
  ASSERT_EQ(init.exit_code, 0) << init.output;
  ASSERT_TRUE(std::filesystem::exists(dir / "tokenizer.json"));
  // Two JSONL texts in; ids out; the ids decode back to the texts.
  std::ofstream(dir / "in.jsonl")
      << "{\"text\": \"<|im_start|>user\\nhi \\u00e9 \\ud83d\\ude80\"}\n"
      << "{\"text\": \"  x\\n\\n\\n\"}\n";
  CmdResult ids = run("model tokenize " + dir.string() + " --jsonl < " +
                      (dir / "in.jsonl").string() + " > " + (dir / "ids.jsonl").string());
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  CmdResult back =
      run("model tokenize " + dir.string() + " --decode < " + (dir / "ids.jsonl").string());
  ASSERT_EQ(back.exit_code, 0) << back.output;
  EXPECT_EQ(
      back.output,
      "{\"text\":\"<|im_start|>user\\nhi \u00e9 \U0001F680\"}\n{\"text\":\"  x\\n\\n\\n\"}\n");
  // A line that is not JSON gets an error line and exit code 1; a missing tokenizer exits 2.
  std::ofstream(dir / "bad.jsonl") << "not json\n";
  CmdResult bad =
      run("model tokenize " + dir.string() + " --jsonl < " + (dir / "bad.jsonl").string());
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("stdin:1"), std::string::npos) << bad.output;
  EXPECT_EQ(run("model tokenize " + (dir / "nowhere").string() + " < /dev/null").exit_code, 2);
  std::filesystem::remove_all(dir);
}

TEST(Cli, GpuListAnswersWithOrWithoutAGpu) {
  CmdResult r = run("gpu list --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"devices\""), std::string::npos) << r.output;
}

// `cuda-agent bench` on a machine without a GPU says so and exits 1 (gpu_bench/bench_gpu_test.cpp
// and scripts/bench-gpu-node cover the machine with one).
TEST(Cli, BenchWithoutAGpuSaysSo) {
  CmdResult list = run("gpu list --json");
  if (list.output.find("\"index\"") != std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  const std::string dir = std::string(SOURCE_DIR) + "/gpu_bench/testdata/scale_relu";
  CmdResult r = run("bench --task " + dir + "/model.py --solution " + dir);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no GPU on this machine"), std::string::npos) << r.output;
  CmdResult j = run("bench --json --task " + dir + "/model.py --solution " + dir);
  EXPECT_NE(j.output.find("\"bench.no_gpu\""), std::string::npos) << j.output;
  EXPECT_EQ(run("bench --task " + dir + "/model.py --solution /nonexistent").exit_code, 2);
}

}  // namespace
