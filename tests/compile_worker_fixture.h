// A broker in this process and `cuda-agent serve compile-worker` child processes, each with one
// job slot and its own cache, for multi-process compile farm tests (failover, killed workers,
// reproducible artifacts). Skips without the CUDA toolkit. The test target defines
// CUDA_AGENT_EXE.
//
// Threading: single-threaded tests only.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compile_farm/farm.h"
#include "core/log.h"
#include "store_child.h"

namespace cuda_agent::testing {

class CompileWorkersFixture : public ::testing::Test {
 protected:
  /// Workers count as lost after this long without a heartbeat.
  static constexpr std::int64_t kHeartbeatTimeoutMs = 1500;

  /// `name` prefixes the test's temporary directory.
  explicit CompileWorkersFixture(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc")) {
      GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda: the workers cannot compile";
    }
    (void)setup_logging({.level = "warn"});
    std::random_device rd;
    nonce_ = std::to_string(rd()) + std::to_string(::getpid());
    root_ = std::filesystem::temp_directory_path() / (name_ + nonce_);
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
      // polling interval of an observed condition, not a wait
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  std::string name_;
  std::string nonce_;
  std::filesystem::path root_;
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<CompileClient> client_;
  std::map<std::string, std::unique_ptr<Child>> workers_;
};

}  // namespace cuda_agent::testing
