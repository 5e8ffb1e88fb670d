#include "gpu_bench/bench_report.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

BenchCheck check(std::string name, bool passed, std::string message = {}) {
  BenchCheck c;
  c.name = std::move(name);
  c.passed = passed;
  c.message = std::move(message);
  return c;
}

TEST(BenchReportText, PassedChecksRepeatedOverInputSetsShareALineFailuresKeepTheirs) {
  BenchEvaluation e;
  for (std::string name : {"policy.ast", "run[seed=1]", "outputs[seed=1]", "run[seed=2]",
                           "outputs[seed=2]", "run[seed=3]"})
    e.result.checks.push_back(check(name, true));
  e.result.checks.push_back(check("outputs[seed=3]", false, "shape (2,) != (3,)"));
  const std::string text = bench_report_text(e, {.task_id = "t", .mode = "verify"});
  EXPECT_NE(text.find("checks: 6 of 7 passed\n"
                      "  ok    policy.ast\n"
                      "  ok    run (x3)\n"
                      "  ok    outputs (x2)\n"
                      "  FAIL  outputs[seed=3]\n"
                      "        shape (2,) != (3,)\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace cuda_agent
