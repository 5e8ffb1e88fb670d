// The compile farm across processes: a broker in this process, compile workers as separate
// `cuda-agent serve compile-worker` processes, real nvcc. Covers the races of issue 5's faults:
//  - a worker SIGKILLed while it compiles: the broker notices the silence, re-queues the job on
//    another worker, and the client gets exactly one (successful) result;
//  - workers started and stopped (SIGTERM) while a queue of jobs drains: every job completes and
//    each client gets one result.
// Events are observed through the broker's stats with deadlines, never by sleeping.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compile_farm/farm.h"
#include "core/clock.h"
#include "core/log.h"
#include "tests/compile_worker_fixture.h"
#include "tests/scale_kernel.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using testing::Child;

// A one-kernel solution whose text (and so its cache keys) is unique to this test run and job.
CompileRequest job(const std::string& nonce, int n) {
  CompileRequest r;
  r.header.request_id = RequestId{"failover-" + nonce + "-" + std::to_string(n)};
  r.header.run_id = RunId{"compile-farm-failover-test"};
  r.header.deadline_unix_ms = now_unix_ms() + 240'000;
  r.target_arch = "sm_90";
  r.files = {{"kernels/k.cu", testing::scale_kernel_source(
                                  std::to_string(n + 2), "job " + nonce + " " + std::to_string(n))},
             {"model_new.py", "import kernels\n"}};
  return r;
}

class CompileFarmFailoverTest : public testing::CompileWorkersFixture {
 protected:
  CompileFarmFailoverTest() : CompileWorkersFixture("compile_farm_failover_") {}
  static std::size_t live_workers(const PoolStats& s) { return s.workers.size(); }

  // The id of a worker the broker sees busy, or "".
  static std::string busy_worker(const PoolStats& s) {
    for (const auto& w : s.workers)
      if (w.busy > 0) return w.worker_id.value();
    return "";
  }
};

TEST_F(CompileFarmFailoverTest, WorkerKilledMidCompileItsJobCompletesElsewhereOnce) {
  for (const char* id : {"w0", "w1", "w2"}) start_worker(id);
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return live_workers(s) == 3; }, 60s))
      << "three workers did not register";

  auto pending = std::async(std::launch::async, [&] { return client_->call(job(nonce_, 0)); });
  std::string victim;
  ASSERT_TRUE(wait_for(
      [&](const PoolStats& s) {
        victim = busy_worker(s);
        return !victim.empty();
      },
      30s))
      << "no worker took the job";
  // The job is running nvcc there (seconds); kill the worker process outright.
  workers_.at(victim)->kill_now();

  ASSERT_EQ(pending.wait_for(120s), std::future_status::ready) << "the client got no result";
  auto result = pending.get();
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(result->prototypes.size(), 1u);
  EXPECT_FALSE(result->artifact.empty());

  PoolStats s = stats();
  EXPECT_EQ(s.workers_lost, 1u);
  EXPECT_GE(s.requeued, 1u) << "the job was not re-queued from the killed worker";
  EXPECT_EQ(s.completed, 1u) << "the client must see exactly one result";
  EXPECT_EQ(live_workers(s), 2u);
  for (const auto& w : s.workers) EXPECT_NE(w.worker_id.value(), victim);
}

TEST_F(CompileFarmFailoverTest, WorkersJoinAndLeaveWhileAQueueDrainsEveryJobCompletesOnce) {
  constexpr int kJobs = 8;
  start_worker("w0");
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return live_workers(s) == 1; }, 60s));

  std::vector<std::future<Expected<CompileResult>>> pending;
  for (int n = 0; n < kJobs; ++n) {
    pending.push_back(
        std::async(std::launch::async, [this, n] { return client_->call(job(nonce_, 100 + n)); }));
  }
  // Queue building up behind one worker; two more join.
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return s.queue_depth >= 2; }, 60s))
      << "the queue never built up";
  start_worker("w1");
  start_worker("w2");
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return live_workers(s) == 3; }, 60s));

  // Once some jobs are done, one busy worker is asked to stop (SIGTERM: it finishes the job it is
  // running, hands back anything else, and leaves).
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return s.completed >= 2; }, 120s));
  std::string leaving;
  ASSERT_TRUE(wait_for(
      [&](const PoolStats& s) {
        leaving = busy_worker(s);
        return !leaving.empty();
      },
      60s));
  ASSERT_EQ(::kill(workers_.at(leaving)->pid(), SIGTERM), 0);
  EXPECT_EQ(workers_.at(leaving)->wait_exit(std::chrono::steady_clock::now() + 60s), 0)
      << "worker " << leaving << " did not exit cleanly on SIGTERM";

  std::set<std::string> hashes;
  for (int n = 0; n < kJobs; ++n) {
    ASSERT_EQ(pending[n].wait_for(180s), std::future_status::ready) << "job " << n << " hung";
    auto r = pending[n].get();
    ASSERT_TRUE(r) << "job " << n << ": " << r.error().to_string();
    hashes.insert(r->artifact_hash);
  }
  EXPECT_EQ(hashes.size(), static_cast<std::size_t>(kJobs)) << "each job is a distinct solution";
  PoolStats s = stats();
  EXPECT_EQ(s.completed, static_cast<std::uint64_t>(kJobs)) << "a job completed twice or never";
  EXPECT_EQ(s.attempts_exhausted, 0u);
  EXPECT_EQ(live_workers(s), 2u);
}

}  // namespace
}  // namespace cuda_agent
