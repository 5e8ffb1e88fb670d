#include "gpu_bench/harness_protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace cuda_agent {
namespace {
using json = nlohmann::json;

TEST(HarnessProtocol, RequestCarriesPrototypesModeAndOptions) {
  HarnessRequest r;
  r.mode = BenchMode::kBenchmark;
  r.task_model_py = "/j/model.py";
  r.model_new_py = "/j/model_new.py";
  r.library = "/j/solution.so";
  r.prototypes = {{"scale_relu_launch",
                   {{"x", "const float*", ParamKind::kPointer},
                    {"n", "long long", ParamKind::kInteger},
                    {"a", "float", ParamKind::kFloating},
                    {"s", "cudaStream_t", ParamKind::kStream}}}};
  r.seeds = {3, 5};
  r.options.timed_trials = 7;
  r.options.measure_compile = false;
  json j = json::parse(harness_request_json(r));
  EXPECT_EQ(j["format"], "cuda-agent-harness-request");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["mode"], "benchmark");
  EXPECT_EQ(j["library"], "/j/solution.so");
  EXPECT_EQ(j["prototypes"][0]["name"], "scale_relu_launch");
  EXPECT_EQ(j["prototypes"][0]["params"][0]["kind"], "pointer");
  EXPECT_EQ(j["prototypes"][0]["params"][1]["kind"], "integer");
  EXPECT_EQ(j["prototypes"][0]["params"][2]["kind"], "floating");
  EXPECT_EQ(j["prototypes"][0]["params"][3]["kind"], "stream");
  EXPECT_EQ(j["prototypes"][0]["params"][0]["c_type"], "const float*");
  EXPECT_EQ(j["seeds"], json::array({3, 5}));
  EXPECT_EQ(j["options"]["timed_trials"], 7);
  EXPECT_EQ(j["options"]["measure_compile"], false);
  EXPECT_EQ(j["options"]["tolerance_profile"], "cuda-agent");
}

const char* kResult = R"({
 "format": "cuda-agent-harness-result", "version": 1, "mode": "benchmark", "ok": true,
 "passed": false, "error": null, "device_fault": false,
 "checks": [{"name": "policy.ast", "passed": true, "max_abs_error": 0, "max_rel_error": 0,
             "first_mismatch_index": -1, "message": ""},
            {"name": "tolerance[seed=4]", "passed": false, "max_abs_error": "inf",
             "max_rel_error": "nan", "first_mismatch_index": 12, "message": "3 of 9"}],
 "violations": [{"rule": "forbidden_op", "detail": "aten::add.Tensor"}],
 "timing": {"candidate_us": [10, 12, 11], "eager_us": [20, 22], "compile_us": [],
            "idle_overhead_us": 14.5, "compile_error": "no triton",
            "summary": {"candidate": {"median": 11, "min": 10, "max": 12, "iqr": 1, "cv": 0.07}}},
 "versions": {"torch": "2.11.0+cu130", "gpu_name": "NVIDIA H200", "driver": "580.159.04",
              "sm_clock_mhz": 1755, "mem_clock_max_mhz": 3201, "sm_clock_max_mhz": 1980},
 "precision_flags": ["torch.backends.cuda.matmul.allow_tf32=False"],
 "seeds": [4, 9223372036854775807],
 "breakdown_s": {"startup": 1.5, "checks": 0.25},
 "notes": ["poisoned 1 bytes"], "profile_report": "kernel table", "extra_field": {"x": 1}
})";

TEST(HarnessProtocol, ParsesEveryField) {
  auto r = parse_harness_result(kResult);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->ok);
  EXPECT_FALSE(r->passed);
  ASSERT_EQ(r->result.checks.size(), 2u);
  const BenchCheck& c = r->result.checks[1];
  EXPECT_EQ(c.name, "tolerance[seed=4]");
  EXPECT_FALSE(c.passed);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  EXPECT_TRUE(std::isnan(c.max_rel_error));
  EXPECT_EQ(c.first_mismatch_index, 12);
  EXPECT_EQ(r->result.audit.checks_run,
            (std::vector<std::string>{"policy.ast", "tolerance[seed=4]"}));
  ASSERT_EQ(r->result.violations.size(), 1u);
  EXPECT_EQ(r->result.violations[0].rule, "forbidden_op");
  EXPECT_EQ(r->result.candidate_trial_us, (std::vector<double>{10, 12, 11}));
  EXPECT_EQ(r->result.eager_trial_us.size(), 2u);
  EXPECT_TRUE(r->result.compile_trial_us.empty());
  EXPECT_EQ(r->compile_baseline_error, "no triton");
  EXPECT_DOUBLE_EQ(r->idle_overhead_us, 14.5);
  EXPECT_DOUBLE_EQ(r->spreads.at("candidate").cv, 0.07);
  EXPECT_EQ(r->result.audit.torch_version, "2.11.0+cu130");
  EXPECT_EQ(r->result.audit.gpu_name, "NVIDIA H200");
  EXPECT_EQ(r->result.audit.driver_version, "580.159.04");
  EXPECT_EQ(r->result.audit.sm_clock_mhz, 1755u);   // measured
  EXPECT_EQ(r->result.audit.mem_clock_mhz, 3201u);  // maximum stands in
  EXPECT_EQ(r->result.audit.precision_flags.size(), 1u);
  EXPECT_EQ(r->seeds, (std::vector<std::uint64_t>{4, 9223372036854775807ull}));
  EXPECT_DOUBLE_EQ(r->result.phases_s.at("startup"), 1.5);
  EXPECT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->result.profile_report, "kernel table");
}

TEST(HarnessProtocol, ErrorResultCarriesTheTypedError) {
  auto r = parse_harness_result(
      R"({"format": "cuda-agent-harness-result", "version": 1, "ok": false,
          "error": {"category": "unavailable", "code": "harness.no_gpu", "message": "none"}})");
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->error.has_value());
  EXPECT_EQ(r->error->category, ErrorCategory::kUnavailable);
  EXPECT_EQ(r->error->code, "harness.no_gpu");
}

TEST(HarnessProtocol, MalformedResultsAreErrorsNotExceptions) {
  for (const char* text :
       {"", "{", "[]", "null", R"({"format": "other", "version": 1, "ok": true})",
        R"({"format": "cuda-agent-harness-result", "version": 2, "ok": true})",
        R"({"format": "cuda-agent-harness-result", "version": 1, "ok": false})",
        R"({"format": "cuda-agent-harness-result", "version": 1, "ok": true, "checks": [1]})"}) {
    auto r = parse_harness_result(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, "bench.result") << text;
  }
  // Wrong types inside are ignored, not fatal.
  auto r = parse_harness_result(
      R"({"format": "cuda-agent-harness-result", "version": 1, "ok": true, "timing": 5,
          "checks": [{"name": 3, "passed": "yes"}]})");
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->result.checks.size(), 1u);
  EXPECT_FALSE(r->result.checks[0].passed);
  EXPECT_TRUE(r->result.candidate_trial_us.empty());
}

TEST(HarnessProtocol, MedianOfOddEvenEmpty) {
  EXPECT_EQ(median_of({}), 0);
  EXPECT_EQ(median_of({3, 1, 2}), 2);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
}

}  // namespace
}  // namespace cuda_agent
