// The bench pool over real ZeroMQ on loopback: broker, one bench worker (BenchService on the fake
// harness, gpu_bench/testdata/fake_harness), a client. CPU only.
#include "gpu_bench/bench_pool.h"

#include <gtest/gtest.h>

#include "actors/work_pool_broker.h"
#include "core/clock.h"
#include "core/content_hash.h"
#include "gpu_bench/bench_test_util.h"

namespace cuda_agent {
namespace {

class BenchPool : public ::testing::Test {
 protected:
  void SetUp() override {
    BenchServiceOptions o = bench_test::fake_harness_options("bench-pool-test");
    o.worker_id = WorkerId{"bench-0"};
    auto service = BenchService::create(o);
    ASSERT_TRUE(service) << service.error().to_string();
    auto broker = WorkPoolBroker::start({.name = "bench-pool"});
    ASSERT_TRUE(broker) << broker.error().to_string();
    broker_ = std::move(*broker);
    DeviceInfo fake;
    fake.name = "Fake GPU";
    PoolWorkerOptions wo;
    wo.broker_endpoint = broker_->worker_endpoint();
    wo.tags = bench_worker_tags(fake);
    wo.slots = 1;
    auto worker = PoolWorker::start(wo, bench_handler(std::move(*service)));
    ASSERT_TRUE(worker) << worker.error().to_string();
    worker_ = std::move(*worker);
    auto client = BenchClient::connect({.broker_endpoint = broker_->client_endpoint()});
    ASSERT_TRUE(client) << client.error().to_string();
    client_ = std::move(*client);
  }
  void TearDown() override {
    client_.reset();
    if (worker_) worker_->stop();
    if (broker_) broker_->stop();
  }
  static BenchRequest request(const std::string& scenario, const std::string& id) {
    BenchRequest r;
    r.header.request_id = RequestId{id};
    r.header.deadline_unix_ms = now_unix_ms() + 30'000;
    r.task = {"level1/x", content_hash("class Model: pass\n")};
    r.artifact = {content_hash("so")};
    r.mode = BenchMode::kBenchmark;
    r.payload = BenchPayload{"class Model: pass\n", "so", {}, "# fake: " + scenario + "\n", "nvcc"};
    return r;
  }
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<PoolWorker> worker_;
  std::unique_ptr<BenchClient> client_;
};

TEST_F(BenchPool, RequestsReachTheGpuWorkerByTagAndComeBackScored) {
  EXPECT_EQ(bench_worker_tags(DeviceInfo{.name = "NVIDIA H200"}),
            (std::vector<std::string>{"gpu", "gpu:NVIDIA H200"}));
  auto r = client_->call(request("fast", "b-1"), {"gpu:Fake GPU"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->reward.tier, 3);
  EXPECT_EQ(r->audit.worker_id, WorkerId{"bench-0"});
  EXPECT_EQ(r->audit.artifact_hash, content_hash("so"));
  auto failed = client_->call(request("fail_check", "b-2"), {"gpu"});
  ASSERT_TRUE(failed) << failed.error().to_string();
  EXPECT_EQ(failed->reward.tier, -1);
}

TEST_F(BenchPool, RequestsTheWorkerCannotRunAreTypedErrors) {
  BenchRequest no_payload = request("fast", "b-3");
  no_payload.payload.reset();
  auto a = client_->call(no_payload);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, "bench.request");
  BenchRequest wrong_hash = request("fast", "b-4");
  wrong_hash.task.content_hash = "00";
  auto b = client_->call(wrong_hash);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, "bench.task_hash");
  auto c = client_->call(request("crash", "b-5"));
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, "bench.crashed");
}

}  // namespace
}  // namespace cuda_agent
