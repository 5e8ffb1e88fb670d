// `cuda-agent launch --emit slurm|k8s` output (cluster/emit.h):
//  - golden files for every manifest in examples/, for both kinds;
//  - the sbatch scripts pass `bash -n`, and one runs against a fake `srun` that records its
//    arguments (so the shell quoting of hosts, paths and interfaces is checked by a shell);
//  - every Kubernetes file parses as YAML and the objects fit together
//    (cluster/testdata/check_k8s_yaml.py, python3 with Debian's python3-yaml), and the ConfigMap's
//    manifest loads with the Secret's keys and names exactly the pods the StatefulSets make;
//  - bad input: an unreadable key file, an unknown kind, a non-empty directory, a host Slurm
//    cannot take.
//
// Golden files live in cluster/testdata/emit/<example>/<slurm|k8s>/. After an intended change of
// the output, rewrite them and review the diff:
//   UPDATE_GOLDEN=1 ctest --test-dir BUILD -R cluster_emit_test
// The Slurm files are emitted with the manifest path /shared/cuda-agent/<example>.toml and the
// Kubernetes files with the image cuda-agent:golden, so they change with neither the checkout
// nor the version.
#include "cluster/emit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "core/version.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char* const kExamples[] = {"single-machine", "single-machine-cpu", "two-nodes",
                                 "cluster-128"};

fs::path source_dir() {
  const char* dir = std::getenv("CUDA_AGENT_SOURCE_DIR");
  return dir == nullptr ? fs::path() : fs::path(dir);
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A shell command's exit code and output (stdout and stderr together).
std::pair<int, std::string> run_shell(const std::string& command) {
  std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), p)) > 0) out.append(buffer.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string quote(const fs::path& path) { return "'" + path.string() + "'"; }

class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("ca_emit_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Manifest load_example(const std::string& name) {
  Expected<Manifest> m = load_manifest(source_dir() / "examples" / (name + ".toml"));
  if (!m) {
    ADD_FAILURE() << m.error().to_string();
    return {};
  }
  return *m;
}

EmitOptions golden_options(const std::string& example) {
  return {.manifest_path = "/shared/cuda-agent/" + example + ".toml", .image = "cuda-agent:golden"};
}

std::vector<EmittedFile> emit_ok(EmitKind kind, const Manifest& m, const EmitOptions& options) {
  Expected<std::vector<EmittedFile>> files = emit_files(kind, m, options);
  if (!files) {
    ADD_FAILURE() << files.error().to_string();
    return {};
  }
  return *files;
}

struct GoldenCase {
  const char* example;
  EmitKind kind;
};

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.example << " " << to_string(c.kind);
}

class EmitGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(EmitGoldenTest, MatchesGoldenFiles) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  const std::string example = GetParam().example;
  const EmitKind kind = GetParam().kind;
  Manifest m = load_example(example);
  ASSERT_FALSE(m.nodes.empty());
  std::vector<EmittedFile> files = emit_ok(kind, m, golden_options(example));
  ASSERT_FALSE(files.empty());
  const fs::path golden =
      source_dir() / "cluster/testdata/emit" / example / std::string(to_string(kind));

  if (std::getenv("UPDATE_GOLDEN") != nullptr) {
    fs::remove_all(golden);
    fs::create_directories(golden);
    for (const EmittedFile& f : files) std::ofstream(golden / f.name, std::ios::binary) << f.text;
    GTEST_SKIP() << "rewrote " << golden;
  }

  std::set<std::string> golden_names, emitted_names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(golden, ec))
    golden_names.insert(entry.path().filename().string());
  for (const EmittedFile& f : files) emitted_names.insert(f.name);
  EXPECT_EQ(emitted_names, golden_names)
      << golden << ": the files differ (UPDATE_GOLDEN=1 rewrites them)";

  TempDir actual("golden");
  for (const EmittedFile& f : files) {
    if (!golden_names.contains(f.name)) continue;
    if (read_file(golden / f.name) == f.text) continue;
    std::ofstream(actual.path() / f.name, std::ios::binary) << f.text;
    auto [rc, diff] = run_shell("diff -u " + quote(golden / f.name) + " " +
                                quote(actual.path() / f.name) + " | head -80");
    ADD_FAILURE() << (golden / f.name) << " differs (UPDATE_GOLDEN=1 rewrites it):\n" << diff;
  }
}

std::vector<GoldenCase> all_cases() {
  std::vector<GoldenCase> cases;
  for (const char* example : kExamples) {
    cases.push_back({example, EmitKind::kSlurm});
    cases.push_back({example, EmitKind::kKubernetes});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Examples, EmitGoldenTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           std::string name = std::string(info.param.example) + "_" +
                                              std::string(to_string(info.param.kind));
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(EmitSlurmTest, EveryExampleScriptPassesBashN) {
  for (const char* example : kExamples) {
    Manifest m = load_example(example);
    TempDir dir(std::string("bash_") + example);
    std::vector<EmittedFile> files = emit_ok(EmitKind::kSlurm, m, golden_options(example));
    ASSERT_TRUE(write_emitted_files(dir.path(), files, false));
    ASSERT_EQ(files.size(), 1u);
    auto [rc, out] = run_shell("bash -n " + quote(dir.path() / files[0].name));
    EXPECT_EQ(rc, 0) << example << ": " << out;
  }
}

// A two-node manifest whose interfaces, paths and manifest path need quoting everywhere.
constexpr const char* kAwkwardManifest = R"toml([run]
name = "Odd_Run.1"
checkpoint_dir = "/shared/check points/it's \"here\""
nccl_socket_ifname = "^lo,docker$(x)"
control_interface = "eth 0"

[store]
dir = "store dir/$HOME"

[[nodes]]
host = "node-a"
gpus = 2
roles = ["coordinator", "compile", "rollout"]
rollout_gpus = [0, 1]

[[nodes]]
host = "node-b.example"
gpus = 4
roles = ["learner"]
learner_gpus = [0, 1, 2, 3]
)toml";

TEST(EmitSlurmTest, ScriptRunsEveryStepWithQuotedArguments) {
  TempDir dir("fake_srun");
  Expected<Manifest> m = parse_manifest(kAwkwardManifest, "odd.toml", dir.path());
  ASSERT_TRUE(m) << m.error().to_string();
  const std::string manifest_path = "/shared/my runs/it's \"odd\" $HOME.toml";
  std::vector<EmittedFile> files = emit_ok(EmitKind::kSlurm, *m, {.manifest_path = manifest_path});
  ASSERT_TRUE(write_emitted_files(dir.path() / "out", files, false));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0].text, HasSubstr("#SBATCH hetjob"));  // 2 and 4 GPUs: two components
  EXPECT_THAT(files[0].text, HasSubstr("#SBATCH --job-name=Odd_Run.1\n"));

  // A fake srun that records its arguments, one per bracket, and the environment it was given,
  // as one line in one write: the script starts its steps together, and two sruns writing a line
  // in pieces interleaved them (a flaky failure seen in CI-like load).
  fs::create_directories(dir.path() / "bin");
  std::ofstream(dir.path() / "bin/srun")
      << "#!/bin/sh\n"
         "line=$(printf '[%s]' \"$@\"; printf ' NCCL_SOCKET_IFNAME=[%s] CONTROL=[%s] NVLS=[%s]' "
         "\"$NCCL_SOCKET_IFNAME\" \"$CUDA_AGENT_CONTROL_INTERFACE\" \"$NCCL_NVLS_ENABLE\")\n"
         "printf '%s\\n' \"$line\" >> \"$SRUN_LOG\"\n";
  fs::permissions(dir.path() / "bin/srun", fs::perms::owner_all);
  auto [rc, out] =
      run_shell("cd " + quote(dir.path()) + " && SRUN_LOG=" + quote(dir.path() / "srun.log") +
                " PATH=" + quote(dir.path() / "bin") + ":\"$PATH\" bash " +
                quote(dir.path() / "out" / files[0].name));
  ASSERT_EQ(rc, 0) << out;
  std::istringstream log(read_file(dir.path() / "srun.log"));
  std::set<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.insert(line);
  const std::string env = " NCCL_SOCKET_IFNAME=[^lo,docker$(x)] CONTROL=[eth 0] NVLS=[0]";
  auto step = [&](int group, const std::string& host) {
    return "[--het-group=" + std::to_string(group) + "][--nodes=1][--ntasks=1][--nodelist=" + host +
           "][--output=%x-%j-" + host + ".out][cuda-agent][node-agent][--manifest][" +
           manifest_path + "][--host][" + host + "]" + env;
  };
  EXPECT_EQ(lines, (std::set<std::string>{step(0, "node-a"), step(1, "node-b.example")}));
}

TEST(EmitSlurmTest, RefusesHostsSlurmCannotName) {
  std::string text = kAwkwardManifest;
  text.replace(text.find("node-b.example"), 14, "gpu[01]");
  Expected<Manifest> m = parse_manifest(text, "odd.toml", "/tmp");
  ASSERT_TRUE(m) << m.error().to_string();
  Expected<std::vector<EmittedFile>> files = emit_slurm(*m, {});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().code, "emit.bad_host");
  EXPECT_THAT(files.error().message, HasSubstr("'gpu[01]' of node #2 (line 16)"));

  text = kAwkwardManifest;
  text.replace(text.find("node-a"), 6, "localhost");
  m = parse_manifest(text, "odd.toml", "/tmp");
  ASSERT_TRUE(m) << m.error().to_string();
  files = emit_slurm(*m, {});
  ASSERT_FALSE(files);
  EXPECT_THAT(files.error().message, HasSubstr("'localhost' of node #1"));
  EXPECT_THAT(files.error().message, HasSubstr("names the local machine in a 2-node run"));
}

// Runs check_k8s_yaml.py on `dir`; its output lines, sorted. `out` receives the ConfigMap's
// manifest and the Secret's files.
std::vector<std::string> check_k8s_dir(const fs::path& dir, const fs::path& out) {
  fs::create_directories(out);
  auto [rc, output] =
      run_shell("python3 -I " + quote(source_dir() / "cluster/testdata/check_k8s_yaml.py") + " " +
                quote(dir) + " " + quote(out));
  if (rc != 0) {
    ADD_FAILURE() << dir << ": " << output
                  << "\n(the check needs python3 with the yaml module: apt-get install "
                     "python3-yaml, listed in scripts/debian-packages.txt)";
    return {};
  }
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The ConfigMap's manifest, loaded with the Secret's key files in place of kPodKeyDir.
Expected<Manifest> load_pod_manifest(const fs::path& out) {
  std::string text = read_file(out / "manifest.toml");
  const std::string key_dir(kPodKeyDir);
  for (std::size_t pos = 0; (pos = text.find(key_dir, pos)) != std::string::npos;)
    text.replace(pos, key_dir.size(), (out / "keys").string());
  return parse_manifest(text, "configmap:manifest.toml", out);
}

TEST(EmitK8sTest, EveryExampleParsesAndNamesItsPods) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  for (const char* example : kExamples) {
    SCOPED_TRACE(example);
    Manifest m = load_example(example);
    TempDir dir(std::string("k8s_") + example);
    ASSERT_TRUE(write_emitted_files(
        dir.path() / "yaml", emit_ok(EmitKind::kKubernetes, m, golden_options(example)), false));
    std::vector<std::string> lines = check_k8s_dir(dir.path() / "yaml", dir.path() / "out");
    ASSERT_FALSE(lines.empty());

    Expected<Manifest> pods = load_pod_manifest(dir.path() / "out");
    ASSERT_TRUE(pods) << pods.error().to_string();
    std::set<std::string> expected_pods, listed_pods;
    for (const NodeSpec& node : pods->nodes)
      expected_pods.insert("pod " + node.host + " " + std::to_string(node.gpus));
    for (const std::string& line : lines) {
      if (line.starts_with("pod ")) listed_pods.insert(line);
    }
    EXPECT_EQ(listed_pods, expected_pods);
    ASSERT_EQ(pods->nodes.size(), m.nodes.size());
    // Apart from hosts and paths, the pods run the manifest that was given.
    EXPECT_EQ(pods->run.name, m.run.name);
    EXPECT_EQ(pods->learner.batch_episodes, m.learner.batch_episodes);
    for (std::size_t i = 0; i < m.nodes.size(); ++i)
      EXPECT_EQ(pods->nodes[i].roles, m.nodes[i].roles);
    if (m.security.enabled()) {
      EXPECT_EQ(read_file(dir.path() / "out/keys/server.key_secret"),
                read_file(m.paths.server_secret_key_file));
      EXPECT_EQ(read_file(dir.path() / "out/keys/client.key_secret"),
                read_file(m.paths.client_secret_key_file));
      EXPECT_EQ(read_file(dir.path() / "out/keys/server.key"),
                read_file(m.paths.server_public_key_file));
    }
  }
}

TEST(EmitK8sTest, QuotesPathsAndInterfaces) {
  TempDir dir("k8s_quoting");
  Expected<Manifest> m = parse_manifest(kAwkwardManifest, "odd.toml", dir.path());
  ASSERT_TRUE(m) << m.error().to_string();
  ASSERT_TRUE(
      write_emitted_files(dir.path() / "yaml", emit_ok(EmitKind::kKubernetes, *m, {}), false));
  EXPECT_TRUE(fs::exists(dir.path() / "yaml/statefulset-coordinator.yaml"));
  EXPECT_TRUE(fs::exists(dir.path() / "yaml/statefulset-learner.yaml"));
  std::vector<std::string> lines = check_k8s_dir(dir.path() / "yaml", dir.path() / "out");
  std::set<std::string> got(lines.begin(), lines.end());
  for (const char* sts : {"odd-run-1-coordinator", "odd-run-1-learner"}) {
    const std::string s = sts;
    // Kubernetes reads "$$" as "$": the value the processes see is the manifest's.
    EXPECT_TRUE(got.contains("env " + s + " NCCL_SOCKET_IFNAME ^lo,docker$$(x)")) << s;
    EXPECT_TRUE(got.contains("env " + s + " CUDA_AGENT_CONTROL_INTERFACE eth 0")) << s;
    EXPECT_TRUE(got.contains("env " + s + " NCCL_NVLS_ENABLE 0")) << s;
    EXPECT_TRUE(got.contains("mount " + s + " /var/lib/cuda-agent/store dir/$HOME")) << s;
    EXPECT_TRUE(got.contains("mount " + s + " /shared/check points/it's \"here\"")) << s;
  }
  EXPECT_TRUE(got.contains("pod odd-run-1-coordinator-0.odd-run-1 2"));
  EXPECT_TRUE(got.contains("pod odd-run-1-learner-0.odd-run-1 4"));
  Expected<Manifest> pods = load_pod_manifest(dir.path() / "out");
  ASSERT_TRUE(pods) << pods.error().to_string();
  EXPECT_EQ(pods->store.dir, "/var/lib/cuda-agent/store dir/$HOME");
  EXPECT_EQ(pods->run.nccl_socket_ifname, "^lo,docker$(x)");
  EXPECT_EQ(pods->nodes[1].host, "odd-run-1-learner-0.odd-run-1");
}

TEST(EmitK8sTest, UnreadableKeyFileIsNamed) {
  TempDir dir("keys");
  fs::copy(source_dir() / "examples/keys", dir.path() / "keys");
  std::string text = read_file(source_dir() / "examples/two-nodes.toml");
  text.replace(text.find("[store]"), 0,
               "[security]\nserver_secret_key_file = \"keys/server.key_secret\"\n"
               "client_secret_key_file = \"keys/client.key_secret\"\n"
               "server_public_key_file = \"keys/server.key\"\n\n");
  std::ofstream(dir.path() / "run.toml") << text;
  Expected<Manifest> m = load_manifest(dir.path() / "run.toml");
  ASSERT_TRUE(m) << m.error().to_string();
  ASSERT_TRUE(emit_k8s(*m, {}));
  fs::remove(dir.path() / "keys/client.key_secret");  // gone between loading and emitting

  Expected<std::vector<EmittedFile>> files = emit_k8s(*m, {});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().code, "emit.key_file_unreadable");
  EXPECT_THAT(files.error().message, HasSubstr("[security] client_secret_key_file"));
  EXPECT_THAT(files.error().message,
              HasSubstr("cannot read key file " + (dir.path() / "keys/client.key_secret").string() +
                        ": No such file or directory"));
}

TEST(EmitTest, UnknownKindNamesTheWordAndTheChoices) {
  EXPECT_EQ(*parse_emit_kind("slurm"), EmitKind::kSlurm);
  EXPECT_EQ(*parse_emit_kind("k8s"), EmitKind::kKubernetes);
  Expected<EmitKind> helm = parse_emit_kind("helm");
  ASSERT_FALSE(helm);
  EXPECT_EQ(helm.error().code, "emit.unknown_kind");
  EXPECT_EQ(helm.error().message, "unknown --emit kind 'helm': choose slurm or k8s");
}

TEST(EmitTest, DefaultImageIsThisVersion) {
  EXPECT_EQ(default_image(), std::string("cuda-agent:") + build_info::kVersion);
  Manifest m = load_example("single-machine");
  std::vector<EmittedFile> files = emit_ok(EmitKind::kKubernetes, m, {});
  ASSERT_FALSE(files.empty());
  EXPECT_THAT(files.back().text, HasSubstr("image: \"" + default_image() + "\"\n"));
}

mode_t mode_of(const fs::path& file) {
  struct stat st {};
  ::stat(file.c_str(), &st);
  return st.st_mode & 0777;
}

TEST(EmitTest, WritesAtomicallyAndRefusesANonEmptyDirectoryWithoutForce) {
  TempDir dir("write");
  const fs::path out = dir.path() / "a/b";  // parents are created
  std::vector<EmittedFile> files = {{.name = "x.sbatch", .text = "one\n", .executable = true},
                                    {.name = "secret.yaml", .text = "s\n", .secret = true},
                                    {.name = "plain.yaml", .text = "p\n"}};
  ::umask(022);
  Expected<WrittenFiles> w = write_emitted_files(out, files, false);
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(w->written.size(), 3u);
  EXPECT_TRUE(w->others.empty());
  EXPECT_EQ(mode_of(out / "x.sbatch"), 0755u);
  EXPECT_EQ(mode_of(out / "secret.yaml"), 0600u);
  EXPECT_EQ(mode_of(out / "plain.yaml"), 0644u);

  files[0].text = "two\n";
  Expected<WrittenFiles> again = write_emitted_files(out, files, false);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "emit.dir_not_empty");
  EXPECT_THAT(again.error().message, HasSubstr(out.string() + " is not empty (3 entries"));
  EXPECT_THAT(again.error().message, HasSubstr("--force"));
  EXPECT_EQ(read_file(out / "x.sbatch"), "one\n");  // untouched

  std::ofstream(out / "stale.yaml") << "old\n";
  Expected<WrittenFiles> forced = write_emitted_files(out, files, true);
  ASSERT_TRUE(forced) << forced.error().to_string();
  EXPECT_EQ(read_file(out / "x.sbatch"), "two\n");
  EXPECT_EQ(forced->others, (std::vector<fs::path>{out / "stale.yaml"}));
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(out)) names.insert(entry.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{"plain.yaml", "secret.yaml", "stale.yaml", "x.sbatch"}))
      << "no temporary file is left behind";

  std::ofstream(dir.path() / "file") << "x";
  Expected<WrittenFiles> not_dir = write_emitted_files(dir.path() / "file", files, true);
  ASSERT_FALSE(not_dir);
  EXPECT_EQ(not_dir.error().code, "emit.not_a_directory");
}

}  // namespace
}  // namespace cuda_agent
