// End to end: the cuda-agent executable run as a user runs it, in a child process.
#include <gtest/gtest.h>

#include "tests/cli_runner.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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
}

TEST(Cli, LaunchNeedsExactlyOneMode) {
  ASSERT_FALSE(source_dir().empty());
  const std::string file = source_dir() + "/examples/two-nodes.toml";
  CmdResult none = run("launch " + file);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(
      none.output.find("say how to launch: --dry-run, --local, --ssh or --emit slurm|k8s DIR"),
      std::string::npos)
      << none.output;
  auto dir = temp_dir("launch_modes");
  CmdResult both = run("launch " + file + " --dry-run --emit slurm " + (dir / "out").string());
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("--dry-run and --emit cannot be combined"), std::string::npos)
      << both.output;
  CmdResult kind = run("launch " + file + " --emit helm " + (dir / "out").string());
  EXPECT_EQ(kind.exit_code, 2) << kind.output;
  EXPECT_NE(kind.output.find("unknown --emit kind 'helm': choose slurm or k8s"), std::string::npos)
      << kind.output;
  CmdResult image =
      run("launch " + file + " --emit slurm " + (dir / "out").string() + " --image x:1");
  EXPECT_EQ(image.exit_code, 2) << image.output;
  EXPECT_NE(image.output.find("--image applies to --emit k8s only"), std::string::npos)
      << image.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "out")) << "nothing is written on a usage error";
  std::filesystem::remove_all(dir);
}

// --local runs only this host's nodes and says so when there are none; --ssh checks every host
// before starting anything (here an ssh that fails for each) and needs a manifest file.
TEST(Cli, LaunchLocalAndSshRefuseWhatTheyCannotRun) {
  ASSERT_FALSE(source_dir().empty());
  const std::string file = source_dir() + "/examples/two-nodes.toml";
  CmdResult local = run("launch " + file + " --local");
  EXPECT_EQ(local.exit_code, 2) << local.output;
  EXPECT_NE(local.output.find("no node of " + file + " is this host (hosts: node-a, node-b)"),
            std::string::npos)
      << local.output;
  CmdResult no_file = run("launch --ssh");
  EXPECT_EQ(no_file.exit_code, 2) << no_file.output;
  EXPECT_NE(no_file.output.find("--ssh needs a manifest FILE"), std::string::npos)
      << no_file.output;
  CmdResult misplaced = run("launch " + file + " --dry-run --ssh-command ssh");
  EXPECT_EQ(misplaced.exit_code, 2) << misplaced.output;
  CmdResult refused = run("launch " + file + " --ssh --ssh-command false");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("refused before starting anything"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("host node-a"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("host node-b"), std::string::npos) << refused.output;
}

TEST(Cli, LaunchEmitWritesFilesAndRefusesANonEmptyDirWithoutForce) {
  ASSERT_FALSE(source_dir().empty());
  auto dir = temp_dir("launch_emit");
  const std::string file = source_dir() + "/examples/cluster-128.toml";
  CmdResult slurm = run("launch " + file + " --emit slurm " + (dir / "slurm").string());
  ASSERT_EQ(slurm.exit_code, 0) << slurm.output;
  EXPECT_NE(slurm.output.find("wrote " + (dir / "slurm/cluster-128.sbatch").string()),
            std::string::npos)
      << slurm.output;
  std::ifstream script(dir / "slurm/cluster-128.sbatch");
  std::string text((std::istreambuf_iterator<char>(script)), std::istreambuf_iterator<char>());
  // Every node agent gets the manifest's absolute path.
  EXPECT_NE(text.find("MANIFEST=" + std::filesystem::absolute(file).lexically_normal().string()),
            std::string::npos);

  CmdResult again = run("launch " + file + " --emit slurm " + (dir / "slurm").string());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("is not empty"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
  CmdResult forced =
      run("launch " + file + " --emit slurm " + (dir / "slurm").string() + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;

  CmdResult k8s =
      run("launch " + file + " --emit k8s " + (dir / "k8s").string() + " --image reg/ca:1");
  ASSERT_EQ(k8s.exit_code, 0) << k8s.output;
  for (const char* name :
       {"configmap.yaml", "secret.yaml", "service.yaml", "statefulset-coordinator.yaml",
        "statefulset-compile.yaml", "statefulset-learner.yaml", "statefulset-rollout.yaml",
        "statefulset-bench.yaml"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "k8s" / name)) << name << "\n" << k8s.output;
  }
  std::ifstream sts(dir / "k8s/statefulset-learner.yaml");
  std::string yaml((std::istreambuf_iterator<char>(sts)), std::istreambuf_iterator<char>());
  EXPECT_NE(yaml.find("image: \"reg/ca:1\""), std::string::npos) << yaml;
  std::filesystem::remove_all(dir);
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
