// The filter's host side (duplicates, decontamination, reports, store rows, resume) and the GPU
// filter's child protocol. The end-to-end case runs filter_task.py on the CPU and is skipped
// where no python3 here imports torch; the GPU run is tasks/gpu_filter_gpu_test.cpp.
#include "tasks/task_filter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

const char* kGood = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x))

def get_inputs():
    return [torch.randn(64, 32)]

def get_init_inputs():
    return [32]
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

Task make_task(const std::string& suite, const std::string& name, const std::string& source) {
  StaticReport r;
  r.ok = true;
  r.inputs = {{.expr = "torch.randn(64, 32)",
               .kind = "tensor",
               .factory = "randn",
               .shape = {64, 32},
               .has_shape = true,
               .dtype = "float32"}};
  return task_from_source(suite, name, source, r, "test", name + ".py", 1);
}

// The first interpreter here that imports torch, or "".
std::string python_with_torch() {
  for (const char* p : {"python3", "/usr/bin/python3"}) {
    const std::string probe =
        std::string("timeout 120 ") + p + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return p;
  }
  return "";
}

TEST(TaskFilter, SuiteMatchesItselfAndBelow) {
  EXPECT_TRUE(suite_matches("kernelbench/level1", "kernelbench"));
  EXPECT_TRUE(suite_matches("synth", "synth"));
  EXPECT_FALSE(suite_matches("synth2", "synth"));
  EXPECT_FALSE(suite_matches("kernel", "kernelbench"));
}

TEST(TaskFilter, ScreenDropsDuplicatesAndContaminatedTasksButNotTheEvalSuite) {
  const std::string resized = replace(kGood, "64, 32", "128, 32");
  const std::string other = replace(kGood, "torch.relu(self.fc(x))",
                                    "torch.sigmoid(self.fc(x)).sum(dim=1).logsumexp(0) + x.mean()");
  std::vector<Task> tasks = {
      make_task("synth", "a", kGood),
      make_task("synth", "b", replace(kGood, "import torch\n", "import torch  # same\n")),
      make_task("synth", "c", other), make_task("eval", "e", resized)};
  const std::vector<Task> eval = {tasks[3]};
  const auto s = screen_tasks(tasks, eval, 0.9, "eval");
  EXPECT_EQ(s[0].dropped_by, "decontamination");
  EXPECT_NE(s[0].reason.find("eval/e-"), std::string::npos) << s[0].reason;
  EXPECT_EQ(s[1].dropped_by, "duplicate");
  EXPECT_NE(s[1].reason.find(tasks[0].id.value()), std::string::npos) << s[1].reason;
  EXPECT_EQ(s[2].dropped_by, "");
  EXPECT_EQ(s[3].dropped_by, "");  // the evaluation suite's own task
}

TEST(TaskFilter, ParsesResultsIntoRowsWithASummaryRow) {
  const std::string text = R"({"format": "cuda-agent-filter-result", "version": 1, "ok": true,
    "passed": false, "eager_ms": 0.2, "compile_ms": null, "wall_s": 3.5, "lock_wait_s": 0.25,
    "phases_s": {"import_torch": 1.5, "checks": 0.5, "bad": "x"}, "peak_gpu_bytes": 3221225472,
    "versions": {"torch": "2.11.0", "gpu_name": "NVIDIA H200"},
    "checks": [{"name": "load", "passed": true, "reason": "", "details": {}},
               {"name": "runs_eager", "passed": false, "reason": "CUDA out of memory",
                "details": {"oom": true}}]})";
  auto o = parse_filter_result(text, "KEY", "sha256:ab", 7);
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_FALSE(o->passed);
  EXPECT_TRUE(o->oom);
  EXPECT_EQ(o->failed_filter, "runs_eager");
  ASSERT_EQ(o->results.size(), 3u);
  EXPECT_EQ(o->results[2].filter, "gpu_filter");
  EXPECT_EQ(o->results[2].reason, "runs_eager: CUDA out of memory");
  auto d = nlohmann::json::parse(o->results[2].details_json);
  EXPECT_EQ(d["options_key"], "KEY");
  EXPECT_EQ(d["device"], "NVIDIA H200");
  const std::map<std::string, double> phases = {
      {"checks", 0.5}, {"import_torch", 1.5}, {"lock_wait", 0.25}};
  EXPECT_EQ(o->phases_s, phases);  // a phase that is not a number is left out
  EXPECT_EQ(d["phases_s"]["import_torch"], 1.5);
  EXPECT_EQ(o->peak_gpu_bytes, 3221225472);
  EXPECT_EQ(d["peak_gpu_bytes"], 3221225472);  // kept with the verdict, for the report

  Task t = make_task("s", "t", kGood);
  t.filters.push_back(o->results[2]);
  EXPECT_FALSE(stored_gpu_result(t, "KEY"));  // another content hash
  d["content_hash"] = t.content_hash;
  t.filters.back().details_json = d.dump();
  EXPECT_TRUE(stored_gpu_result(t, "KEY"));
  EXPECT_FALSE(stored_gpu_result(t, "OTHER KEY"));
  d["failed_filter"] = "filter_timeout";  // a timeout is not a verdict to keep
  t.filters.back().details_json = d.dump();
  EXPECT_FALSE(stored_gpu_result(t, "KEY"));

  auto no_gpu = parse_filter_result(
      R"({"format": "cuda-agent-filter-result", "ok": false, "checks": [],
          "error": {"code": "filter.no_gpu", "message": "no GPU"}})",
      "K", "h", 1);
  ASSERT_FALSE(no_gpu);
  EXPECT_EQ(no_gpu.error().code, "filter.no_gpu");
  EXPECT_FALSE(parse_filter_result("not json", "K", "h", 1));

  SandboxResult killed;
  killed.outcome = SandboxOutcome::kWallTimeout;
  const GpuFilterOutcome t_out = failed_child_outcome(killed, 5000, "K", "h", 1);
  EXPECT_EQ(t_out.failed_filter, "filter_timeout");
  EXPECT_NE(t_out.reason.find("5000 ms"), std::string::npos);
}

TEST(TaskFilter, SummaryGivesTheMedianAndP90OfEachChildPhase) {
  FilterSummary s;
  EXPECT_EQ(filter_time_text(s), "");
  for (int i = 1; i <= 10; ++i)
    s.tasks.push_back({.id = TaskId{"s/t-" + std::to_string(i)},
                       .wall_s = static_cast<double>(i),
                       .phases_s = {{"checks", 0.1 * i}},
                       .forked = i > 3});
  s.tasks.push_back({.id = TaskId{"s/host-drop"}, .dropped_by = "duplicate"});  // no child
  EXPECT_EQ(filter_time_text(s),
            "seconds per child (median/p90 of 10): wall 6.0/9.0, checks 0.6/0.9\n"
            "children: 7 forked from a harness zygote, 3 fresh python\n");
  for (int i = 0; i < 10; ++i) {
    s.tasks[i].peak_gpu_bytes = std::int64_t{i + 1} << 30;
    s.tasks[i].input_bytes = i < 5 ? std::int64_t{1} << 29 : -1;  // half of them unknown
  }
  EXPECT_EQ(filter_time_text(s),
            "seconds per child (median/p90 of 10): wall 6.0/9.0, checks 0.6/0.9\n"
            "children: 7 forked from a harness zygote, 3 fresh python\n"
            "GPU memory per child (median/p90 of 10): peak reserved GiB 6.0/9.0, "
            "peak / input bytes 6.0/10.0\n");
}

TEST(TaskFilter, SummarySaysWhyChildrenWereNotForked) {
  // A zygote that refused to serve is noted on the first task of its thread only; the summary
  // must still say why every later child was a fresh Python (on the H200 this was silent).
  FilterSummary s;
  const std::string refused =
      "harness zygote: refused to serve: 1 Python / 16 native threads before fork: forking is "
      "unsafe; fresh children from now on";
  for (int i = 0; i < 4; ++i)
    s.tasks.push_back({.id = TaskId{"s/t-" + std::to_string(i)},
                       .wall_s = 1.0,
                       .zygote_note = i < 2 ? refused : ""});
  s.tasks.push_back({.id = TaskId{"s/t-9"}, .wall_s = 1.0, .zygote_note = "restarted"});
  const std::string text = filter_time_text(s);
  EXPECT_NE(text.find("children: 0 forked from a harness zygote, 5 fresh python\n"
                      "  zygote (2 tasks): " +
                      refused + "\n  zygote (1 task): restarted\n"),
            std::string::npos)
      << text;
  const auto report = nlohmann::json::parse(filter_report_json(s));
  EXPECT_EQ(report["tasks"][0].value("zygote_note", ""), refused);
  EXPECT_FALSE(report["tasks"][2].contains("zygote_note"));
}

TEST(TaskFilter, InputBytesComeFromTheValidatorsShapes) {
  Task t = make_task("s", "t", kGood);
  t.inputs = {{.kind = "tensor", .shape = {4, 8}, .has_shape = true, .dtype = "float16"},
              {.kind = "value", .value_json = "3"},
              {.kind = "tensor", .shape = {2, 0}, .has_shape = true, .dtype = "float32"}};
  EXPECT_EQ(task_input_bytes(t), 4 * 8 * 2 + 2 * 1 * 4);  // a 0 extent counts as 1
  t.inputs[2].has_shape = false;
  EXPECT_EQ(task_input_bytes(t), -1);
  t.inputs.clear();
  EXPECT_EQ(task_input_bytes(t), -1);
}

TEST(TaskFilter, ReportsListEveryDroppedTask) {
  FilterSummary s;
  s.options_key = "filter v1 cpu";
  s.tasks = {{.id = TaskId{"s/a-1"}, .passed = true, .eager_ms = 2.5},
             {.id = TaskId{"s/b-2"}, .dropped_by = "eager_time", .reason = "below 1 ms | x"},
             {.id = TaskId{"s/c-3"}, .dropped_by = "duplicate", .reason = "duplicate of s/a-1"}};
  s.passed = 1;
  s.dropped = 2;
  s.drops = {{"eager_time", 1}, {"duplicate", 1}};
  const std::string text = filter_summary_text(s);
  EXPECT_NE(text.find("1 passed (33.3% of 3 judged), 2 dropped"), std::string::npos) << text;
  EXPECT_NE(text.find("eager_time"), std::string::npos);
  const auto j = nlohmann::json::parse(filter_report_json(s));
  EXPECT_EQ(j["format"], "cuda-agent-filter-report");
  EXPECT_EQ(j["summary"]["drops"]["duplicate"], 1);
  EXPECT_EQ(j["tasks"][1]["reason"], "below 1 ms | x");
  const std::string md = filter_report_markdown(s);
  EXPECT_NE(md.find("| `s/b-2` | eager_time | below 1 ms / x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `s/c-3` | duplicate | duplicate of s/a-1 |"), std::string::npos) << md;
}

TEST(TaskFilter, OptionErrorsNameWhatIsWrong) {
  testing::TempDir tmp("task_filter_options");
  auto store = RunStore::open(testing::store_at(tmp.sub("store")), StoreMode::kWrite);
  ASSERT_TRUE(store);
  TaskFilterOptions o;
  auto r = filter_tasks(**store, o, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--suite NAME"), std::string::npos);
  o.suites = {"nothing"};
  r = filter_tasks(**store, o, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "filter.no_tasks");
  EXPECT_NE(r.error().message.find("nothing"), std::string::npos);
  o.similarity = 1.5;
  r = filter_tasks(**store, o, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--similarity"), std::string::npos);
}

TEST(TaskFilter, RunsOnTheCpuRecordsRowsAndResumes) {
  const std::string python = python_with_torch();
  if (python.empty()) GTEST_SKIP() << "no python3 here can import torch";
  testing::TempDir tmp("task_filter_cpu");
  auto store = RunStore::open(testing::store_at(tmp.sub("store")), StoreMode::kWrite);
  ASSERT_TRUE(store);
  const std::string constant = replace(kGood, "torch.relu(self.fc(x))", "self.fc(x) * 0");
  const std::string dropout = replace(kGood, "torch.relu(self.fc(x))",
                                      "nn.functional.dropout(self.fc(x), 0.5, self.training)");
  StoreWrite w;
  for (const Task& t : {make_task("s", "good", kGood), make_task("s", "constant", constant),
                        make_task("s", "dropout", dropout),
                        make_task("s", "good_again", std::string(kGood) + "\n# copy\n")})
    w.tasks.push_back(to_record(t, 1));
  ASSERT_TRUE((*store)->write(std::move(w), std::chrono::seconds(10)));

  TaskFilterOptions o;
  o.suites = {"s"};
  o.gpu = {.python = python,
           .device = "cpu",
           .jobs = 2,
           .eager_min_ms = 0,
           .eager_max_ms = 1e6,
           .warmup_trials = 1,
           .timed_trials = 2,
           .compile = false,
           .task_wall_ms = 120'000,
           .work_root = tmp.sub("work")};
  std::size_t seen = 0;
  auto s = filter_tasks(**store, o, [&](const FilteredTask&) { ++seen; });
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(seen, 4u);
  std::map<std::string, std::string> by_name;
  for (const auto& f : s->tasks) by_name[f.name] = f.passed ? "passed" : f.dropped_by;
  EXPECT_EQ(by_name["good"], "passed");
  EXPECT_EQ(by_name["constant"], "not_constant");
  EXPECT_EQ(by_name["dropout"], "stochastic_ops");
  EXPECT_EQ(by_name["good_again"], "duplicate");
  EXPECT_EQ(s->passed, 1u);
  EXPECT_EQ(s->drops["duplicate"], 1u);

  // Rows are in the store: the static row kept, the checks and the summary added.
  bool found = false;
  Status scan = (*store)->scan_tasks({}, [&](const TaskRecord& r) {
    auto t = from_record(r);
    EXPECT_TRUE(t);
    if (t && t->name == "good") {
      found = true;
      std::vector<std::string> names;
      for (const auto& f : t->filters) names.push_back(f.filter);
      EXPECT_EQ(names.front(), "static");
      EXPECT_NE(std::find(names.begin(), names.end(), "eager_time"), names.end());
      EXPECT_EQ(names.back(), "gpu_filter");
    }
    return true;
  });
  ASSERT_TRUE(scan);
  EXPECT_TRUE(found);

  // Again with the same options: nothing runs, the verdicts are the same.
  auto again = filter_tasks(**store, o, nullptr);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->reused, 3u);
  EXPECT_EQ(again->passed, 1u);
  EXPECT_EQ(again->drops["not_constant"], 1u);
  EXPECT_EQ(again->drops["stochastic_ops"], 1u);
}

}  // namespace
}  // namespace cuda_agent
