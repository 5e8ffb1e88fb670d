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
#include "store_child.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using testing::Child;

constexpr std::int64_t kHeartbeatTimeoutMs = 1500;

// A one-kernel solution whose text (and so its cache keys) is unique to this test run and job.
CompileRequest job(const std::string& nonce, int n) {
  CompileRequest r;
  r.header.request_id = RequestId{"failover-" + nonce + "-" + std::to_string(n)};
  r.header.run_id = RunId{"compile-farm-failover-test"};
  r.header.deadline_unix_ms = now_unix_ms() + 240'000;
  r.target_arch = "sm_90";
  r.files = {{"kernels/k.cu", "// job " + nonce + " " + std::to_string(n) + R"(
#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = )" + std::to_string(n + 2) +
                                  R"(.f * x[i];
}
extern "C" void scale_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)"},
             {"model_new.py", "import kernels\n"}};
  return r;
}

class CompileFarmFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc")) {
      GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda: the workers cannot compile";
    }
    (void)setup_logging({.level = "warn"});
    std::random_device rd;
    nonce_ = std::to_string(rd()) + std::to_string(::getpid());
    root_ = std::filesystem::temp_directory_path() / ("compile_farm_failover_" + nonce_);
    std::filesystem::create_directories(root_);
    WorkPoolBrokerOptions o;
    o.heartbeat_timeout_ms = kHeartbeatTimeoutMs;
    o.first_heartbeat_grace_ms = kHeartbeatTimeoutMs;
    o.housekeeping_interval_ms = 10;
    o.max_attempts = 3;
    auto b = WorkPoolBroker::start(o);
    ASSERT_TRUE(b) << b.error().to_string();
    broker_ = std::move(*b);
    auto c = CompileClient::connect({.broker_endpoint = broker_->client_endpoint()});
    ASSERT_TRUE(c) << c.error().to_string();
    client_ = std::move(*c);
  }
  void TearDown() override {
    workers_.clear();  // SIGKILL and reap whatever is still running
    client_.reset();
    broker_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // Starts `cuda-agent serve compile-worker` with one job slot and its own cache.
  void start_worker(const std::string& id) {
    const std::string cache = (root_ / ("cache-" + id)).string();
    workers_[id] = std::make_unique<Child>(
        std::vector<std::string>{CUDA_AGENT_EXE, "--log-level", "warn", "serve", "compile-worker",
                                 "--connect", broker_->worker_endpoint(), "--id", id, "--jobs", "1",
                                 "--cache-dir", cache, "--heartbeat-ms", "100"});
    ASSERT_TRUE(workers_[id]->started()) << "could not start worker " << id;
  }

  PoolStats stats() {
    auto s = broker_->stats();
    EXPECT_TRUE(s) << s.error().to_string();
    return s ? *s : PoolStats{};
  }

  // Polls the broker's stats (every 5 ms) until `condition` holds or `timeout` passes.
  bool wait_for(const std::function<bool(const PoolStats&)>& condition,
                std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (condition(stats())) return true;
      std::this_thread::sleep_for(5ms);  // polling interval of an observed condition, not a wait
    }
    return false;
  }

  static std::size_t live_workers(const PoolStats& s) { return s.workers.size(); }

  // The id of a worker the broker sees busy, or "".
  static std::string busy_worker(const PoolStats& s) {
    for (const auto& w : s.workers)
      if (w.busy > 0) return w.worker_id.value();
    return "";
  }

  std::string nonce_;
  std::filesystem::path root_;
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<CompileClient> client_;
  std::map<std::string, std::unique_ptr<Child>> workers_;
};

TEST_F(CompileFarmFailoverTest, WorkerKilledMidCompileItsJobCompletesElsewhereOnce) {
  for (const char* id : {"w0", "w1", "w2"}) start_worker(id);
  ASSERT_TRUE(wait_for([](const PoolStats& s) { return live_workers(s) == 3; }, 60s))
      << "three workers did not register";

  auto pending = std::async(std::launch::async, [&] { return client_->compile(job(nonce_, 0)); });
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
    pending.push_back(std::async(std::launch::async,
                                 [this, n] { return client_->compile(job(nonce_, 100 + n)); }));
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
