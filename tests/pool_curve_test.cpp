// CURVE on the work pool: only clients and workers whose public keys the broker allows (ZAP
// handler) get service; everyone else's requests go unanswered until their deadline.
#include <gtest/gtest.h>

#include <filesystem>

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
                    const std::string& id) {
  auto client = must(
      PoolClient::connect({.broker_endpoint = broker.client_endpoint(), .curve = std::move(keys)}));
  return client->call_with_details(request(id, "p", {}, 400));
}

// Covers: an unknown client key, no CURVE at all, and a wrong server key each get no service
// (their waits end at the deadline and no handler runs); a worker with an unknown key never
// registers; the allowed client, with keys read from key files, gets its answer.
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
    auto refused = call_as(*broker, keys, id);
    ASSERT_FALSE(refused.result) << id;
    EXPECT_EQ(refused.result.error().code, "pool.deadline_expired") << id;
  }
  auto s = stats_of(*broker);
  EXPECT_EQ(s.submitted, 1u);
  EXPECT_EQ(s.workers.size(), 1u);  // the rogue worker never registered (1.2 s of retries)
  EXPECT_EQ(runs.load(), 1);
  std::filesystem::remove_all(dir);
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
