// `cuda-agent tasks import|synth|list|show` run as a user runs them: a directory of broken task
// files imports the good ones and names each bad one; synthesized sets are reproducible across
// processes and re-importing changes nothing; `tasks filter` argument errors, and a CPU run of the
// filter (skipped without torch). The KernelBench import is tasks_kernelbench_test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "storage/store_test_util.h"
#include "tests/cli_runner.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using testing::CmdResult;
using testing::TempDir;

CmdResult run(const std::string& args) { return testing::run_cli(args); }

bool has(const CmdResult& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kGood = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale

def get_inputs():
    return [torch.randn(128, 4096)]

def get_init_inputs():
    return [2.0]
)";

TEST(TasksCli, ImportsTheGoodFilesAndNamesEachBadOne) {
  TempDir tmp("tasks_cli_broken");
  const fs::path set = fs::path(tmp.path()) / "broken";
  std::string good2 = kGood;
  good2.replace(good2.find("relu"), 4, "tanh");
  write(set / "good_relu.py", kGood);
  write(set / "nested" / "good_tanh.py", good2);
  write(set / "syntax.py", "class Model(nn.Module:\n    pass\n");
  write(set / "no_model.py",
        "import torch\ndef get_inputs():\n    return []\n"
        "def get_init_inputs():\n    return []\n");
  std::string no_inputs = kGood;
  no_inputs.replace(no_inputs.find("def get_inputs"), 14, "def inputs_for");
  write(set / "no_get_inputs.py", no_inputs);
  write(set / "garbage.py", std::string("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 16));
  write(set / "empty.py", "");
  write(set / "huge.py", std::string(kGood) + "# " + std::string(3 << 20, 'x') + "\n");
  const std::string store = tmp.sub("store");

  CmdResult r = run("tasks import " + set.string() + " --store " + store);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // the job ran, some files failed
  EXPECT_TRUE(has(r, "imported 2, unchanged 0, failed 6 (of 8 files and rows)")) << r.output;
  const std::string at = "cuda-agent: " + set.string() + "/";
  EXPECT_TRUE(has(r, at + "syntax.py: syntax error at line 1")) << r.output;
  EXPECT_TRUE(has(r, at + "no_model.py: no class Model")) << r.output;
  EXPECT_TRUE(has(r, at + "no_get_inputs.py: no function get_inputs")) << r.output;
  EXPECT_TRUE(has(r, at + "garbage.py: contains a NUL byte at offset 8")) << r.output;
  EXPECT_TRUE(has(r, at + "empty.py: is empty")) << r.output;
  EXPECT_TRUE(has(r, at + "huge.py: is 3072 KiB, over the limit of 1024 KiB")) << r.output;

  r = run("tasks import " + set.string() + " --store " + store + " --json");
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["imported"], 0);
  EXPECT_EQ(j["unchanged"], 2);
  EXPECT_EQ(j["failures"].size(), 6u);

  r = run("tasks list --store " + store + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "\"id\":\"broken/good_relu-")) << r.output;
  EXPECT_TRUE(has(r, "\"id\":\"broken/nested/good_tanh-")) << r.output;
  EXPECT_TRUE(has(r, "\"ops\":[\"torch.relu\",\"operator.mul\"]")) << r.output;
}

TEST(TasksCli, SynthIsReproducibleAcrossProcessesAndStoresValidatedTasks) {
  TempDir tmp("tasks_cli_synth");
  const std::string a = tmp.sub("a"), b = tmp.sub("b"), store = tmp.sub("store");
  CmdResult r = run("tasks synth --count 60 --seed 99 --out " + a + " --store " + store);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "synthesized 60 tasks (seed 99, first 0)")) << r.output;
  EXPECT_TRUE(has(r, "stored 60 new, 0 unchanged, 0 failed validation")) << r.output;
  r = run("tasks synth --count 30 --first 30 --seed 99 --out " + b + " --store " + store);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "stored 0 new, 30 unchanged")) << r.output;
  int compared = 0;
  for (const auto& e : fs::directory_iterator(b)) {
    EXPECT_EQ(read(e.path()), read(fs::path(a) / e.path().filename())) << e.path();
    ++compared;
  }
  EXPECT_EQ(compared, 30);
  // The written files import as the same tasks (same suite, name and content: same ids).
  r = run("tasks import " + a + " --suite synth --store " + store);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "imported 0, unchanged 60")) << r.output;
  r = run("tasks list --suite synth --store " + store);
  EXPECT_TRUE(has(r, "60 tasks")) << r.output;
}

TEST(TasksCli, BadArgumentsExitTwoWithTheReason) {
  TempDir tmp("tasks_cli_args");
  CmdResult r = run("tasks synth --count 3 --mix 2:1,7:1 --out " + tmp.sub("o"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "\"7:1\" has a length outside 1..5")) << r.output;
  r = run("tasks synth --count 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "needs --out DIR, --store DIR or both")) << r.output;
  r = run("tasks import " + tmp.sub("missing") + " --store " + tmp.sub("s"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "cannot import " + tmp.sub("missing") + ": no such file")) << r.output;
  r = run("tasks show nope/x-0 --store " + tmp.sub("s2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(TasksCli, FilterArgumentErrorsNameTheFlag) {
  TempDir tmp("tasks_cli_filter_args");
  const std::string store = " --store " + tmp.sub("s");
  CmdResult r = run("tasks filter" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "needs --suite NAME (repeatable) or --all")) << r.output;
  r = run("tasks filter --all --suite a" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "--suite NAME or --all, not both")) << r.output;
  r = run("tasks filter --all --min-ms 5 --max-ms 2" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "leave an empty window")) << r.output;
  r = run("tasks filter --all --similarity 1.5" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "--similarity must be in (0, 1]")) << r.output;
  r = run("tasks filter --all --jobs 0" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "--jobs must be at least 1")) << r.output;
  r = run("tasks filter --all --report " + tmp.sub("no/such/dir/r.md") + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "does not exist")) << r.output;
  r = run("tasks filter --suite nothing" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "no stored task is in suite(s) nothing")) << r.output;
  // An evaluation suite that is not in the store is named.
  r = run("tasks synth --count 2 --seed 1 --store " + tmp.sub("s"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run("tasks filter --suite synth --decontaminate-against kernelbench" + store);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r, "--decontaminate-against kernelbench: the store holds no task")) << r.output;
}

TEST(TasksCli, FilterOnTheCpuReportsAndExports) {
  // filter_task.py needs torch; --device cpu runs its checks without a GPU.
  std::string python;
  for (const char* p : {"python3", "/usr/bin/python3"}) {
    if (std::system(
            (std::string("timeout 120 ") + p + " -c 'import torch' >/dev/null 2>&1").c_str()) ==
        0) {
      python = p;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "no python3 here can import torch";
  TempDir tmp("tasks_cli_filter_cpu");
  const std::string store = tmp.sub("s");
  write(fs::path(tmp.sub("in")) / "good.py", kGood);
  std::string constant = kGood;
  constant.replace(constant.find("torch.relu(x) * self.scale"), 26, "x * 0.0");
  write(fs::path(tmp.sub("in")) / "constant.py", constant);
  write(fs::path(tmp.sub("in")) / "copy.py", std::string(kGood) + "\n# a copy\n");
  CmdResult r = run("tasks import " + tmp.sub("in") + " --suite t --store " + store);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string filter = "tasks filter --suite t --device cpu --python " + python +
                             " --min-ms 0 --no-compile --trials 2 --jobs 2 --store " + store;
  r = run(filter + " --report " + tmp.sub("report.md") + " --export " + tmp.sub("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "filtered 3 tasks")) << r.output;
  EXPECT_TRUE(has(r, "1 passed (33.3% of 3 judged), 2 dropped")) << r.output;
  EXPECT_TRUE(has(r, "not_constant")) << r.output;
  EXPECT_TRUE(has(r, "duplicate")) << r.output;
  const std::string md = read(tmp.sub("report.md"));
  EXPECT_TRUE(md.find("| not_constant |") != std::string::npos) << md;
  EXPECT_TRUE(md.find("| duplicate | duplicate of t/") != std::string::npos) << md;
  // copy.py sorts first, so good.py is the duplicate: one of them is exported.
  EXPECT_TRUE(fs::exists(fs::path(tmp.sub("out")) / "copy.py"));
  EXPECT_FALSE(fs::exists(fs::path(tmp.sub("out")) / "good.py"));
  // Again: every verdict is reused, nothing runs.
  r = run(filter + " --report " + tmp.sub("report.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "2 reused from an earlier run")) << r.output;
  auto j = nlohmann::json::parse(read(tmp.sub("report.json")));
  EXPECT_EQ(j["summary"]["passed"], 1);
}

// The bundled sample set (tasks/sample: synthesized tasks that passed the GPU filter) imports
// whole, and its filter report names exactly the files it holds.
TEST(TasksSample, EveryBundledTaskImportsAndPassedTheFilter) {
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (it sets CUDA_AGENT_SOURCE_DIR)";
  const std::filesystem::path sample = std::filesystem::path(src) / "tasks" / "sample";
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(sample))
    if (e.path().extension() == ".py") files.insert(e.path().stem().string());
  ASSERT_GE(files.size(), 40u) << "the issue asks for at least 40 bundled tasks";

  std::ifstream in(sample / "filter-report.json");
  ASSERT_TRUE(in) << "tasks/sample has no filter-report.json";
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_NE(report.at("options_key").get<std::string>().find("cuda"), std::string::npos)
      << "the sample must come from a GPU filter run";
  std::set<std::string> passed;
  for (const auto& t : report.at("tasks"))
    if (t.at("passed").get<bool>()) passed.insert(t.at("name").get<std::string>());
  EXPECT_EQ(files, passed) << "tasks/sample and its filter-report.json disagree";

  testing::TempDir tmp("tasks_sample");
  auto r = testing::run_cli("tasks import " + sample.string() + " --store " + tmp.sub("store"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string n = std::to_string(files.size());
  EXPECT_NE(r.output.find("imported " + n + ", unchanged 0, failed 0 (of " + n + " files"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace cuda_agent
