// The harness zygote through BenchService (gpu_bench/harness_zygote.h), CPU only: jobs forked
// from one pre-started process with their own directory, environment, fds and process group; a
// job cannot change what the next one starts from; jobs that kill or stop the zygote, tamper
// with their directory first, crash, hang, or leave a process behind cost at most a restart and
// never a verdict; the restarts are bounded and a zygote that cannot serve falls back to fresh
// children. The fake harness (gpu_bench/testdata/fake_harness) plays the jobs; the last test
// preloads the real harness on this machine's CPU torch (/usr/bin/python3, Debian's torch 1.13).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpu_bench/bench_service.h"
#include "gpu_bench/bench_test_util.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;

using namespace bench_test;

class ZygoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = fake_harness_options("zygote-test");
    options_.bench.harness_zygote = true;
    options_.zygote_message_grace_ms = 1'000;
  }

  std::unique_ptr<BenchService> make() { return make_service(options_); }

  static BenchJob job(const std::string& scenario) { return fake_job(scenario); }

  /// The running zygote's pid (from its ready message); 0 when none is ready.
  static long zygote_pid(const BenchService& s) {
    const std::string info = s.zygote_info();
    if (info.empty()) return 0;
    return nlohmann::json::parse(info).value("pid", 0L);
  }

  BenchServiceOptions options_;
};

TEST_F(ZygoteTest, JobsAreForkedWithTheirOwnDirectoryEnvironmentFdsAndGroup) {
  auto s = make();
  ASSERT_TRUE(s);
  auto a = s->evaluate(job("echo_state"));
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_TRUE(a->from_zygote);
  const long pid = zygote_pid(*s);
  EXPECT_GT(pid, 0);
  const std::string dir = options_.work_root + "/job-1";
  for (const std::string& want : {"cwd=" + dir, "home=" + dir, "tmpdir=" + dir + "/tmp",
                                  // 0-2 and the fd listing /proc/self/fd: the control socket and
                                  // the zygote's output are closed, as a fresh child's would be.
                                  std::string("fds=0,1,2,3"), std::string("own_group=True"),
                                  std::string("parent_is_zygote=True")})
    EXPECT_TRUE(has_note(*a, want)) << want << " not in " << notes_of(*a);
  auto b = s->evaluate(job("echo_state"));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->from_zygote);
  EXPECT_TRUE(has_note(*b, "cwd=" + options_.work_root + "/job-2")) << notes_of(*b);
  EXPECT_EQ(zygote_pid(*s), pid);  // the same zygote served both
}

TEST_F(ZygoteTest, AJobCannotChangeWhatTheNextJobStartsFrom) {
  auto s = make();
  ASSERT_TRUE(s);
  auto a = s->evaluate(job("taint"));
  ASSERT_TRUE(a) << a.error().to_string();
  ASSERT_TRUE(has_note(*a, "tainted"));
  auto b = s->evaluate(job("echo_state"));
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_TRUE(b->from_zygote);
  EXPECT_TRUE(has_note(*b, "tainted=[]")) << notes_of(*b);
  EXPECT_NE(std::find(b->harness.notes.begin(), b->harness.notes.end(), "env_taint="),
            b->harness.notes.end())
      << notes_of(*b);
  EXPECT_TRUE(has_note(*b, "module=False")) << notes_of(*b);
}

TEST_F(ZygoteTest, AJobThatKillsTheZygoteIsReRunInAFreshChildAndTheZygoteRestarts) {
  auto s = make();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->evaluate(job("fast")));
  const long first = zygote_pid(*s);
  auto e = s->evaluate(job("kill_zygote"));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_FALSE(e->from_zygote);
  EXPECT_TRUE(e->passed);
  EXPECT_EQ(e->result.reward.tier, 3);
  EXPECT_TRUE(has_note(*e, "fresh child")) << notes_of(*e);
  EXPECT_TRUE(has_note(*e, "re-run in a fresh harness child")) << notes_of(*e);
  EXPECT_TRUE(has_note(*e, "restarted (1 in a row)")) << notes_of(*e);
  auto next = s->evaluate(job("echo_state"));
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->from_zygote);
  EXPECT_NE(zygote_pid(*s), first);
  EXPECT_NE(zygote_pid(*s), 0);
}

TEST_F(ZygoteTest, AJobThatStopsTheZygoteCostsARestartNotAVerdict) {
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("stop_zygote"));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_FALSE(e->from_zygote);
  EXPECT_TRUE(e->passed);
  // The job stops the zygote after the zygote has reported the job's pid, or (on a loaded
  // machine, where the forked job can run first) before: either way the grace period ends it.
  EXPECT_TRUE(has_note(*e, "no exit status for the job within the grace period") ||
              has_note(*e, "no pid for the job within the grace period"))
      << notes_of(*e);
  EXPECT_TRUE(has_note(*e, "re-run in a fresh harness child")) << notes_of(*e);
  auto next = s->evaluate(job("fast"));
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->from_zygote);
}

TEST_F(ZygoteTest, AReRunSeesTheJobAsSubmittedNotAsTheJobLeftItsDirectory) {
  auto s = make();
  ASSERT_TRUE(s);
  // In the zygote the job rewrites its model_new.py (to a failing scenario), then kills the
  // zygote: a re-run that read the directory as left would fail.
  auto e = s->evaluate(job("tamper_kill_zygote"));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_FALSE(e->from_zygote);
  EXPECT_TRUE(e->passed) << notes_of(*e);
  EXPECT_TRUE(has_note(*e, "fresh child")) << notes_of(*e);
}

TEST_F(ZygoteTest, CrashesHangsAndMissingResultsOfJobsLeaveTheZygoteServing) {
  options_.bench.harness_wall_ms = 3'000;
  auto s = make();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->evaluate(job("fast")));
  const long pid = zygote_pid(*s);
  auto crash = s->evaluate(job("crash"));
  ASSERT_FALSE(crash);
  EXPECT_EQ(crash.error().code, "bench.crashed");
  EXPECT_NE(crash.error().message.find("signal 11"), std::string::npos);
  EXPECT_NE(crash.error().message.find("about to crash"), std::string::npos);  // its own output
  auto hang = s->evaluate(job("hang"));
  ASSERT_FALSE(hang);
  EXPECT_EQ(hang.error().code, "bench.timeout");
  auto none = s->evaluate(job("no_result"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, "bench.no_result");
  // The main process ends with a result while a child of its group sleeps on holding the output
  // pipe: the group is killed and the evaluation does not wait for the deadline.
  const auto t0 = std::chrono::steady_clock::now();
  auto group = s->evaluate(job("hang_group"));
  ASSERT_TRUE(group) << group.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2'500));
  auto fine = s->evaluate(job("fast"));
  ASSERT_TRUE(fine);
  EXPECT_TRUE(fine->from_zygote);
  EXPECT_EQ(zygote_pid(*s), pid);  // none of them cost a restart
}

TEST_F(ZygoteTest, GivesUpAfterTooManyRestartsInARowAndStaysOnFreshChildren) {
  options_.zygote_max_restarts = 1;
  auto s = make();
  ASSERT_TRUE(s);
  auto a = s->evaluate(job("kill_zygote"));
  ASSERT_TRUE(a);
  EXPECT_TRUE(s->zygote_enabled());
  auto b = s->evaluate(job("kill_zygote"));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->passed);
  EXPECT_TRUE(has_note(*b, "fresh children from now on")) << notes_of(*b);
  EXPECT_FALSE(s->zygote_enabled());
  auto c = s->evaluate(job("fast"));
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->from_zygote);
  EXPECT_TRUE(c->passed);
}

TEST_F(ZygoteTest, AZygoteThatRefusesToServeFallsBackToFreshChildren) {
  // A harness that cannot be imported as a module (as a node without torch cannot preload).
  const fs::path dir = fs::path(options_.work_root + "-harness");
  fs::create_directories(dir);
  std::ofstream(dir / "harness.py")
      << "if __name__ == 'harness':\n    raise ImportError('nothing to preload here')\n"
      << slurp(source_dir() + "/gpu_bench/testdata/fake_harness/harness.py");
  options_.harness_dir = dir.string();
  auto s = make();
  ASSERT_TRUE(s);
  auto e = s->evaluate(job("fast"));
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_FALSE(e->from_zygote);
  EXPECT_TRUE(e->passed);
  EXPECT_TRUE(has_note(*e, "nothing to preload here")) << notes_of(*e);
  EXPECT_TRUE(has_note(*e, "fresh children from now on")) << notes_of(*e);
  EXPECT_FALSE(s->zygote_enabled());
  fs::remove_all(dir);
}

TEST(ZygoteRealHarness, PreloadsTorchWithoutCudaAndForksTheRealHarness) {
  if (::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no torch";
  BenchServiceOptions o;
  o.bench.python = "/usr/bin/python3";
  o.bench.harness_wall_ms = 300'000;  // a cold `import torch` on a busy 2-core machine
  o.keep_jobs = true;
  o.work_root =
      (fs::temp_directory_path() / ("zygote-real-" + std::to_string(::getpid()))).string();
  o.health_check = [] { return Status(); };
  auto s = BenchService::create(o);
  ASSERT_TRUE(s) << s.error().to_string();
  CompileResult built;
  built.artifact = "not a shared object";
  built.artifact_hash = content_hash(built.artifact);  // the bench refuses a mismatch first
  built.prototypes = {{"scale_relu_launch", {{"x", "const float*", ParamKind::kPointer}}}};
  const BenchJob j{.request = bench_request(
                       BenchMode::kVerify, "",
                       slurp(source_dir() + "/gpu_bench/testdata/scale_relu/model.py"), built,
                       slurp(source_dir() + "/gpu_bench/testdata/scale_relu/model_new.py"))};
  auto e = (*s)->evaluate(j);
  // No GPU here: the real harness's own error. (With a GPU: the fake library fails to load.)
  if (!e) {
    EXPECT_EQ(e.error().code, "harness.no_gpu") << e.error().to_string();
  } else {
    EXPECT_TRUE(e->from_zygote);
    EXPECT_FALSE(e->passed);
  }
  const std::string info = (*s)->zygote_info();
  ASSERT_FALSE(info.empty()) << "the zygote is not ready";
  auto ready = nlohmann::json::parse(info);
  EXPECT_EQ(ready["cuda_initialized"], false);
  EXPECT_EQ(ready["native_threads"], 1);
  EXPECT_TRUE(ready["preload"].contains("torch"));
  // The forked harness skipped the interpreter start and `import torch`.
  auto result = nlohmann::json::parse(slurp(o.work_root + "/job-1/result.json"));
  const double startup = result["breakdown_s"]["startup"].get<double>();
  EXPECT_LT(startup, 0.5) << "startup " << startup << " s: was torch imported again?";
  s->reset();
  fs::remove_all(o.work_root);
}

}  // namespace
}  // namespace cuda_agent
