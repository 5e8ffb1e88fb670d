// Derived request ids (rollout/tool_request_ids.h): the same call of the same attempt gets the
// same id, a different call or different content a new one; and through a real bench pool (broker,
// a bench worker on the fake harness, ZeroMQ on loopback) a rerun of an attempt is answered from
// the broker's cache without running the bench again, while changed code is run. CPU only.
#include "rollout/tool_request_ids.h"

#include <gtest/gtest.h>

#include "actors/work_pool_broker.h"
#include "core/content_hash.h"
#include "gpu_bench/bench_pool.h"
#include "gpu_bench/bench_test_util.h"
#include "rollout/pool_bench.h"

namespace cuda_agent {
namespace {

TEST(ToolRequestIds, TheSameCallOfTheSameAttemptHasTheSameId) {
  const std::string key = episode_request_key("run-1", "task#0", 1);
  EXPECT_EQ(key, "run-1/task#0/a1");
  ToolRequestIds first(key), rerun(key), next_attempt(episode_request_key("run-1", "task#0", 2));
  const RequestId a0 = first.next("compile", "0123456789abcdef0123");
  const RequestId a1 = first.next("compile", "0123456789abcdef0123");  // the same sources again
  const RequestId b0 = first.next("bench", "ffff");
  EXPECT_EQ(a0.value(), "run-1/task#0/a1/compile-0/0123456789abcdef");
  EXPECT_NE(a0, a1) << "a second call is another request, even with the same content";
  EXPECT_EQ(b0.value(), "run-1/task#0/a1/bench-0/ffff") << "each kind counts its own calls";
  EXPECT_EQ(rerun.next("compile", "0123456789abcdef0123"), a0);
  EXPECT_NE(rerun.next("compile", "changed-sources"), a1) << "other content, another id";
  EXPECT_NE(next_attempt.next("compile", "0123456789abcdef0123"), a0);

  ToolRequestIds fresh;  // outside an episode: never repeated
  EXPECT_NE(fresh.next("compile", "x"), ToolRequestIds().next("compile", "x"));
}

class PoolBenchRerun : public ::testing::Test {
 protected:
  void SetUp() override {
    auto service = BenchService::create(bench_test::fake_harness_options("pool-bench-rerun"));
    ASSERT_TRUE(service) << service.error().to_string();
    auto broker = WorkPoolBroker::start({.name = "bench-pool"});
    ASSERT_TRUE(broker) << broker.error().to_string();
    broker_ = std::move(*broker);
    PoolWorkerOptions wo;
    wo.broker_endpoint = broker_->worker_endpoint();
    wo.tags = {"gpu"};
    wo.slots = 1;
    auto worker = PoolWorker::start(wo, bench_handler(std::move(*service)));
    ASSERT_TRUE(worker) << worker.error().to_string();
    worker_ = std::move(*worker);
    auto client = BenchClient::connect({.broker_endpoint = broker_->client_endpoint()});
    ASSERT_TRUE(client) << client.error().to_string();
    client_ = std::shared_ptr<BenchClient>(std::move(*client));
  }
  void TearDown() override {
    client_.reset();
    if (worker_) worker_->stop();
    if (broker_) broker_->stop();
  }
  FarmEvaluationTools::Evaluator evaluator(const std::string& key) {
    return pool_bench_evaluator(client_, {.task_id = "level1/x",
                                          .run_id = RunId{"run-1"},
                                          .timeout_ms = 30'000,
                                          .request_key = key});
  }
  /// The final evaluation of `files` by a fresh evaluator for attempt `key` (a rerun starts over).
  Expected<EvaluationOutcome> evaluate(const std::string& key,
                                       const std::vector<SourceFile>& files) {
    auto compile = CompileClient::connect({.broker_endpoint = "tcp://127.0.0.1:9"});  // unused
    if (!compile) return compile.error();
    FarmEvaluationTools tools(**compile, {}, evaluator(key));
    return tools.evaluate(BenchMode::kBenchmark, "class Model: pass\n", files, built(), true);
  }
  static CompileResult built() {
    CompileResult r;
    r.artifact = "so";
    r.artifact_hash = content_hash(r.artifact);  // the bench checks the bytes are the artifact
    r.toolchain = "nvcc";
    return r;
  }
  PoolStats stats() {
    auto s = broker_->stats();
    EXPECT_TRUE(s) << s.error().to_string();
    return s ? *s : PoolStats{};
  }
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<PoolWorker> worker_;
  std::shared_ptr<BenchClient> client_;
};

TEST_F(PoolBenchRerun, ARerunAttemptIsServedFromTheBrokersCache) {
  const std::string key = episode_request_key("run-1", "level1/x#0", 1);
  const std::vector<SourceFile> fast = {{"kernels/k.cu", "x"}, {"model_new.py", "# fake: fast\n"}};
  auto first = evaluate(key, fast);
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_EQ(first->reward_tier, 3);
  // The harness's time and its phases came back over the pool with the result (the report the
  // episode stores says where the bench spent its time).
  ASSERT_TRUE(first->bench.has_value());
  EXPECT_GT(first->bench->harness_seconds, 0);
  EXPECT_DOUBLE_EQ(first->bench->phases_s.at("checks"), 0.2);
  EXPECT_NE(first->report.find("(startup 0.10, checks 0.20)"), std::string::npos) << first->report;
  EXPECT_EQ(stats().completed, 1u);
  EXPECT_EQ(stats().cache_hits, 0u);

  // The attempt runs again from scratch (its policy server went away): a fresh evaluator, the
  // same calls. The broker answers from its cache; the bench does not run it again.
  auto again = evaluate(key, fast);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->reward_tier, first->reward_tier);
  EXPECT_EQ(again->report, first->report);
  EXPECT_EQ(stats().cache_hits, 1u);
  EXPECT_EQ(stats().completed, 1u) << "the bench ran the rerun's request again";

  // A rerun that wrote other code gets its own evaluation, never the cached one.
  const std::vector<SourceFile> broken = {{"kernels/k.cu", "x"},
                                          {"model_new.py", "# fake: fail_check\n"}};
  auto other = evaluate(key, broken);
  ASSERT_TRUE(other) << other.error().to_string();
  EXPECT_EQ(other->reward_tier, -1);
  EXPECT_EQ(stats().completed, 2u);
  EXPECT_EQ(stats().cache_hits, 1u);
}

}  // namespace
}  // namespace cuda_agent
