// BenchService against a fake harness (gpu_bench/testdata/fake_harness/harness.py: same files,
// no torch, no GPU): request writing, result parsing, reward scoring, the audit record, error
// mapping of crashes, hangs and bad results, and the health check after a fault; each test once
// with the harness zygote (gpu_bench/harness_zygote.h) and once with a fresh child per request.
// The zygote itself (jobs that kill, stop or taint it, the real harness preloaded on this
// machine's CPU torch) is harness_zygote_test.cpp; the shared set-up is bench_test_util.h. CPU
// only.
#include "gpu_bench/bench_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/content_hash.h"
#include "gpu_bench/bench_report.h"
#include "gpu_bench/bench_test_util.h"
#include "gpu_bench/nsight_compute.h"

namespace cuda_agent {
namespace {

using namespace bench_test;

class BenchServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    options_ = fake_harness_options("bench-service-test");
    options_.bench.harness_zygote = GetParam();
    options_.worker_id = WorkerId{"bench-test-0"};
    options_.health_check = [this]() -> Status {
      ++health_checks_;
      if (gpu_broken_)
        return make_error(ErrorCategory::kIo, "cuda.error", "cudaMalloc: sticky error");
      return Status();
    };
  }

  std::unique_ptr<BenchService> make() { return make_service(options_); }

  static BenchJob job(const std::string& scenario, BenchMode mode = BenchMode::kBenchmark) {
    return fake_job(scenario, mode);
  }

  BenchServiceOptions options_;
  std::atomic<int> health_checks_{0};
  std::atomic<bool> gpu_broken_{false};
};

TEST_P(BenchServiceTest, FasterThanBothBaselinesIsTierThreeWithAnAuditRecord) {
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("fast"));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_TRUE(e->passed);
  EXPECT_EQ(e->result.reward.tier, 3);
  EXPECT_DOUBLE_EQ(e->result.speedup_vs_eager, 2.0);
  EXPECT_DOUBLE_EQ(e->result.speedup_vs_compile, 1.5);
  const AuditRecord& a = e->result.audit;
  EXPECT_EQ(a.task_hash, content_hash("class Model: pass\n"));
  EXPECT_EQ(a.artifact_hash, content_hash("\x7f"
                                          "ELF fake"));
  EXPECT_EQ(a.toolchain, "nvcc 13.0");
  EXPECT_EQ(a.torch_version, "2.11.0");
  EXPECT_EQ(a.gpu_name, "Fake GPU");
  EXPECT_EQ(a.driver_version, "580.1");
  EXPECT_EQ(a.sm_clock_mhz, 1980u);
  EXPECT_EQ(a.worker_id, WorkerId{"bench-test-0"});
  EXPECT_GT(a.measured_unix_ms, 0);
  EXPECT_EQ(a.checks_run.size(), 2u);
  EXPECT_EQ(a.precision_flags.size(), 1u);
  EXPECT_EQ(e->harness.spreads.count("candidate"), 1u);
  EXPECT_EQ(health_checks_, 0);
}

TEST_P(BenchServiceTest, ASharedObjectThatIsNotTheNamedArtifactIsRefused) {
  // The audit record names the artifact by the request's hash: a request whose bytes are other
  // than that artifact's (a client's bug, or a claim to be a kernel it is not) never runs.
  auto s = make();
  ASSERT_TRUE(s);
  BenchJob j = job("fast");
  j.request.payload->shared_object += "tampered";
  auto e = s->evaluate(j);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "bench.artifact_hash");
  EXPECT_NE(e.error().message.find(j.request.artifact.hash), std::string::npos)
      << e.error().message;
  j = job("fast");
  j.request.artifact.hash.clear();
  EXPECT_EQ(s->evaluate(j).error().code, "bench.artifact_hash");
  EXPECT_TRUE(s->evaluate(job("fast"))) << "the service goes on";
}

TEST_P(BenchServiceTest, TiersFollowTheTimings) {
  auto s = make();
  ASSERT_TRUE(s);
  struct Case {
    const char* scenario;
    int tier;
  };
  for (Case c :
       {Case{"eager_only", 2}, Case{"slow", 1}, Case{"no_compile", 2}, Case{"implausible", 3}}) {
    auto e = s->evaluate(job(c.scenario));
    ASSERT_TRUE(e) << c.scenario << ": " << e.error().to_string();
    EXPECT_EQ(e->result.reward.tier, c.tier) << c.scenario;
  }
  // A task whose output ignores its inputs and weights: correct, timed, but no speed credit.
  auto constant = s->evaluate(job("constant_task"));
  ASSERT_TRUE(constant) << constant.error().to_string();
  EXPECT_TRUE(constant->passed);
  EXPECT_EQ(constant->result.reward.tier, 1);
  EXPECT_DOUBLE_EQ(constant->result.speedup_vs_eager, 2.0) << "shown, not credited";
  auto v = s->evaluate(job("implausible"));
  ASSERT_TRUE(v);
  ASSERT_EQ(v->result.violations.size(), 1u);  // flagged for audit, still rewarded
  EXPECT_EQ(v->result.violations[0].rule, "implausible_speedup");
  auto verify = s->evaluate(job("fast", BenchMode::kVerify));
  ASSERT_TRUE(verify);
  EXPECT_EQ(verify->result.reward.tier, 3);  // the fake times even in verify; the rule is pure
}

TEST_P(BenchServiceTest, FailedChecksAndViolationsAreResultsWithTierMinusOne) {
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("fail_check"));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_FALSE(e->passed);
  EXPECT_EQ(e->result.reward.tier, -1);
  ASSERT_EQ(e->result.checks.size(), 2u);
  EXPECT_TRUE(std::isinf(e->result.checks[1].max_abs_error));
  EXPECT_EQ(e->result.checks[1].first_mismatch_index, 17);
  auto v = s->evaluate(job("violation"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->result.reward.tier, -1);
  EXPECT_EQ(v->result.violations[0].rule, "forbidden_op");
}

TEST_P(BenchServiceTest, ContinuousRewardWhenConfigured) {
  options_.bench.reward = "continuous";
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("fast"));
  ASSERT_TRUE(e);
  EXPECT_NEAR(e->result.reward.continuous, std::log(2.0), 1e-9);
}

TEST_P(BenchServiceTest, RequestCarriesOverridesCachedBaselinesAndTheDevice) {
  options_.device = 3;
  auto s = make();
  ASSERT_TRUE(s);
  BenchJob j = job("echo_request");
  j.request.options.timed_trials = 7;
  j.request.options.tolerance_profile = "strict";
  j.request.seeds = {11, 12};
  j.baseline = CachedBaseline{300.0, 250.0};
  auto e = s->evaluate(j);
  ASSERT_TRUE(e) << e.error().to_string();
  ASSERT_EQ(e->harness.notes.size(), 2u);
  auto req = nlohmann::json::parse(e->harness.notes[0]);
  EXPECT_EQ(req["options"]["timed_trials"], 7);
  EXPECT_EQ(req["options"]["verify_input_sets"], 5);  // the service default
  EXPECT_EQ(req["options"]["tolerance_profile"], "strict");
  EXPECT_EQ(req["options"]["measure_eager"], false);
  EXPECT_EQ(req["options"]["measure_compile"], false);
  EXPECT_EQ(req["seeds"], nlohmann::json::array({11, 12}));
  EXPECT_EQ(req["device"], 0);
  EXPECT_EQ(e->harness.notes[1].rfind("env:", 0), 0u);
  EXPECT_NE(e->harness.notes[1], "env:");  // CUDA_VISIBLE_DEVICES is set
  // The cached medians stand in for the baselines that were not re-measured.
  EXPECT_DOUBLE_EQ(e->result.speedup_vs_eager, 3.0);
  EXPECT_DOUBLE_EQ(e->result.speedup_vs_compile, 2.5);
  EXPECT_EQ(e->result.reward.tier, 3);
}

TEST_P(BenchServiceTest, NonFinalEvaluationsMayUseFewerInputSetsFinalOnesNever) {
  options_.bench.nonfinal_verify_input_sets = 2;
  auto s = make();
  ASSERT_TRUE(s);
  auto sets = [&](bool final_eval, std::uint32_t asked) -> int {
    BenchJob j = job("echo_request");
    j.request.options.remeasure_baselines = final_eval;
    j.request.options.verify_input_sets = asked;
    auto e = s->evaluate(j);
    EXPECT_TRUE(e) << e.error().to_string();
    if (!e) return -1;
    return nlohmann::json::parse(e->harness.notes.at(0))["options"]["verify_input_sets"];
  };
  EXPECT_EQ(sets(false, 0), 2);
  EXPECT_EQ(sets(true, 0), 5);   // a final evaluation: the full set
  EXPECT_EQ(sets(false, 7), 7);  // the request's own count wins
}

TEST_P(BenchServiceTest, ReusesItsOwnBaselinesUnlessFinal) {
  auto s = make();
  ASSERT_TRUE(s);
  auto reused = [](const BenchEvaluation& e) {
    for (const auto& n : e.harness.notes)
      if (n.find("earlier measurement") != std::string::npos) return true;
    return false;
  };
  // A candidate that fails its checks leaves no baseline behind for the next one.
  BenchJob failing = job("fail_check");
  failing.request.mode = BenchMode::kBenchmark;
  ASSERT_TRUE(s->evaluate(failing));
  auto first = s->evaluate(job("fast"));
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_FALSE(reused(*first));
  EXPECT_DOUBLE_EQ(first->result.speedup_vs_eager, 2.0);  // not the failed run's 9x
  EXPECT_EQ(first->result.eager_trial_us.size(), 5u);
  EXPECT_EQ(first->result.compile_trial_us.size(), 5u);
  // Same task text, benchmark mode: neither baseline is timed again; their medians stand in.
  auto second = s->evaluate(job("fast"));
  ASSERT_TRUE(second);
  EXPECT_TRUE(reused(*second));
  EXPECT_TRUE(second->result.eager_trial_us.empty());
  EXPECT_TRUE(second->result.compile_trial_us.empty());
  EXPECT_DOUBLE_EQ(second->result.speedup_vs_eager, 2.0);
  EXPECT_DOUBLE_EQ(second->result.speedup_vs_compile, 1.5);
  EXPECT_EQ(second->result.reward.tier, 3);
  // A final evaluation re-measures; so does another task, or TF32 on.
  BenchJob final_job = job("fast");
  final_job.request.options.remeasure_baselines = true;
  auto final_eval = s->evaluate(final_job);
  ASSERT_TRUE(final_eval);
  EXPECT_FALSE(reused(*final_eval));
  EXPECT_EQ(final_eval->result.compile_trial_us.size(), 5u);
  BenchJob other = job("fast");
  other.request.payload->task_model_py = "class Model: pass  # another task\n";
  EXPECT_FALSE(reused(*s->evaluate(other)));
  BenchJob tf32 = job("fast");
  tf32.request.options.allow_tf32 = true;
  EXPECT_FALSE(reused(*s->evaluate(tf32)));
  // A worker told to reuse them in final evaluations too ([bench] final_reuses_baselines): a
  // known task's final evaluation takes the medians, and its report says they came from the cache.
  options_.bench.final_reuses_baselines = true;
  auto reusing = make();
  ASSERT_TRUE(reusing);
  ASSERT_TRUE(reusing->evaluate(final_job));  // first meeting: measured
  auto final_reused = reusing->evaluate(final_job);
  ASSERT_TRUE(final_reused);
  EXPECT_TRUE(reused(*final_reused));
  EXPECT_TRUE(final_reused->result.compile_trial_us.empty());
  EXPECT_DOUBLE_EQ(final_reused->result.speedup_vs_eager, 2.0);
  EXPECT_NE(bench_report_text(*final_reused, {}).find("baselines from the cache"),
            std::string::npos);
  options_.bench.final_reuses_baselines = false;
  // Eager reuse off: eager timed every time, torch.compile still reused.
  options_.reuse_eager_baseline = false;
  auto eager_off = make();
  ASSERT_TRUE(eager_off);
  ASSERT_TRUE(eager_off->evaluate(job("fast")));
  auto timed_eager = eager_off->evaluate(job("fast"));
  ASSERT_TRUE(timed_eager);
  EXPECT_EQ(timed_eager->result.eager_trial_us.size(), 5u);
  EXPECT_TRUE(timed_eager->result.compile_trial_us.empty());
  // Both off: always measured.
  options_.reuse_compile_baseline = false;
  auto off = make();
  ASSERT_TRUE(off);
  ASSERT_TRUE(off->evaluate(job("fast")));
  EXPECT_FALSE(reused(*off->evaluate(job("fast"))));
}

TEST_P(BenchServiceTest, HarnessErrorsAreTyped) {
  auto s = make();
  ASSERT_TRUE(s);
  auto t = s->evaluate(job("task_error"));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, "harness.task");
  EXPECT_EQ(t.error().category, ErrorCategory::kInvalidInput);
  auto g = s->evaluate(job("garbage"));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, "bench.result");
  auto n = s->evaluate(job("no_result"));
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, "bench.no_result");
  EXPECT_EQ(health_checks_, 0);
  BenchJob late = job("fast");
  late.request.header.deadline_unix_ms = now_unix_ms() - 1;
  auto d = s->evaluate(late);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, "bench.deadline");
  BenchJob unknown = job("fast", BenchMode::kUnknown);
  EXPECT_FALSE(s->evaluate(unknown));
}

TEST_P(BenchServiceTest, CrashIsATypedErrorAndTheGpuIsCheckedAfter) {
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("crash"));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "bench.crashed");
  EXPECT_NE(e.error().message.find("signal 11"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("about to crash"), std::string::npos) << e.error().message;
  EXPECT_EQ(health_checks_, 1);
  EXPECT_TRUE(s->healthy());
  EXPECT_TRUE(s->evaluate(job("fast")));  // the service keeps serving
}

TEST_P(BenchServiceTest, HangIsKilledAtTheDeadline) {
  options_.bench.harness_wall_ms = 1000;
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("hang"));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "bench.timeout");
  EXPECT_EQ(e.error().category, ErrorCategory::kTimeout);
  EXPECT_EQ(health_checks_, 1);
}

TEST_P(BenchServiceTest, DeviceFaultWithAFailedHealthCheckStopsWorkUntilTheGpuRecovers) {
  auto s = make();
  ASSERT_TRUE(s);
  gpu_broken_ = true;
  auto e = s->evaluate(job("device_fault"));
  ASSERT_TRUE(e) << e.error().to_string();  // the candidate's fault: a result, tier -1
  EXPECT_EQ(e->result.reward.tier, -1);
  EXPECT_TRUE(e->harness.device_fault);
  EXPECT_FALSE(s->healthy());
  auto refused = s->evaluate(job("fast"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "bench.gpu_unhealthy");
  EXPECT_EQ(refused.error().category, ErrorCategory::kUnavailable);
  gpu_broken_ = false;
  auto ok = s->evaluate(job("fast"));
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_TRUE(s->healthy());
  EXPECT_EQ(health_checks_, 3);
}

TEST_P(BenchServiceTest, MissingPythonOrHarnessIsUnavailable) {
  options_.bench.python = "/nonexistent/python3";
  auto a = BenchService::create(options_);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, "bench.spawn");
  SetUp();
  options_.harness_dir = "/nonexistent";
  auto b = BenchService::create(options_);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, "bench.spawn");
}

INSTANTIATE_TEST_SUITE_P(HarnessStart, BenchServiceTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Zygote" : "FreshChild");
                         });

// A stand-in for ncu: takes its options, writes `log` to --log-file only when the harness was
// asked for the ncu region (the request says so), then runs the harness command it was given.
std::string fake_ncu(const std::string& dir, const std::string& log) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/ncu";
  std::ofstream(path)
      << "#!/bin/sh\nlog=\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n"
         "    --csv) shift ;;\n    --log-file) log=\"$2\"; shift 2 ;;\n"
         "    --*) shift 2 ;;\n    *) break ;;\n  esac\ndone\n"
         "req=\n"
         "for a in \"$@\"; do case \"$a\" in *request.json) req=\"$a\";; esac; done\n"
         "if grep -Eq '\"ncu_region\": *true' \"$req\"; then cat > \"$log\" <<'CSV'\n" +
             log + "CSV\nfi\nexec \"$@\"\n";
  // 0755: the harness (and so ncu) runs as the sandbox's uid when the test runs as root.
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                std::filesystem::perms::others_exec);
  return path;
}

std::string ncu_csv_with_one_kernel() {
  std::string h =
      R"("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC")";
  std::string units = R"("","","","","","","","","","","")";
  const char* values[] = {"5000", "40", "0", "2048", "75.0", "88.5", "30.0"};
  std::string row =
      R"x("0","1","python3","host","fused_kernel(float *)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0")x";
  for (std::size_t i = 0; i < nsight_compute_metrics().size(); ++i) {
    h += ",\"" + nsight_compute_metrics()[i] + "\"";
    units += i == 0 ? ",\"nsecond\"" : ",\"\"";
    row += ",\"" + std::string(values[i]) + "\"";
  }
  return "==PROF== Connected\n" + h + "\n" + units + "\n" + row + "\n";
}

TEST(BenchServiceNsightCompute, ProfileModeGainsTheNcuTableBeforeTheProfilers) {
  BenchServiceOptions o = fake_harness_options("bench-ncu-test");
  o.bench.nsight_compute = fake_ncu(o.work_root + "-bin", ncu_csv_with_one_kernel());
  auto s = make_service(o);
  ASSERT_TRUE(s);
  auto e = s->evaluate(fake_job("fast", BenchMode::kProfile));
  ASSERT_TRUE(e) << e.error().to_string();
  const std::string& report = e->result.profile_report;
  EXPECT_EQ(report.rfind("Nsight Compute: 5 forward call(s)", 0), 0u) << report;
  EXPECT_NE(report.find("fused_kernel(float *)"), std::string::npos) << report;
  EXPECT_NE(report.find("88.5"), std::string::npos) << report;                 // DRAM % of peak
  EXPECT_NE(report.find("fake profiler table"), std::string::npos) << report;  // then torch's
  EXPECT_LE(std::count(report.begin(), report.end(), '\n'), 40) << report;
  // Other modes never run it.
  auto v = s->evaluate(fake_job("fast", BenchMode::kVerify));
  ASSERT_TRUE(v) << v.error().to_string();
  EXPECT_EQ(v->result.profile_report.find("Nsight"), std::string::npos);
  std::filesystem::remove_all(o.work_root + "-bin");
}

TEST(BenchServiceNsightCompute, WithoutPermissionOrNcuTheReportSaysWhyAndKeepsTheProfilers) {
  BenchServiceOptions o = fake_harness_options("bench-ncu-test");
  o.bench.nsight_compute = fake_ncu(
      o.work_root + "-bin",
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.\n");
  auto s = make_service(o);
  ASSERT_TRUE(s);
  auto e = s->evaluate(fake_job("fast", BenchMode::kProfile));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->result.profile_report.rfind("Nsight Compute: unavailable (no permission", 0), 0u)
      << e->result.profile_report;
  EXPECT_NE(e->result.profile_report.find("fake profiler table"), std::string::npos);
  EXPECT_TRUE(has_note(*e, "ERR_NVGPUCTRPERM")) << notes_of(*e);
  std::filesystem::remove_all(o.work_root + "-bin");

  o.bench.nsight_compute = "/nonexistent/ncu";
  auto missing = make_service(o);
  ASSERT_TRUE(missing);
  auto m = missing->evaluate(fake_job("fast", BenchMode::kProfile));
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_NE(m->result.profile_report.find("'/nonexistent/ncu' is not executable"),
            std::string::npos)
      << m->result.profile_report;

  o.bench.nsight_compute = "off";
  auto off = make_service(o);
  ASSERT_TRUE(off);
  auto f = off->evaluate(fake_job("fast", BenchMode::kProfile));
  ASSERT_TRUE(f) << f.error().to_string();
  EXPECT_EQ(f->result.profile_report, "fake profiler table\nper forward: 1.0 us of GPU time");
}

TEST(ScoreEvaluation, NoChecksIsNotAPass) {
  BenchEvaluation e;
  e.harness.ok = true;
  e.harness.passed = true;
  score_evaluation(e, RewardRule{}, std::nullopt);
  EXPECT_FALSE(e.passed);
  EXPECT_EQ(e.result.reward.tier, -1);
}

}  // namespace
}  // namespace cuda_agent
