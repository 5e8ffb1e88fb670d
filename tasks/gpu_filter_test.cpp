// GpuFilter's children forked from the harness zygote, on the CPU (skipped where no python3 here
// imports torch): they give the verdicts fresh children give, in the sandbox a fresh child gets;
// a task that kills its zygote, and a zygote that cannot start, cost a fresh child and never a
// verdict. The tasks run in order on one thread where a test names which task meets which zygote.
#include "tasks/gpu_filter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

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

// Kills its parent when that parent is the zygote (a forked child's __main__ is zygote.py); in a
// fresh child it is the good task. The zygote's death takes the child with it (parent-death
// signal), so the first run of this task has no outcome of its own.
const char* kKillsItsZygote = R"(import os
import signal
import sys

if getattr(sys.modules.get("__main__"), "__file__", "").endswith("zygote.py"):
    os.kill(os.getppid(), signal.SIGKILL)
)";

// Writes what its sandbox looks like into probe.json in its job directory, then is the good task.
const char* kProbe = R"(import json
import os
import resource
import socket
import sys

_limits = {name: list(resource.getrlimit(getattr(resource, name)))
           for name in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC",
                        "RLIMIT_CORE", "RLIMIT_AS")}
with open("probe.json", "w") as _f:
    json.dump({"env": dict(os.environ), "cwd": os.getcwd(), "uid": [os.getuid(), os.geteuid()],
               "gid": [os.getgid(), os.getegid()], "groups": os.getgroups(), "limits": _limits,
               "interfaces": sorted(n for _, n in socket.if_nameindex()),
               "own_group": os.getpgid(0) == os.getpid(), "stdin_eof": os.read(0, 1) == b"",
               "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")), "argv": sys.argv,
               "flags": [sys.flags.isolated, sys.flags.dont_write_bytecode],
               "umask": os.umask(0o022)}, _f)
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

Task make_task(const std::string& name, const std::string& source) {
  StaticReport r;
  r.ok = true;
  r.inputs = {{.expr = "torch.randn(64, 32)",
               .kind = "tensor",
               .factory = "randn",
               .shape = {64, 32},
               .has_shape = true,
               .dtype = "float32"}};
  return task_from_source("s", name, source, r, "test", name + ".py", 1);
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

GpuFilterOptions cpu_options(const std::string& python, const std::string& work_root) {
  return {.python = python,
          .device = "cpu",
          .jobs = 1,
          .eager_min_ms = 0,
          .eager_max_ms = 1e6,
          .warmup_trials = 1,
          .timed_trials = 2,
          .compile = false,
          .task_wall_ms = 120'000,
          .work_root = work_root};
}

std::string verdict(const GpuFilterOutcome& o) { return o.passed ? "passed" : o.failed_filter; }

// Every task through run_all; outcomes by task name.
std::map<std::string, GpuFilterOutcome> run_all(const GpuFilterOptions& options,
                                                const std::vector<Task>& tasks) {
  std::map<std::string, GpuFilterOutcome> got;
  auto filter = GpuFilter::create(options);
  EXPECT_TRUE(filter) << filter.error().to_string();
  if (!filter) return got;
  std::vector<const Task*> ptrs;
  for (const Task& t : tasks) ptrs.push_back(&t);
  auto skipped = (*filter)->run_all(
      ptrs, std::chrono::steady_clock::time_point::max(),
      [&](std::size_t i, GpuFilterOutcome o) { got[tasks[i].name] = std::move(o); });
  EXPECT_TRUE(skipped) << skipped.error().to_string();
  EXPECT_EQ(got.size(), tasks.size());
  return got;
}

json summary_details(const GpuFilterOutcome& o) {
  for (const FilterResult& r : o.results)
    if (r.filter == "gpu_filter") return json::parse(r.details_json, nullptr, false);
  return json();
}

class GpuFilterZygote : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = python_with_torch();
    if (python_.empty()) GTEST_SKIP() << "no python3 here can import torch";
  }
  std::string python_;
};

TEST_F(GpuFilterZygote, ForkedChildrenGiveTheVerdictsOfFreshOnes) {
  testing::TempDir tmp("gpu_filter_zygote_same");
  const std::vector<Task> tasks = {
      make_task("good", kGood),
      make_task("constant", replace(kGood, "torch.relu(self.fc(x))", "self.fc(x) * 0")),
      make_task("dropout", replace(kGood, "torch.relu(self.fc(x))",
                                   "nn.functional.dropout(self.fc(x), 0.5, self.training)")),
      make_task("crashes",
                replace(kGood, "return torch.relu(self.fc(x))", "import os\n        os._exit(3)"))};
  const std::map<std::string, std::string> want = {{"good", "passed"},
                                                   {"constant", "not_constant"},
                                                   {"dropout", "stochastic_ops"},
                                                   {"crashes", "filter_crashed"}};
  GpuFilterOptions o = cpu_options(python_, tmp.sub("forked"));
  o.jobs = 2;
  auto forked = run_all(o, tasks);
  o.zygote = false;
  o.work_root = tmp.sub("fresh");
  auto fresh = run_all(o, tasks);
  for (const auto& [name, v] : want) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(forked.count(name) && fresh.count(name));
    EXPECT_EQ(verdict(forked[name]), v) << forked[name].reason;
    EXPECT_EQ(verdict(fresh[name]), v) << fresh[name].reason;
    EXPECT_TRUE(forked[name].forked);
    EXPECT_FALSE(fresh[name].forked);
    EXPECT_EQ(forked[name].zygote_note, "");  // a task that crashes costs no zygote
    EXPECT_TRUE(forked[name].phases_s.count("zygote_wait"));
    EXPECT_FALSE(fresh[name].phases_s.count("zygote_wait"));
    EXPECT_EQ(summary_details(forked[name]).value("forked", false), true);
    EXPECT_EQ(summary_details(fresh[name]).value("forked", true), false);
    if (v != "filter_crashed") {  // the zygote imported torch: the forked child's import is free
      EXPECT_LT(forked[name].phases_s["import_torch"], 0.5);
      EXPECT_TRUE(fresh[name].phases_s.count("import_torch"));
    }
  }
}

TEST_F(GpuFilterZygote, AForkedChildHasTheSandboxOfAFreshOne) {
  testing::TempDir tmp("gpu_filter_zygote_sandbox");
  const std::vector<Task> tasks = {make_task("probe", std::string(kProbe) + kGood)};
  auto probe = [&](bool zygote) {
    GpuFilterOptions o = cpu_options(python_, tmp.sub(zygote ? "forked" : "fresh"));
    o.zygote = zygote;
    o.keep_jobs = true;
    auto got = run_all(o, tasks);
    EXPECT_EQ(verdict(got["probe"]), "passed") << got["probe"].reason;
    EXPECT_EQ(got["probe"].forked, zygote);
    const fs::path job = fs::path(o.work_root) / "job-1";
    std::ifstream in(job / "probe.json");
    std::stringstream text;
    text << in.rdbuf();
    // The job directory's name is the only thing allowed to differ.
    std::string s = text.str();
    for (auto p = s.find(job.string()); p != std::string::npos; p = s.find(job.string()))
      s.replace(p, job.string().size(), "JOB");
    return json::parse(s, nullptr, false);
  };
  const json forked = probe(true), fresh = probe(false);
  ASSERT_TRUE(forked.is_object()) << "no probe.json from the forked child";
  ASSERT_TRUE(fresh.is_object()) << "no probe.json from the fresh child";
  // Open fds: the forked child closes every fd above 2 that it did not open itself, while a fresh
  // child keeps what the calling process leaked to it without close-on-exec (a test runner's,
  // a shell's): the forked child's are a subset.
  for (const json& fd : forked["fds"]) {
    const auto& theirs = fresh["fds"];
    EXPECT_NE(std::find(theirs.begin(), theirs.end(), fd), theirs.end()) << "fd " << fd;
  }
  for (const auto& [key, value] : fresh.items()) {
    if (key == "fds") continue;
    EXPECT_EQ(forked[key], value) << key;
  }
  EXPECT_EQ(forked.size(), fresh.size());
}

TEST_F(GpuFilterZygote, ATaskThatKillsItsZygoteRunsAgainInAFreshChild) {
  testing::TempDir tmp("gpu_filter_zygote_killed");
  // One thread: "good" meets the first zygote, "killer" kills it, "constant" meets the restart.
  const std::vector<Task> tasks = {
      make_task("good", kGood), make_task("killer", std::string(kKillsItsZygote) + kGood),
      make_task("constant", replace(kGood, "torch.relu(self.fc(x))", "self.fc(x) * 0"))};
  auto got = run_all(cpu_options(python_, tmp.sub("work")), tasks);
  EXPECT_EQ(verdict(got["good"]), "passed") << got["good"].reason;
  EXPECT_TRUE(got["good"].forked);
  EXPECT_EQ(verdict(got["killer"]), "passed") << got["killer"].reason;
  EXPECT_FALSE(got["killer"].forked);
  EXPECT_NE(got["killer"].zygote_note.find("re-run in a fresh child"), std::string::npos)
      << got["killer"].zygote_note;
  EXPECT_NE(got["killer"].zygote_note.find("restarted (1 in a row)"), std::string::npos)
      << got["killer"].zygote_note;
  EXPECT_NE(summary_details(got["killer"]).value("zygote_note", "").find("re-run"),
            std::string::npos);
  EXPECT_EQ(verdict(got["constant"]), "not_constant") << got["constant"].reason;
  EXPECT_TRUE(got["constant"].forked);  // the restarted zygote serves again
  EXPECT_EQ(got["constant"].zygote_note, "");
}

TEST_F(GpuFilterZygote, AZygoteThatCannotStartFallsBackToFreshChildren) {
  testing::TempDir tmp("gpu_filter_zygote_bogus");
  const std::vector<Task> tasks = {
      make_task("good", kGood),
      make_task("constant", replace(kGood, "torch.relu(self.fc(x))", "self.fc(x) * 0")),
      make_task("dropout", replace(kGood, "torch.relu(self.fc(x))",
                                   "nn.functional.dropout(self.fc(x), 0.5, self.training)"))};
  GpuFilterOptions o = cpu_options(python_, tmp.sub("work"));
  o.zygote_script = tmp.sub("no-such-dir") + "/zygote.py";
  o.zygote_max_restarts = 1;
  auto got = run_all(o, tasks);
  EXPECT_EQ(verdict(got["good"]), "passed") << got["good"].reason;
  EXPECT_EQ(verdict(got["constant"]), "not_constant") << got["constant"].reason;
  EXPECT_EQ(verdict(got["dropout"]), "stochastic_ops") << got["dropout"].reason;
  for (const auto& [name, o] : got) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(o.forked);
    EXPECT_EQ(o.reason.find("zygote"), std::string::npos) << o.reason;
  }
  // The first task: the zygote never became ready, was restarted; the second: again, given up;
  // the third asks no zygote at all.
  EXPECT_NE(got["good"].zygote_note.find("exited before it was ready"), std::string::npos)
      << got["good"].zygote_note;
  EXPECT_NE(got["good"].zygote_note.find("restarted (1 in a row)"), std::string::npos)
      << got["good"].zygote_note;
  EXPECT_NE(got["constant"].zygote_note.find("fresh children from now on"), std::string::npos)
      << got["constant"].zygote_note;
  EXPECT_EQ(got["dropout"].zygote_note, "");
}

}  // namespace
}  // namespace cuda_agent
