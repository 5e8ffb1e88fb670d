// The task filter on the local GPU (label gpu; skipped with a message where there is none): a few
// KernelBench tasks from ../shared/kernelbench pass, and deliberately bad tasks are dropped with
// the right reason (dropout, a constant output, an ignored input, a task too fast for the window).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "gpu_bench/device_probe.h"
#include "tasks/gpu_filter.h"
#include "tasks/task_import.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;

const char* kBase = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x, y):
        return BODY

def get_inputs():
    return [torch.randn(4096, 8192), torch.randn(4096, 8192)]

def get_init_inputs():
    return []
)";

Task bad(const std::string& name, const std::string& body) {
  std::string s = kBase;
  s.replace(s.find("BODY"), 4, body);
  StaticReport r;
  r.ok = true;
  return task_from_source("bad", name, s, r, "test", name, 1);
}

TEST(GpuFilter, KernelBenchTasksPassAndBadTasksAreDroppedForTheirReason) {
  DeviceList devices = list_devices();
  if (devices.devices.empty()) GTEST_SKIP() << "no GPU here: " << devices.no_gpu_reason;
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (it sets CUDA_AGENT_SOURCE_DIR)";
  const fs::path kb = fs::path(src) / ".." / "shared" / "kernelbench" / "level2";
  std::vector<Task> tasks;
  if (fs::is_directory(kb)) {
    for (const char* f : {"1_Conv2D_ReLU_BiasAdd.py", "12_Gemm_Multiply_LeakyReLU.py"}) {
      ImportOptions o;
      o.suite = "kernelbench";
      auto loaded = load_tasks((kb / f).string(), o, nullptr);
      ASSERT_TRUE(loaded) << loaded.error().message;
      ASSERT_EQ(loaded->tasks.size(), 1u) << f;
      tasks.push_back(loaded->tasks[0]);
    }
  } else {
    std::printf("note: %s is absent; only the bad tasks run\n", kb.string().c_str());
  }
  tasks.push_back(bad("dropout", "self.drop(x) + y"));
  tasks.push_back(bad("constant", "(x - x) * y"));
  tasks.push_back(bad("ignores_y", "torch.relu(x) + 0 * y.sum().sign().abs().round() * 0"));
  tasks.push_back(bad("rand", "x * y + torch.rand_like(x)"));
  GpuFilterOptions options;
  options.jobs = 3;
  options.task_wall_ms = 400'000;
  if (const char* py = std::getenv("CUDA_AGENT_PYTHON")) options.python = py;
  auto filter = GpuFilter::create(options);
  ASSERT_TRUE(filter) << filter.error().message;
  std::vector<const Task*> ptrs;
  for (const Task& t : tasks) ptrs.push_back(&t);
  std::map<std::string, GpuFilterOutcome> got;
  auto left = (*filter)->run_all(
      ptrs, std::chrono::steady_clock::time_point::max(), [&](std::size_t i, GpuFilterOutcome o) {
        std::printf("%s: %s %s (eager %.3f ms, compile %.3f ms)\n", tasks[i].name.c_str(),
                    o.passed ? "passed" : o.failed_filter.c_str(), o.reason.c_str(), o.eager_ms,
                    o.compile_ms);
        got[tasks[i].name] = std::move(o);
      });
  ASSERT_TRUE(left) << left.error().message;
  EXPECT_EQ(*left, 0u);
  ASSERT_EQ(got.size(), tasks.size());
  if (fs::is_directory(kb)) {
    for (const char* name : {"1_Conv2D_ReLU_BiasAdd", "12_Gemm_Multiply_LeakyReLU"}) {
      const GpuFilterOutcome& o = got[name];
      // Passing or out of the window only: every correctness check must hold.
      EXPECT_TRUE(o.passed || o.failed_filter == "eager_time") << name << ": " << o.reason;
      EXPECT_GT(o.eager_ms, 0) << name;
    }
  }
  EXPECT_EQ(got["dropout"].failed_filter, "stochastic_ops") << got["dropout"].reason;
  EXPECT_EQ(got["constant"].failed_filter, "not_constant") << got["constant"].reason;
  EXPECT_EQ(got["ignores_y"].failed_filter, "input_sensitive") << got["ignores_y"].reason;
  EXPECT_EQ(got["rand"].failed_filter, "stochastic_ops") << got["rand"].reason;
}

}  // namespace
}  // namespace cuda_agent
