// Manifest validation: each malformed manifest fails with its code, and its message names the
// file, the line (marked "# <-" in the case's text) and the key. Then the examples load.
#include "cluster/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace cuda_agent {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::filesystem::path source_dir() {
  const char* dir = std::getenv("CUDA_AGENT_SOURCE_DIR");
  return dir == nullptr ? std::filesystem::path() : std::filesystem::path(dir);
}

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The line holding "# <-", or 0.
int marked_line(std::string_view text) {
  std::size_t pos = text.find("# <-");
  if (pos == std::string_view::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + pos, '\n'));
}

// A directory with copies of the example keys and a malformed key file, for [security] cases;
// removed when the test binary exits.
struct TempDir {
  std::filesystem::path path;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::filesystem::path key_dir() {
  static const TempDir dir{[] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("cluster_manifest_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    if (!source_dir().empty()) {
      for (const char* name :
           {"server.key", "server.key_secret", "client.key", "client.key_secret"}) {
        std::filesystem::copy_file(source_dir() / "examples/keys" / name, d / name,
                                   std::filesystem::copy_options::overwrite_existing);
      }
    }
    std::ofstream(d / "garbage.key_secret") << "curve\n    public-key = \"not z85\"\n";
    return d;
  }()};
  return dir.path;
}

Expected<Manifest> parse(std::string_view text) {
  return parse_manifest(text, "bad.toml", key_dir());
}

constexpr const char* kCoordinator = R"(
[[nodes]]
host = "c"
roles = ["coordinator", "compile"]
)";

struct BadCase {
  const char* name;
  std::string text;  // the expected line carries "# <-"; none when the error has no line
  const char* code;
  const char* needle;  // the key (quoted as in the message) or the thing named
};

// The coordinator node (lines 2-4) followed by `text` (from line 5).
std::string with_coordinator(const std::string& text) { return kCoordinator + text; }

const BadCase kBadCases[] = {
    {"Syntax", "[run]\nseed = = 3  # <-\n", "manifest.syntax", "syntax error"},
    {"UnknownSection", with_coordinator("[rnu]  # <-\nname = \"x\"\n"), "manifest.unknown_section",
     "[rnu]: unknown section (did you mean 'run'?)"},
    {"UnknownKey", with_coordinator("[run]\nseed = 1\nnmae = \"x\"  # <-\n"),
     "manifest.unknown_key", "'nmae': unknown key (did you mean 'name'?)"},
    {"UnknownNodeKey", "[[nodes]]\nhost = \"c\"\ngpu = 2  # <-\nroles = [\"coordinator\"]\n",
     "manifest.unknown_key", "[[nodes]] #1 'gpu': unknown key (did you mean 'gpus'?)"},
    {"StringForInt", with_coordinator("[run]\nseed = \"7\"  # <-\n"), "manifest.wrong_type",
     "[run] 'seed': expected an integer, got a string"},
    {"FloatForInt", with_coordinator("[learner]\nbatch_episodes = 64.0  # <-\n"),
     "manifest.wrong_type", "'batch_episodes'"},
    {"SectionNotTable", std::string("run = 3  # <-\n") + kCoordinator, "manifest.wrong_type",
     "[run]: expected a section (table), got an integer"},
    {"NodesNotArray", "[nodes]  # <-\nhost = \"c\"\nroles = [\"coordinator\"]\n",
     "manifest.wrong_type", "'nodes'"},
    {"PortOutOfRange", with_coordinator("[run]\nport_base = 80  # <-\n"), "manifest.out_of_range",
     "'port_base': 80 is out of range (1024 to 65000)"},
    {"BatchEpisodesZero", with_coordinator("[learner]\nbatch_episodes = 0  # <-\n"),
     "manifest.out_of_range", "'batch_episodes'"},
    {"FractionOutOfRange", with_coordinator("[bench]\nchecked_trial_fraction = 1.5  # <-\n"),
     "manifest.out_of_range", "'checked_trial_fraction'"},
    {"NotInChoices", with_coordinator("[run]\nlog_level = \"verbose\"  # <-\n"),
     "manifest.invalid_choice", "'log_level': \"verbose\" is not one of"},
    {"BadRunName", with_coordinator("[run]\nname = \"my run\"  # <-\n"), "manifest.invalid_value",
     "'name'"},
    {"DotDotRunName", with_coordinator("[run]\nname = \"..\"  # <-\n"), "manifest.invalid_value",
     "[run] 'name': \"..\" is not a valid run id"},
    {"HeartbeatTimeoutTooShort", with_coordinator("[run]\nheartbeat_timeout_ms = 500  # <-\n"),
     "manifest.invalid_value", "'heartbeat_timeout_ms'"},
    {"GroupAdvantageWithoutAGroup",
     with_coordinator("[learner]\nadvantage = \"group\"\ngroup_size = 1  # <-\n"),
     "manifest.invalid_value", "[learner] 'group_size': 1: advantage = \"group\" compares"},
    {"MissingHost", "[[nodes]]  # <-\nroles = [\"coordinator\"]\n", "manifest.missing_key",
     "[[nodes]] #1 'host'"},
    {"MissingRoles", with_coordinator("[[nodes]]  # <-\nhost = \"b\"\n"), "manifest.missing_key",
     "[[nodes]] #2 'roles'"},
    {"UnknownRole",
     "[[nodes]]\nhost = \"c\"\nroles = [\"coordinator\", \"lerner\"]  # <-\nlearner_gpus = [0]\n",
     "manifest.invalid_choice", "'roles': \"lerner\" is not one of"},
    {"DuplicateHost", with_coordinator("[[nodes]]\nhost = \"c\"  # <-\nroles = [\"compile\"]\n"),
     "manifest.duplicate_host", "[[nodes]] #2 'host': host \"c\" is also node #1 (line 3)"},
    {"GpuTooLarge",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 2\nroles = [\"learner\"]\n"
                      "learner_gpus = [0, 2]  # <-\n"),
     "manifest.gpu_out_of_range", "'learner_gpus': GPU 2 does not exist"},
    {"GpuNegative",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 2\nroles = [\"bench\"]\n"
                      "bench_gpus = [-1]  # <-\n"),
     "manifest.gpu_out_of_range", "'bench_gpus': GPU -1 does not exist"},
    {"GpuListedTwice",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 2\nroles = [\"rollout\"]\n"
                      "rollout_gpus = [1, 1]  # <-\n"),
     "manifest.duplicate_gpu", "'rollout_gpus': GPU 1 is listed twice"},
    {"LearnerRolloutShareWithoutColocate",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 2\nroles = [\"learner\", \"rollout\"]\n"
                      "learner_gpus = [0, 1]\nrollout_gpus = [1]  # <-\n"),
     "manifest.gpu_conflict", "'rollout_gpus': GPU 1 is also given to role 'learner' (line 9)"},
    {"BenchShared",
     "[run]\ncolocate_learner_rollout = true\n" +
         with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 4\nroles = [\"learner\", \"bench\"]\n"
                          "learner_gpus = [0, 1, 2, 3]\nbench_gpus = [3]  # <-\n"),
     "manifest.gpu_conflict", "'bench_gpus': GPU 3 is also given to role 'learner' (line 11)"},
    {"GpuListWithoutRole",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 8\nroles = [\"learner\"]\n"
                      "learner_gpus = [0]\nbench_gpus = [7]  # <-\n"),
     "manifest.role_mismatch", "'bench_gpus': given, but 'bench' is not in this node's roles"},
    {"CompileWorkersWithoutRole",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 1\nroles = [\"rollout\"]\n"
                      "rollout_gpus = [0]\ncompile_workers = 2  # <-\n"),
     "manifest.role_mismatch", "'compile_workers'"},
    {"EmptyGpuList",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 8\nroles = [\"learner\"]\n"
                      "learner_gpus = []  # <-\n"),
     "manifest.missing_gpus", "'learner_gpus': role 'learner' needs at least one GPU"},
    {"GpuRoleWithoutList",
     with_coordinator("[[nodes]]\nhost = \"g\"\ngpus = 8\nroles = [\"rollout\"]  # <-\n"),
     "manifest.missing_gpus", "'rollout_gpus'"},
    {"NoCoordinator", "[[nodes]]  # <-\nhost = \"a\"\nroles = [\"compile\"]\n",
     "manifest.no_coordinator", "[[nodes]] #1 'roles': no node has the role 'coordinator'"},
    {"TwoCoordinators",
     with_coordinator("[[nodes]]\nhost = \"d\"\nroles = [\"coordinator\"]  # <-\n"),
     "manifest.duplicate_coordinator", "[[nodes]] #2 'roles': node #1 (line 4)"},
    {"NoNodes", "[run]\nseed = 1\n", "manifest.no_nodes", "[[nodes]]"},
    {"PartialSecurity",
     with_coordinator("[security]  # <-\nserver_secret_key_file = \"server.key_secret\"\n"
                      "server_public_key_file = \"server.key\"\n"),
     "manifest.partial_security", "[security] 'client_secret_key_file': missing"},
    {"MissingKeyFile",
     with_coordinator("[security]\nserver_secret_key_file = \"server.key_secret\"\n"
                      "client_secret_key_file = \"nowhere.key_secret\"  # <-\n"
                      "server_public_key_file = \"server.key\"\n"),
     "manifest.missing_file", "'client_secret_key_file': key file"},
    {"RejectedKeyFile",
     with_coordinator("[security]\nserver_secret_key_file = \"garbage.key_secret\"  # <-\n"
                      "client_secret_key_file = \"client.key_secret\"\n"
                      "server_public_key_file = \"server.key\"\n"),
     "manifest.bad_key_file", "'server_secret_key_file': rejected"},
    {"PublicKeyNotSecretsPair",
     with_coordinator("[security]\nserver_secret_key_file = \"server.key_secret\"\n"
                      "client_secret_key_file = \"client.key_secret\"\n"
                      "server_public_key_file = \"client.key\"  # <-\n"),
     "manifest.key_mismatch", "'server_public_key_file'"},
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadManifestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadManifestTest, FailsWithCodeFileLineAndKey) {
  const BadCase& c = GetParam();
  Expected<Manifest> m = parse(c.text);
  ASSERT_FALSE(m.has_value()) << c.text;
  EXPECT_EQ(m.error().category, ErrorCategory::kInvalidInput);
  EXPECT_EQ(m.error().code, c.code) << m.error().message;
  int line = marked_line(c.text);
  std::string where = line > 0 ? "bad.toml:" + std::to_string(line) + ":" : "bad.toml: ";
  EXPECT_THAT(m.error().message, StartsWith(where));
  std::string first_line = m.error().message.substr(0, m.error().message.find('\n'));
  EXPECT_THAT(first_line, HasSubstr(c.needle));
}

INSTANTIATE_TEST_SUITE_P(Cases, BadManifestTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ManifestTest, ReportsEveryProblemOfAPassEarliestFirst) {
  Expected<Manifest> m =
      parse(with_coordinator("[run]\nseed = \"x\"\n[rollout]\ntop_p = 2.0\n"
                             "[learner]\nppo_epochs = 0\n"));
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, "manifest.wrong_type");
  EXPECT_THAT(m.error().message, HasSubstr("bad.toml:6:1: [run] 'seed'"));
  EXPECT_THAT(m.error().message, HasSubstr("\nbad.toml:8:1: [rollout] 'top_p'"));
  EXPECT_THAT(m.error().message, HasSubstr("\nbad.toml:10:1: [learner] 'ppo_epochs'"));
}

TEST(ManifestTest, SharingRulesAllowWhatTheFlagsSay) {
  const std::string node =
      "[[nodes]]\nhost = \"solo\"\ngpus = 1\n"
      "roles = [\"coordinator\", \"learner\", \"rollout\", \"bench\"]\n"
      "learner_gpus = [0]\nrollout_gpus = [0]\nbench_gpus = [0]\n";
  EXPECT_FALSE(parse("[run]\ncolocate_learner_rollout = true\n" + node).has_value());
  EXPECT_FALSE(parse("[run]\nallow_shared_bench_gpu = true\n" + node).has_value());
  Expected<Manifest> m =
      parse("[run]\ncolocate_learner_rollout = true\nallow_shared_bench_gpu = true\n" + node);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
}

TEST(ManifestTest, IntegerAcceptedForFloatAndDefaultsFilledIn) {
  Expected<Manifest> m = parse(with_coordinator("[learner]\nactor_lr = 0\n"));
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->learner.actor_lr, 0.0);
  EXPECT_EQ(m->learner.critic_lr, LearnerOptions{}.critic_lr);
  ASSERT_EQ(m->nodes.size(), 1u);
  EXPECT_EQ(m->nodes[0].compile_workers, 1);  // 'compile' without compile_workers
  EXPECT_EQ(m->nodes[0].source_line, 2);
  EXPECT_EQ(m->coordinator().host, "c");
}

TEST(ManifestTest, MissingFileIsNotFound) {
  Expected<Manifest> m = load_manifest("/nonexistent/run.toml");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, "manifest.not_found");
  EXPECT_THAT(m.error().message, HasSubstr("/nonexistent/run.toml"));
}

class ExampleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleTest, LoadsAndValidates) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  Expected<Manifest> m = load_manifest(source_dir() / "examples" / GetParam());
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_FALSE(m->nodes.empty());
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest,
                         ::testing::Values("single-machine.toml", "single-machine-cpu.toml",
                                           "two-nodes.toml", "cluster-128.toml", "demo-h200.toml",
                                           "demo-cpu.toml", "h200x2.toml", "h200x4.toml",
                                           "h200x8.toml"),
                         [](const auto& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(ManifestTest, CorpusRunsTrainOnTheCorpusTaskSets) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  Expected<Manifest> m = load_manifest(source_dir() / "examples/demo-h200.toml");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_GT(m->corpus.count, 0);
  EXPECT_EQ(m->model.init_size, "10M");
  const std::filesystem::path run = m->paths.store_dir.parent_path();
  EXPECT_EQ(m->paths.corpus_dir, run / "corpus");
  EXPECT_EQ(m->paths.train_set, run / "corpus" / "train-tasks");
  EXPECT_EQ(m->paths.eval_set, run / "corpus" / "heldout-tasks");

  // Without a corpus, [tasks] says where the tasks are.
  Expected<Manifest> plain = load_manifest(source_dir() / "examples/single-machine-cpu.toml");
  ASSERT_TRUE(plain.has_value()) << plain.error().to_string();
  EXPECT_EQ(plain->corpus.count, 0);
  EXPECT_EQ(plain->paths.train_set.filename(), "sample");
}

TEST(ManifestTest, PathsResolveAgainstTheManifestDirectory) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  Expected<Manifest> m = load_manifest(source_dir() / "examples/cluster-128.toml");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_TRUE(m->security.enabled());
  EXPECT_EQ(m->security.server_public_key_file, "keys/server.key");  // as written
  EXPECT_TRUE(m->paths.server_public_key_file.is_absolute());
  EXPECT_EQ(m->paths.server_public_key_file.filename(), "server.key");
  EXPECT_EQ(m->paths.server_public_key_file.parent_path().filename(), "keys");
  EXPECT_EQ(m->paths.store_dir, "/data/cuda-agent/cluster-128/store");  // absolute stays
  EXPECT_EQ(m->coordinator().host, "cpu01");
}

TEST(ManifestTest, EmbeddedDefaultIsTheSingleMachineExample) {
  ASSERT_FALSE(source_dir().empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  EXPECT_EQ(embedded_default_manifest(), read_file(source_dir() / "examples/single-machine.toml"))
      << "rebuild: the embedded copy is made when CMake configures";
  Expected<Manifest> m = parse_manifest(embedded_default_manifest(), "<embedded>", "/work/dir");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->paths.store_dir, "/work/dir/runs/local/store");
  EXPECT_TRUE(m->run.colocate_learner_rollout);
  EXPECT_TRUE(m->run.allow_shared_bench_gpu);
}

}  // namespace
}  // namespace cuda_agent
