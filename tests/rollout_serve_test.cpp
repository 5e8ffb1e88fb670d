// `cuda-agent serve rollout-worker` as a process: a run of seven train-set tasks with the replay
// backend (rollout/rollout_test_fakes.h transcripts), against real work-pool brokers in this
// process whose workers are fakes (a compile worker that holds chosen requests, a bench worker
// that answers tier +2 at once). The worker is SIGTERMed with episodes held in compile; they must
// be cut (attempts aborted, nothing stored) while the acknowledged ones stay, and a restart must
// run the rest, the cut ones as their second attempt.
//
// Interleaving (concurrent_episodes = 3): the first two compiles are answered, every later one is
// held. The two answered episodes reach their final evaluation (two bench calls: both are past
// their last policy call, so they commit whatever happens next); the lanes then take two more
// episodes, which are held too: three held, two bench calls. Then SIGTERM; once the worker says
// it is stopping, the held compiles are answered, and each of the three episodes is cut at its
// next policy call. Two episodes were never started.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "core/log.h"
#include "messages/bench_codec.h"
#include "messages/compile_codec.h"
#include "rollout/rollout_test_fakes.h"
#include "rollout/rollout_worker.h"
#include "storage/store_test_util.h"
#include "store_child.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kTasks = 7;

// The fake compile and bench workers behind real brokers.
class FakePools {
 public:
  FakePools() {
    auto farm = WorkPoolBroker::start({.name = "compile-farm"});
    auto pool = WorkPoolBroker::start({.name = "bench-pool"});
    EXPECT_TRUE(farm && pool);
    if (!farm || !pool) return;
    farm_ = std::move(*farm);
    pool_ = std::move(*pool);
    auto compiler = PoolWorker::start({.broker_endpoint = farm_->worker_endpoint(),
                                       .worker_id = WorkerId{"fake-compile"},
                                       .slots = 8},
                                      [this](const WorkItem& item) { return compile(item); });
    auto bench = PoolWorker::start({.broker_endpoint = pool_->worker_endpoint(),
                                    .worker_id = WorkerId{"fake-bench"},
                                    .tags = {"gpu"},
                                    .slots = 4},
                                   [this](const WorkItem& item) { return evaluate(item); });
    EXPECT_TRUE(compiler && bench);
    if (!compiler || !bench) return;
    compiler_ = std::move(*compiler);
    bench_ = std::move(*bench);
  }
  ~FakePools() {
    release();
    if (compiler_) compiler_->stop();
    if (bench_) bench_->stop();
    if (farm_) farm_->stop();
    if (pool_) pool_->stop();
  }
  bool ok() const { return compiler_ && bench_; }
  std::string farm() const { return farm_->client_endpoint(); }
  std::string pool() const { return pool_->client_endpoint(); }

  /// Compiles after the first `answered` are held until release().
  void hold_after(int answered) {
    std::lock_guard lock(mu_);
    answer_first_ = answered;
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  /// Waits until `held` compiles are held and `bench_calls` bench requests were answered.
  bool wait_for(int held, int bench_calls, Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline,
                          [&] { return held_ == held && bench_calls_ == bench_calls; });
  }

 private:
  Expected<std::string> compile(const WorkItem& item) {
    ASSIGN_OR_RETURN(CompileRequest request, decode_compile_request(item.payload));
    {
      std::unique_lock lock(mu_);
      if (++compiles_ > answer_first_ && !released_) {
        ++held_;
        cv_.notify_all();
        cv_.wait_until(lock, Clock::now() + 60s, [&] { return released_; });
        --held_;
      }
    }
    CompileResult built{.artifact_hash = "fake-" + std::to_string(request.files.size()),
                        .artifact_size_bytes = 4,
                        .artifact =
                            "\x7f"
                            "ELF",
                        .toolchain = "fake nvcc"};
    return encode_compile_reply({request.header.request_id, std::move(built)});
  }
  Expected<std::string> evaluate(const WorkItem& item) {
    ASSIGN_OR_RETURN(BenchRequest request, decode_bench_request(item.payload));
    BenchResult r;
    r.checks = {{.name = "tolerance[seed=1]", .passed = true}};
    r.speedup_vs_eager = 1.2;
    r.speedup_vs_compile = 0.9;
    r.reward.tier = 2;
    {
      std::lock_guard lock(mu_);
      ++bench_calls_;
      cv_.notify_all();
    }
    return encode_bench_reply({request.header.request_id, std::move(r)});
  }

  std::unique_ptr<WorkPoolBroker> farm_, pool_;
  std::unique_ptr<PoolWorker> compiler_, bench_;
  std::mutex mu_;
  std::condition_variable cv_;
  int answer_first_ = 1 << 30;
  int compiles_ = 0;
  int held_ = 0;
  int bench_calls_ = 0;
  bool released_ = false;
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Seven KernelBench-format tasks task_<n>.py and their transcripts task_<n>.jsonl, and a manifest.
std::string write_run(const testing::TempDir& tmp) {
  const fs::path root = tmp.path();
  for (int n = 0; n < kTasks; ++n) {
    write(root / "train" / ("task_" + std::to_string(n) + ".py"),
          "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
          "    def __init__(self):\n        super().__init__()\n\n"
          "    def forward(self, x):\n        return torch.relu(x) + " +
              std::to_string(n) +
              "\n\ndef get_inputs():\n    return [torch.randn(64, 64)]\n\n"
              "def get_init_inputs():\n    return []\n");
    write(root / "transcripts" / ("task_" + std::to_string(n) + ".jsonl"),
          testing::fake_transcript(n));
  }
  const fs::path manifest = root / "run.toml";
  write(manifest,
        "[run]\nname = \"serve-test\"\nheartbeat_interval_ms = 100\n\n"
        "[store]\ndir = \"store\"\n\n"
        "[tasks]\ntrain_set = \"train\"\n\n"
        "[rollout]\npolicy_backend = \"replay\"\nreplay_transcripts = \"transcripts\"\n"
        "concurrent_episodes = 3\n\n"
        "[[nodes]]\nhost = \"127.0.0.1\"\nroles = [\"coordinator\", \"compile\"]\n");
  return manifest.string();
}

std::vector<std::string> worker_argv(const std::string& manifest, const FakePools& pools,
                                     const std::string& id) {
  return {CUDA_AGENT_EXE, "--log-level",  "warn",      "serve", "rollout-worker",
          "--manifest",   manifest,       "--id",      id,      "--compile-farm",
          pools.farm(),   "--bench-pool", pools.pool()};
}

// Lines of the child's stdout until one starts with `prefix` (returned), EOF or the deadline.
std::optional<std::string> line_starting(testing::Child& child, const std::string& prefix,
                                         Clock::time_point deadline) {
  while (auto line = child.read_line(deadline)) {
    if (line->find(prefix) != std::string::npos) return line;
  }
  return std::nullopt;
}

TEST(RolloutServe, SigtermCutsEpisodesInFlightKeepsAcknowledgedOnesAndARestartRunsTheRest) {
  (void)setup_logging({.level = "error"});
  testing::TempDir tmp("rollout_serve");
  const std::string manifest = write_run(tmp);
  FakePools pools;
  ASSERT_TRUE(pools.ok());
  pools.hold_after(2);
  {
    testing::Child worker(worker_argv(manifest, pools, "w1"));
    ASSERT_TRUE(worker.started());
    auto started = line_starting(worker, "rollout worker w1: run serve-test", Clock::now() + 60s);
    ASSERT_TRUE(started) << "no start line";
    EXPECT_NE(started->find("7 episodes"), std::string::npos) << *started;
    ASSERT_TRUE(pools.wait_for(/*held=*/3, /*bench_calls=*/2, Clock::now() + 60s))
        << "the worker never had three episodes in compile and two evaluated";
    ASSERT_EQ(::kill(worker.pid(), SIGTERM), 0);
    auto stopping = line_starting(worker, "rollout worker w1 stopping", Clock::now() + 30s);
    ASSERT_TRUE(stopping) << "the worker did not say it was stopping";
    EXPECT_NE(stopping->find("3 episodes in flight"), std::string::npos) << *stopping;
    pools.release();
    auto done = line_starting(worker, "rollout worker w1 done:", Clock::now() + 60s);
    ASSERT_TRUE(done);
    EXPECT_NE(done->find("2 acknowledged, 0 already stored, 0 given up, 3 stopped, 2 not "
                         "started, 0 failed"),
              std::string::npos)
        << *done;
    const int status = worker.wait_exit(Clock::now() + 30s);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  std::vector<EpisodeAttemptRecord> cut;
  {
    auto store = testing::open_or_die(tmp.sub("store"), StoreMode::kReadOnly);
    ASSERT_TRUE(store);
    EXPECT_EQ(*store->count_episodes(RunId{"serve-test"}), 2u);
    auto all = testing::attempts_of(*store, "serve-test");
    ASSERT_EQ(all.size(), 5u);
    for (const auto& a : all) {
      EXPECT_EQ(a.worker_id.value(), "w1");
      if (a.state == AttemptState::kCommitted) continue;
      EXPECT_EQ(a.state, AttemptState::kAborted) << a.episode_id.value();
      EXPECT_TRUE(a.note.starts_with(kStoppedAttemptNote)) << a.note;
      EXPECT_FALSE(store->get_episode_summary(RunId{"serve-test"}, a.episode_id));
      cut.push_back(a);
    }
    ASSERT_EQ(cut.size(), 3u);
  }

  // A restart runs the five episodes left; the cut ones as attempt 2.
  testing::Child again(worker_argv(manifest, pools, "w2"));
  auto done = line_starting(again, "rollout worker w2 done:", Clock::now() + 120s);
  ASSERT_TRUE(done);
  EXPECT_NE(done->find("5 acknowledged, 2 already stored, 0 given up, 0 stopped, 0 not started, "
                       "0 failed"),
            std::string::npos)
      << *done;
  const int status = again.wait_exit(Clock::now() + 30s);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto store = testing::open_or_die(tmp.sub("store"), StoreMode::kReadOnly);
  ASSERT_TRUE(store);
  EXPECT_EQ(*store->count_episodes(RunId{"serve-test"}), 7u);
  for (const auto& a : cut) {
    auto rec = store->get_episode(RunId{"serve-test"}, a.episode_id);
    ASSERT_TRUE(rec) << rec.error().to_string();
    EXPECT_EQ(rec->status, EpisodeStatus::kCompleted);
    EXPECT_EQ(rec->final_reward, 2);
    auto mine = testing::attempts_of(*store, "serve-test", a.episode_id.value());
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_EQ(mine[1].attempt, 2u);
    EXPECT_EQ(mine[1].state, AttemptState::kCommitted);
    EXPECT_EQ(mine[1].worker_id.value(), "w2");
  }
}

}  // namespace
}  // namespace cuda_agent
