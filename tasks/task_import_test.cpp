// Import of a directory with good and broken task files and a JSON Lines file: good ones are
// imported, each bad one is named with its reason, and importing again changes nothing.
#include "tasks/task_import.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string nlohmann_escape(const std::string& s) { return nlohmann::json(s).dump(); }

std::string task_source(const std::string& op) {
  return "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
         "    def __init__(self):\n        super().__init__()\n\n"
         "    def forward(self, x):\n        return torch." +
         op +
         "(x)\n\ndef get_inputs():\n    return [torch.randn(4, 8)]\n\n"
         "def get_init_inputs():\n    return []\n";
}

class TaskImport : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ca_task_import_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "set" / "sub");
    fs::create_directories(root_ / "set" / ".hidden");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& rel, const std::string& text) {
    std::ofstream(root_ / rel, std::ios::binary) << text;
  }
  fs::path root_;
};

TEST_F(TaskImport, ImportsTheGoodFilesAndNamesEachBadOne) {
  const std::string good = task_source("relu");
  write("set/1_relu.py", good);
  write("set/sub/2_tanh.py", task_source("tanh"));
  write("set/3_syntax.py", "class Model(:\n");
  write("set/4_no_model.py",
        "import torch\ndef get_inputs(): return []\n"
        "def get_init_inputs(): return []\n");
  std::string no_inputs = good;
  no_inputs.replace(no_inputs.find("def get_inputs"), 14, "def make_input");
  write("set/5_no_get_inputs.py", no_inputs);
  write("set/6_binary.py", std::string("\x7f"
                                       "ELF\x02\x01\x01\x00\x00\xff\xfe",
                                       11));
  write("set/7_empty.py", "");
  write("set/8_huge.py", good + "#" + std::string(2 << 20, 'x') + "\n");
  write("set/9_latin1.py", "# caf\xe9\n" + good);
  write("set/README.md", "not a task");
  write("set/.hidden/x.py", "garbage");
  write("set/rows.jsonl",
        "{\"ops\": \"['torch.sigmoid']\", \"data_source\": \"ops6k-v1\", \"code\": " +
            nlohmann_escape(task_source("sigmoid")) +
            "}\n"
            "not json\n"
            "\n"
            "{\"ops\": [\"a\"]}\n"
            "{\"ops\": [\"nn.Softsign\"], \"code\": \"print(1)\\n\"}\n");

  ImportOptions o;
  int progress_calls = 0;
  auto report = load_tasks((root_ / "set").string(), o, [&](bool) { ++progress_calls; });
  ASSERT_TRUE(report) << report.error().to_string();
  EXPECT_EQ(report->candidates, 13u);
  EXPECT_EQ(progress_calls, 13);
  std::map<std::string, std::string> ids;  // name -> id
  for (const Task& t : report->tasks) ids[t.name] = t.id.value();
  ASSERT_EQ(report->tasks.size(), 3u);
  EXPECT_EQ(ids["1_relu"], make_task_id("set", "1_relu", task_content_hash(good)).value());
  EXPECT_EQ(ids["2_tanh"].rfind("set/sub/2_tanh-", 0), 0u) << ids["2_tanh"];
  EXPECT_EQ(ids["sigmoid"].rfind("set/sigmoid-", 0), 0u) << ids["sigmoid"];
  for (const Task& t : report->tasks) {
    if (t.name == "sigmoid") {
      EXPECT_EQ(t.data_source, "ops6k-v1");
      EXPECT_EQ(t.declared_ops, std::vector<std::string>{"torch.sigmoid"});
      EXPECT_EQ(t.ops, std::vector<std::string>{"torch.sigmoid"});
    }
  }
  std::map<std::string, std::string> why;
  for (const ImportFailure& f : report->failures) {
    why[fs::path(f.where).filename().string()] = f.reason;
  }
  const std::string at = (root_ / "set").string() + "/";
  EXPECT_EQ(why.size(), 10u);
  EXPECT_EQ(why["3_syntax.py"], "syntax error at line 1: invalid syntax");
  EXPECT_EQ(why["4_no_model.py"], "no class Model");
  EXPECT_EQ(why["5_no_get_inputs.py"], "no function get_inputs");
  EXPECT_EQ(why["6_binary.py"], "contains a NUL byte at offset 7 (binary file?)");
  EXPECT_EQ(why["7_empty.py"], "is empty");
  EXPECT_EQ(why["8_huge.py"], "is 2048 KiB, over the limit of 1024 KiB");
  EXPECT_EQ(why["9_latin1.py"], "is not UTF-8 text (bad byte at offset 5)");
  EXPECT_EQ(why["rows.jsonl:2"], "is not a JSON object");
  EXPECT_EQ(why["rows.jsonl:4"], "has no string field \"code\"");
  EXPECT_EQ(why["rows.jsonl:5"],
            "no class Model; no function get_inputs; no function get_init_inputs");

  // Into a store twice: the second time everything is unchanged.
  const fs::path store_dir = root_ / "store";
  for (int round = 0; round < 2; ++round) {
    StoreOptions so;
    so.dir = store_dir.string();
    auto store = RunStore::open(so, StoreMode::kWrite);
    ASSERT_TRUE(store) << store.error().to_string();
    auto again = load_tasks((root_ / "set").string(), o, nullptr);
    ASSERT_TRUE(again);
    auto counts = save_tasks(**store, again->tasks);
    ASSERT_TRUE(counts) << counts.error().to_string();
    EXPECT_EQ(counts->imported, round == 0 ? 3u : 0u);
    EXPECT_EQ(counts->unchanged, round == 0 ? 0u : 3u);
    auto stored = (*store)->get_task(TaskId{ids["1_relu"]});
    ASSERT_TRUE(stored);
    auto task = from_record(*stored);
    ASSERT_TRUE(task) << task.error().to_string();
    EXPECT_EQ(task->source, good);
    EXPECT_EQ(task->inputs.at(0).shape, (std::vector<std::int64_t>{4, 8}));
  }
}

TEST_F(TaskImport, AJsonLinesFileAloneIsItsOwnSuite) {
  write("set/ops6k_rows.jsonl",
        "{\"ops\": [\"torch.relu\"], \"code\": " + nlohmann_escape(task_source("relu")) + "}\n");
  auto r = load_tasks((root_ / "set" / "ops6k_rows.jsonl").string(), {}, nullptr);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->tasks.size(), 1u);
  EXPECT_EQ(r->tasks[0].suite, "ops6k_rows");
  EXPECT_EQ(r->tasks[0].name, "relu");
  EXPECT_EQ(r->tasks[0].data_source, "ops6k");
  EXPECT_EQ(r->tasks[0].origin, (root_ / "set" / "ops6k_rows.jsonl").string() + ":1");
}

TEST_F(TaskImport, AMissingPathIsAnError) {
  auto r = load_tasks((root_ / "nope").string(), {}, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "task.import_path");
  EXPECT_NE(r.error().message.find("nope"), std::string::npos);
}

TEST_F(TaskImport, TheSameSourceTwiceIsOneTask) {
  write("set/a.py", task_source("relu"));
  fs::copy_file(root_ / "set/a.py", root_ / "set/sub/a.py");  // another suite: another task
  write("set/rows.jsonl",
        "{\"ops\": [\"x\"], \"code\": " + nlohmann_escape(task_source("relu")) +
            "}\n{\"ops\": [\"x\"], \"code\": " + nlohmann_escape(task_source("relu")) + "}\n");
  auto r = load_tasks((root_ / "set").string(), {.suite = "mine"}, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tasks.size(), 3u);
  EXPECT_EQ(r->duplicates, 1u);
  EXPECT_EQ(r->tasks[0].suite, "mine");
  EXPECT_EQ(r->tasks[2].suite, "mine/sub");
}

}  // namespace
}  // namespace cuda_agent
