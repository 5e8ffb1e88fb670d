// CURVE on the work pool: only clients and workers whose public keys the broker allows (ZAP
// handler) get service; everyone else learns it at once (issue 27 item 2): their requests fail
// with "pool.auth_failed" naming the endpoint, long before their deadline.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <vector>

#include "actors/curve_keys.h"
#include "tests/pool_test_util.h"

namespace cuda_agent {
namespace {

using namespace pool_test;

std::filesystem::path temp_dir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("pool_curve_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

PoolOutcome call_as(const WorkPoolBroker& broker, std::optional<CurveClientKeys> keys,
                    const std::string& id, std::int64_t deadline_in_ms = 400) {
  auto client = must(
      PoolClient::connect({.broker_endpoint = broker.client_endpoint(), .curve = std::move(keys)}));
  return client->call_with_details(request(id, "p", {}, deadline_in_ms));
}

// Covers: an unknown client key, no CURVE at all, and a wrong server key each get no service: a
// request with a 20 s deadline fails within 2 s with "pool.auth_failed", "authentication failed
// for ENDPOINT", and no handler runs; a worker with an unknown key never registers and says why
// (refusal()); the allowed client, with keys read from key files, gets its answer.
TEST(PoolCurve, OnlyAllowedKeysGetService) {
  quiet_logs();
  const auto dir = temp_dir();
  ASSERT_TRUE(write_curve_key_files(must(generate_curve_keypair()), dir, "server"));
  ASSERT_TRUE(write_curve_key_files(must(generate_curve_keypair()), dir, "client"));
  const CurveKeyPair server = must(read_curve_key_file(dir / "server.key_secret"));
  const CurveKeyPair client = must(read_curve_key_file(dir / "client.key_secret"));
  const std::string server_public = must(read_curve_key_file(dir / "server.key")).public_z85;
  const CurveKeyPair stranger = must(generate_curve_keypair());
  const CurveKeyPair impostor_server = must(generate_curve_keypair());

  auto options = fast_broker();
  options.curve = CurveServerKeys{server, {client.public_z85}};
  auto broker = must(WorkPoolBroker::start(options));
  std::atomic<int> runs{0};
  auto handler = [&](const WorkItem& item) -> Expected<std::string> {
    ++runs;
    return "secret:" + item.payload.str();
  };
  auto worker_options = fast_worker(*broker, "trusted");
  worker_options.curve = CurveClientKeys{server_public, client};
  auto worker = must(PoolWorker::start(worker_options, handler));
  ASSERT_TRUE(has_workers(*broker, 1));
  auto rogue_options = fast_worker(*broker, "rogue");
  rogue_options.curve = CurveClientKeys{server_public, stranger};
  auto rogue = must(PoolWorker::start(rogue_options, handler));

  auto allowed = call_as(*broker, CurveClientKeys{server_public, client}, "allowed");
  ASSERT_TRUE(allowed.result) << allowed.result.error().to_string();
  EXPECT_EQ(*allowed.result, "secret:p");
  EXPECT_EQ(allowed.worker_id, WorkerId{"trusted"});

  for (auto& [id, keys] : std::vector<std::pair<std::string, std::optional<CurveClientKeys>>>{
           {"unknown-key", CurveClientKeys{server_public, stranger}},
           {"no-curve", std::nullopt},
           {"wrong-server-key", CurveClientKeys{impostor_server.public_z85, client}}}) {
    const auto start = std::chrono::steady_clock::now();
    auto refused = call_as(*broker, keys, id, 20'000);
    const auto waited = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(refused.result) << id;
    EXPECT_EQ(refused.result.error().code, "pool.auth_failed") << id;
    EXPECT_NE(refused.result.error().message.find("authentication failed for " +
                                                  broker->client_endpoint()),
              std::string::npos)
        << id << ": " << refused.result.error().message;
    EXPECT_LT(waited, std::chrono::seconds(2)) << id;
  }
  EXPECT_TRUE(eventually([&] { return rogue->refusal().code == "pool.auth_failed"; },
                         std::chrono::seconds(2)))
      << rogue->refusal().to_string();
  EXPECT_NE(rogue->refusal().message.find(broker->worker_endpoint()), std::string::npos);
  EXPECT_TRUE(worker->refusal().code.empty()) << worker->refusal().to_string();
  auto s = stats_of(*broker);
  EXPECT_EQ(s.submitted, 1u);
  EXPECT_EQ(s.workers.size(), 1u);  // the rogue worker never registered
  EXPECT_EQ(runs.load(), 1);
  std::filesystem::remove_all(dir);
}

// A CURVE broker that lets one key pair in, and the client keys of a stranger it refuses.
struct BrokerAndStranger {
  std::unique_ptr<WorkPoolBroker> broker;
  CurveClientKeys stranger;
};
BrokerAndStranger broker_refusing_a_stranger() {
  quiet_logs();
  const CurveKeyPair server = must(generate_curve_keypair());
  auto options = fast_broker();
  options.curve = CurveServerKeys{server, {must(generate_curve_keypair()).public_z85}};
  return {must(WorkPoolBroker::start(options)),
          CurveClientKeys{server.public_z85, must(generate_curve_keypair())}};
}

// Covers: a client whose key was refused, asked again (call, call_async, stats): each fails at
// once with the same refusal, without waiting for a broker that will never let it in.
TEST(PoolCurve, ARefusedClientFailsEveryLaterRequestAtOnce) {
  auto [broker, stranger] = broker_refusing_a_stranger();
  std::promise<PoolOutcome> async;  // outlives the client
  auto client =
      must(PoolClient::connect({.broker_endpoint = broker->client_endpoint(), .curve = stranger}));
  auto first = client->call_with_details(request("first", "p", {}, 20'000));
  ASSERT_FALSE(first.result);
  ASSERT_EQ(first.result.error().code, "pool.auth_failed");
  const auto start = std::chrono::steady_clock::now();
  auto again = client->call_with_details(request("again", "p", {}, 20'000));
  ASSERT_FALSE(again.result);
  EXPECT_EQ(again.result.error().code, "pool.auth_failed");
  client->call_async(request("async", "p", {}, 20'000),
                     [&](PoolOutcome o) { async.set_value(std::move(o)); });
  auto async_outcome = async.get_future();
  ASSERT_EQ(async_outcome.wait_for(std::chrono::seconds(2)), std::future_status::ready);
  EXPECT_EQ(async_outcome.get().result.error().code, "pool.auth_failed");
  auto stats = client->stats(std::chrono::seconds(10));
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, "pool.auth_failed");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(stats_of(*broker).submitted, 0u);
}

// Covers: a worker whose key is refused, and refused again on every new socket it tries (one each
// broker_timeout_ms): on_refusal hears of it once, with the refusal, so a process can end itself
// on the first one (`cuda-agent serve compile-worker` exits 3) and is not told once per attempt.
TEST(PoolCurve, ARefusedWorkerIsToldOnce) {
  auto [broker, stranger] = broker_refusing_a_stranger();
  std::mutex mutex;
  std::vector<Error> told;
  auto worker_options = fast_worker(*broker, "rogue");
  worker_options.curve = stranger;
  worker_options.on_refusal = [&](const Error& e) {
    std::lock_guard lock(mutex);
    told.push_back(e);
  };
  auto worker =
      must(PoolWorker::start(worker_options, [](const WorkItem&) -> Expected<std::string> {
        return std::string("never");
      }));
  auto told_count = [&] {
    std::lock_guard lock(mutex);
    return told.size();
  };
  ASSERT_TRUE(eventually([&] { return told_count() == 1; }, std::chrono::seconds(2)));
  // Three more sockets, each refused in turn.
  const std::uint64_t tried = worker->announcements();
  ASSERT_TRUE(
      eventually([&] { return worker->announcements() >= tried + 3; }, std::chrono::seconds(5)));
  ASSERT_TRUE(eventually([&] { return worker->refusal().code == "pool.auth_failed"; },
                         std::chrono::seconds(2)));
  worker->stop();
  std::lock_guard lock(mutex);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].code, "pool.auth_failed");
  EXPECT_NE(told[0].message.find("authentication failed for " + broker->worker_endpoint()),
            std::string::npos)
      << told[0].message;
}

TEST(PoolCurve, CurveNeedsAnAllowList) {
  quiet_logs();
  auto options = fast_broker();
  options.curve = CurveServerKeys{must(generate_curve_keypair()), {}};
  auto broker = WorkPoolBroker::start(options);
  ASSERT_FALSE(broker);
  EXPECT_EQ(broker.error().code, "pool.options");
}

}  // namespace
}  // namespace cuda_agent
