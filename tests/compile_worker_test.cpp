// Compile workers as separate `cuda-agent serve compile-worker` processes with real nvcc, the
// faults of issue 27:
//  - item 5: a worker SIGKILLed mid-build leaves no compiler process behind: nvcc, and the cicc,
//    ptxas and cc1plus it started, are gone within 2 s (core/sandbox.h's group guard), so the
//    job's retry on another worker gets the CPU; the retry completes;
//  - item 6: the same solution built in 10 workers (10 processes, 10 caches, so 10 nvcc pids and
//    job directories) gives one artifact hash, and a second evaluation of it is a job-cache hit
//    that costs <= 10 ms of compile time. The figures are printed (docs/BENCHMARKS.md).
// Events are observed through the broker's stats and /proc with deadlines, never by sleeping.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/log.h"
#include "tests/compile_worker_fixture.h"
#include "tests/proc_table.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using testing::Child;
using testing::descendants;
using SteadyClock = std::chrono::steady_clock;

// A preprocessor condition of 2^23 terms: each of nvcc's two `gcc -E` passes (a cc1plus,
// grandchild of the worker) spends seconds of CPU on it, long enough to be caught running and
// too long to end by itself within the 2 s the test allows after the kill.
const char* kSlowPreprocessing = R"(#define A0 1
#define A1 A0+A0
#define A2 A1+A1
#define A3 A2+A2
#define A4 A3+A3
#define A5 A4+A4
#define A6 A5+A5
#define A7 A6+A6
#define A8 A7+A7
#define A9 A8+A8
#define A10 A9+A9
#define A11 A10+A10
#define A12 A11+A11
#define A13 A12+A12
#define A14 A13+A13
#define A15 A14+A14
#define A16 A15+A15
#define A17 A16+A16
#define A18 A17+A17
#define A19 A18+A18
#define A20 A19+A19
#define A21 A20+A20
#define A22 A21+A21
#define A23 A22+A22
#if A23 > 0
#endif
)";

// A solution unique to this test run and `tag` (so no cache of an earlier run answers it).
CompileRequest job(const std::string& nonce, const std::string& tag, const std::string& id,
                   bool slow = false) {
  CompileRequest r;
  r.header.request_id = RequestId{"compile-worker-test-" + nonce + "-" + id};
  r.header.run_id = RunId{"compile-worker-test"};
  r.header.deadline_unix_ms = now_unix_ms() + 240'000;
  r.target_arch = "sm_90";
  r.files = {
      {"kernels/k.cu", "// " + nonce + " " + tag + "\n" + (slow ? kSlowPreprocessing : "") + R"(
#include <cuda_runtime.h>
template <int N> __device__ float poly(float x) { return poly<N - 1>(x) * x + N; }
template <> __device__ float poly<0>(float x) { return 1.f; }
__global__ void scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = poly<24>(x[i]);
}
extern "C" void scale_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)"},
      {"model_new.py", "import kernels\n"}};
  return r;
}

// The stages that do the work under nvcc (gcc itself is only the driver of cc1plus).
bool is_compiler_stage(const std::string& comm) {
  static const std::set<std::string> kStages = {"cicc", "ptxas", "cc1plus", "cudafe++"};
  return kStages.count(comm) > 0;
}

class CompileWorkerTest : public testing::CompileWorkersFixture {
 protected:
  CompileWorkerTest() : CompileWorkersFixture("compile_worker_test_") {}
  // Whether the broker sees exactly the worker `id` and no other.
  static bool only(const PoolStats& s, const std::string& id) {
    return s.workers.size() == 1 && s.workers[0].worker_id.value() == id;
  }
};

TEST_F(CompileWorkerTest, AWorkerKilledMidBuildLeavesNoCompilerBehind) {
  start_worker("victim");
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return only(s, "victim"); }, 60s));
  const pid_t victim = workers_.at("victim")->pid();

  auto pending =
      std::async(std::launch::async, [&] { return client_->call(job(nonce_, "kill", "0", true)); });
  // Wait until nvcc has started a compiler stage of its own (a grandchild of the worker).
  std::vector<ProcStat> tree;
  const auto building_by = SteadyClock::now() + 60s;
  while (SteadyClock::now() < building_by) {
    tree = descendants(victim);
    if (std::any_of(tree.begin(), tree.end(), [&](const ProcStat& p) {
          return p.ppid != victim && p.live() && is_compiler_stage(p.comm);
        }))
      break;
    std::this_thread::sleep_for(2ms);  // polling interval of an observed condition
  }
  std::string names;
  for (const ProcStat& p : tree) names += p.comm + "(" + std::to_string(p.pid) + ") ";
  ASSERT_TRUE(std::any_of(tree.begin(), tree.end(),
                          [](const ProcStat& p) { return is_compiler_stage(p.comm); }))
      << "no compiler stage started under the worker; saw: " << names;
  std::printf("killing the worker while it runs: %s\n", names.c_str());

  // Everything the worker started, and every group it started (stages begun after the snapshot
  // are in one of those groups), must be gone within 2 s of the kill.
  std::set<std::pair<pid_t, unsigned long long>> started;
  std::set<pid_t> groups;
  for (const ProcStat& p : tree) {
    started.insert({p.pid, p.start});
    if (p.pgid != victim) groups.insert(p.pgid);
  }
  const pid_t worker_group = ::getpgid(victim);
  for (const ProcStat& p : tree)
    if (p.pgid == worker_group) groups.erase(p.pgid);
  workers_.at("victim")->kill_now();
  const auto killed = SteadyClock::now();

  std::vector<ProcStat> left;
  do {
    left.clear();
    for (const ProcStat& p : all_processes())
      if (p.live() && (started.count({p.pid, p.start}) || groups.count(p.pgid))) left.push_back(p);
    if (left.empty()) break;
    std::this_thread::sleep_for(5ms);  // polling interval of an observed condition
  } while (SteadyClock::now() - killed < 2s);
  const double gone_ms =
      std::chrono::duration<double, std::milli>(SteadyClock::now() - killed).count();
  std::string survivors;
  for (const ProcStat& p : left) survivors += p.comm + "(" + std::to_string(p.pid) + ") ";
  EXPECT_TRUE(left.empty()) << "alive 2 s after the worker was SIGKILLed: " << survivors;
  std::printf("every process of the killed worker gone after %.0f ms\n", gone_ms);
  for (const ProcStat& p : left) ::kill(p.pid, SIGKILL);  // what the failure left behind

  // The retry: the broker re-queues the job and another worker builds it.
  start_worker("retry");
  ASSERT_EQ(pending.wait_for(180s), std::future_status::ready) << "the client got no result";
  auto result = pending.get();
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_FALSE(result->artifact.empty());
  EXPECT_GE(stats().requeued, 1u) << "the job was not re-queued from the killed worker";
}

TEST_F(CompileWorkerTest, TenWorkersBuildOneSolutionToOneHashAndTheSecondEvaluationIsAHit) {
  constexpr int kBuilds = 10;
  std::set<std::string> hashes;
  std::set<pid_t> pids;
  double build_seconds = 0;
  for (int n = 0; n < kBuilds; ++n) {
    const std::string id = "r" + std::to_string(n);
    start_worker(id);
    ASSERT_TRUE(wait_for([&](const PoolStats& s) { return only(s, id); }, 60s))
        << "worker " << id << " did not register alone";
    pids.insert(workers_.at(id)->pid());
    // The same solution every time; a new request id, so the broker's reply cache is not asked.
    auto r = client_->call(job(nonce_, "repro", "repro-" + std::to_string(n)));
    ASSERT_TRUE(r) << id << ": " << r.error().to_string();
    EXPECT_FALSE(r->cache_hit) << id << " has its own empty cache";
    hashes.insert(r->artifact_hash);
    build_seconds += r->total_seconds;
    if (n + 1 == kBuilds) break;  // the last worker answers the second evaluation
    ASSERT_EQ(::kill(workers_.at(id)->pid(), SIGTERM), 0);
    EXPECT_EQ(workers_.at(id)->wait_exit(SteadyClock::now() + 60s), 0) << id;
    workers_.erase(id);
  }
  EXPECT_EQ(pids.size(), static_cast<std::size_t>(kBuilds));
  EXPECT_EQ(hashes.size(), 1u) << "one solution, " << kBuilds << " builds, " << hashes.size()
                               << " artifact hashes";

  // The second evaluation of the unchanged solution: best of three, each a new request.
  double best_compile = 1e9, best_round_trip = 1e9;
  for (int n = 0; n < 3; ++n) {
    const auto sent = SteadyClock::now();
    auto again = client_->call(job(nonce_, "repro", "again-" + std::to_string(n)));
    const double round_trip = std::chrono::duration<double>(SteadyClock::now() - sent).count();
    ASSERT_TRUE(again) << again.error().to_string();
    EXPECT_TRUE(again->cache_hit);
    EXPECT_EQ(again->artifact_hash, *hashes.begin());
    best_compile = std::min(best_compile, again->total_seconds);
    best_round_trip = std::min(best_round_trip, round_trip);
  }
  EXPECT_LE(best_compile, 0.010) << "the second evaluation cost " << best_compile * 1000 << " ms";
  std::printf(
      "reproducibility: %d builds in %zu worker processes -> %zu artifact hash(es), %.2f s per "
      "build; second evaluation: cache hit, %.2f ms compile time in the worker, %.2f ms round "
      "trip through the broker\n",
      kBuilds, pids.size(), hashes.size(), build_seconds / kBuilds, best_compile * 1000,
      best_round_trip * 1000);
}

}  // namespace
}  // namespace cuda_agent
