// Weight sync over real ZeroMQ on loopback TCP: full transfers from two learner ranks, and faults
// injected through WeightPublisherOptions::fault_hook (flipped byte, truncated bucket, a bucket
// always corrupt, a rank killed mid-transfer), an unknown base, CURVE, deadlines, retention.
#include "actors/weight_sync.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace cuda_agent {
namespace {

std::uint64_t test_seed() {
  const char* env = std::getenv("CA_TEST_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("weight_sync_test seed %llu (set CA_TEST_SEED to repeat)\n",
              static_cast<unsigned long long>(seed));
  return seed;
}

// A version of `buckets` random buckets of 1..3 MiB (some odd sizes).
PublishedVersion random_version(std::uint64_t version, std::uint64_t base, int buckets,
                                std::uint64_t seed) {
  std::mt19937_64 rng(seed + version);
  PublishedVersion v;
  v.manifest.run_id = RunId{"run-ws"};
  v.manifest.version = PolicyVersion{version};
  v.manifest.base_version = PolicyVersion{base};
  v.manifest.full_snapshot = false;
  for (int i = 0; i < buckets; ++i) {
    std::string data((1u << 20) + rng() % (2u << 20), '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    WeightBucketInfo info;
    info.tensors.push_back({"t" + std::to_string(i),
                            TensorDType::kUInt8,
                            {static_cast<std::int64_t>(data.size())},
                            0,
                            data.size()});
    v.manifest.buckets.push_back(info);
    v.data.push_back(std::make_shared<const std::string>(std::move(data)));
  }
  seal_manifest(v.manifest, v.data);
  return v;
}

struct Ranks {
  std::vector<std::unique_ptr<WeightPublisher>> publishers;
  WeightFetcherOptions fetcher;
};

Ranks start_ranks(const PublishedVersion& v, std::uint32_t world, std::uint32_t replicas,
                  std::vector<ServeFaultHook> hooks = {}) {
  Ranks out;
  out.fetcher.plan = {world, replicas};
  out.fetcher.run_id = RunId{"run-ws"};
  out.fetcher.request_timeout_ms = 20'000;
  for (std::uint32_t r = 0; r < world; ++r) {
    WeightPublisherOptions o;
    o.run_id = RunId{"run-ws"};
    if (r < hooks.size()) o.fault_hook = hooks[r];
    auto p = WeightPublisher::start(o);
    EXPECT_TRUE(p) << p.error().to_string();
    EXPECT_TRUE((*p)->publish(shard_of(v, out.fetcher.plan, r)));
    out.fetcher.endpoints.push_back((*p)->endpoint());
    out.publishers.push_back(std::move(*p));
  }
  return out;
}

// Fetches the manifest and every bucket into `got` (by index).
Expected<FetchStats> fetch_all(WeightFetcher& f, PolicyVersion version, PolicyVersion held,
                               std::vector<std::string>& got) {
  ASSIGN_OR_RETURN(WeightManifest m, f.fetch_manifest(version, 10'000));
  got.assign(m.buckets.size(), "");
  return f.fetch(
      m, held,
      [&](const WeightBucketInfo& info, std::string_view data) -> Status {
        got[info.index] = std::string(data);
        return Status::ok();
      },
      30'000);
}

void expect_same(const PublishedVersion& v, const std::vector<std::string>& got) {
  ASSERT_EQ(got.size(), v.data.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == *v.data[i]) << "bucket " << i;
}

TEST(ShardPlan, EveryBucketHasItsReplicasPrimaryFirst) {
  const ShardPlan plan{4, 2};
  for (std::uint32_t i = 0; i < 12; ++i) {
    const auto ranks = plan.ranks_of(i);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_EQ(ranks[0], i % 4);
    for (std::uint32_t r = 0; r < 4; ++r) {
      EXPECT_EQ(plan.serves(r, i), std::count(ranks.begin(), ranks.end(), r) == 1) << i << " " << r;
    }
  }
  EXPECT_EQ((ShardPlan{3, 5}).ranks_of(7).size(), 3u);  // replicas capped at world
}

TEST(WeightSync, FullTransferFromTwoRanks) {
  const auto v = random_version(7, 6, 9, test_seed());
  Ranks ranks = start_ranks(v, 2, 1);
  WeightFetcher f(ranks.fetcher);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{7}, PolicyVersion{6}, got);
  ASSERT_TRUE(stats) << stats.error().to_string();
  expect_same(v, got);
  EXPECT_EQ(stats->bytes, v.manifest.total_bytes);
  EXPECT_EQ(stats->retries, 0u);
  EXPECT_GT(ranks.publishers[0]->served(), 4u);  // both ranks served their share
  EXPECT_GE(ranks.publishers[1]->served(), 4u);
}

TEST(WeightSync, FlippedByteAndTruncatedBucketAreFetchedAgain) {
  const auto v = random_version(8, 7, 6, test_seed());
  Ranks ranks = start_ranks(v, 1, 1, {[](PolicyVersion, std::uint32_t i, int before) {
                              if (i == 2 && before == 0) return ServeFault::kFlipByte;
                              if (i == 4 && before < 2) return ServeFault::kTruncate;
                              return ServeFault::kNone;
                            }});
  WeightFetcher f(ranks.fetcher);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{8}, PolicyVersion{7}, got);
  ASSERT_TRUE(stats) << stats.error().to_string();
  expect_same(v, got);
  EXPECT_EQ(stats->retries, 3u);
}

TEST(WeightSync, AlwaysCorruptBucketFailsAfterThreeTriesAndDeliversNothingOfIt) {
  const auto v = random_version(9, 8, 5, test_seed());
  int serves_of_3 = 0;
  Ranks ranks = start_ranks(v, 1, 1, {[&](PolicyVersion, std::uint32_t i, int) {
                              if (i != 3) return ServeFault::kNone;
                              ++serves_of_3;
                              return ServeFault::kFlipByte;
                            }});
  WeightFetcher f(ranks.fetcher);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{9}, PolicyVersion{8}, got);
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, "policy.weights_corrupt") << stats.error().to_string();
  EXPECT_NE(stats.error().message.find("bucket 3"), std::string::npos);
  EXPECT_TRUE(got[3].empty());
  ranks.publishers.clear();  // joins the serving thread before reading its counter
  EXPECT_EQ(serves_of_3, 3);
}

TEST(WeightSync, RefusesAVersionWhoseBaseItDoesNotHoldUnlessFullSnapshot) {
  auto v = random_version(10, 9, 2, test_seed());
  Ranks ranks = start_ranks(v, 1, 1);
  WeightFetcher f(ranks.fetcher);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{10}, PolicyVersion{5}, got);
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, "policy.unknown_base");
  EXPECT_EQ(ranks.publishers[0]->served(), 1u);  // only the manifest was asked for

  v.manifest.version = PolicyVersion{11};
  v.manifest.full_snapshot = true;
  ASSERT_TRUE(ranks.publishers[0]->publish(v));
  stats = fetch_all(f, PolicyVersion{11}, PolicyVersion{5}, got);
  ASSERT_TRUE(stats) << stats.error().to_string();
  expect_same(v, got);
}

TEST(WeightSync, ARankKilledMidTransferIsReplacedByAnotherRanksCopy) {
  const auto v = random_version(12, 11, 10, test_seed());
  Ranks ranks = start_ranks(v, 2, 2, {nullptr, [](PolicyVersion, std::uint32_t, int) {
                                        static int n = 0;
                                        return n++ == 1 ? ServeFault::kDie : ServeFault::kNone;
                                      }});
  WeightFetcher f(ranks.fetcher);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{12}, PolicyVersion{11}, got);
  ASSERT_TRUE(stats) << stats.error().to_string();
  expect_same(v, got);
  EXPECT_EQ(stats->ranks_lost, 1u);
  EXPECT_GE(stats->retries, 1u);
  // Found through the disconnect, not the 20 s request timeout.
  EXPECT_LT(stats->seconds, 10.0);
}

TEST(WeightSync, ARankThatStopsAnsweringIsSkippedAfterTheRequestTimeout) {
  const auto v = random_version(14, 13, 6, test_seed());
  Ranks ranks = start_ranks(v, 2, 2, {[](PolicyVersion, std::uint32_t i, int) {
                              return i == 2 ? ServeFault::kHang : ServeFault::kNone;
                            }});
  ranks.fetcher.request_timeout_ms = 500;
  WeightFetcher f(ranks.fetcher);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{14}, PolicyVersion{13}, got);
  ASSERT_TRUE(stats) << stats.error().to_string();
  expect_same(v, got);
  EXPECT_EQ(stats->ranks_lost, 1u);
}

TEST(WeightSync, RefusesAnUnknownChecksumAlgorithmAndInconsistentSizes) {
  auto v = random_version(15, 14, 2, test_seed());
  WeightFetcherOptions fo;
  fo.endpoints = {"tcp://127.0.0.1:1"};
  WeightFetcher f(fo);
  auto sink = [](const WeightBucketInfo&, std::string_view) { return Status(); };
  WeightManifest m = v.manifest;
  m.buckets[1].checksum_algorithm = "crc32";
  auto stats = f.fetch(m, PolicyVersion{14}, sink, 1'000);
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, "weights.bad_manifest");
  EXPECT_NE(stats.error().message.find("crc32"), std::string::npos);
  m = v.manifest;
  m.total_bytes += 1;
  stats = f.fetch(m, PolicyVersion{14}, sink, 1'000);
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, "weights.bad_manifest");
}

TEST(WeightSync, SecuredRankServesOnlyAllowListedEngines) {
  auto server = generate_curve_keypair();
  auto engine = generate_curve_keypair();
  auto stranger = generate_curve_keypair();
  ASSERT_TRUE(server && engine && stranger);
  const auto v = random_version(13, 12, 2, test_seed());
  WeightPublisherOptions o;
  o.curve = CurveServerKeys{*server, {engine->public_z85}};
  auto p = WeightPublisher::start(o);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_TRUE((*p)->publish(v));
  WeightFetcherOptions fo;
  fo.endpoints = {(*p)->endpoint()};
  fo.client_keys = *engine;
  fo.server_public_z85 = {server->public_z85};
  WeightFetcher f(fo);
  std::vector<std::string> got;
  auto stats = fetch_all(f, PolicyVersion{13}, PolicyVersion{12}, got);
  ASSERT_TRUE(stats) << stats.error().to_string();
  expect_same(v, got);

  fo.client_keys = *stranger;
  fo.request_timeout_ms = 300;
  WeightFetcher refused(fo);
  auto m = refused.fetch_manifest(PolicyVersion{13}, 1'000);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().category, ErrorCategory::kUnavailable) << m.error().to_string();
}

TEST(WeightSync, EveryWaitHasADeadline) {
  WeightFetcherOptions fo;
  fo.endpoints = {"tcp://127.0.0.1:1"};  // nothing listens
  WeightFetcher f(fo);
  const auto start = std::chrono::steady_clock::now();
  auto m = f.fetch_manifest(PolicyVersion{1}, 300);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, "weights.deadline");
  const auto v = random_version(1, 0, 2, 1);
  auto stats = f.fetch(
      v.manifest, PolicyVersion{0},
      [](const WeightBucketInfo&, std::string_view) { return Status(); }, 300);
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, "weights.deadline");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(VersionRetention, KeepsEveryVersionALiveEngineHasNotLoaded) {
  VersionRetention r;
  r.engine_joined(WorkerId{"e1"}, PolicyVersion{0});
  r.engine_joined(WorkerId{"e2"}, PolicyVersion{0});
  for (std::uint64_t v = 1; v <= 3; ++v) r.published(PolicyVersion{v});
  EXPECT_TRUE(r.take_releasable().empty());
  r.engine_loaded(WorkerId{"e1"}, PolicyVersion{3});
  r.engine_loaded(WorkerId{"e2"}, PolicyVersion{1});
  EXPECT_EQ(r.take_releasable(), std::vector<PolicyVersion>{PolicyVersion{1}});
  r.engine_lost(WorkerId{"e2"});  // declared lost: holds nothing back
  EXPECT_EQ(r.take_releasable(), std::vector<PolicyVersion>{PolicyVersion{2}});
  // The newest is kept even when everyone has it (a restarted engine catches up from it).
  EXPECT_TRUE(r.take_releasable().empty());
  EXPECT_EQ(r.retained().size(), 1u);
}

}  // namespace
}  // namespace cuda_agent
