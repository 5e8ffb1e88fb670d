// Property: at least 100,000 mutated or garbage frames, sent to both broker sockets and fed to the
// pool decoders, never crash or wedge anything: the decoders return a value or a typed
// invalid_input error, and afterwards the broker still serves a normal request. Prints its seed;
// set CUDA_AGENT_TEST_SEED to replay.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "tests/pool_test_util.h"

namespace cuda_agent {
namespace {

using namespace pool_test;

std::vector<std::string> valid_envelopes() {
  PoolStats stats;
  stats.workers.push_back(PoolWorkerStats{WorkerId{"w"}, {"fuzz"}, 2, 1, 3, 1, 10, 90});
  return {
      encode_pool(PoolSubmit{header("fuzz-r"), {"fuzz"}, 8}),
      encode_pool(PoolSubmit{header("fuzz-untagged", 50), {}, 0}),
      encode_pool(PoolReply{RequestId{"fuzz-r"}, std::nullopt, 8, 1, WorkerId{"w"}}),
      encode_pool(PoolReady{WorkerId{"fuzz-w"}, {"fuzz"}, 2, {"fuzz-held"}}),
      encode_pool(PoolHeartbeat{WorkerId{"fuzz-w"}, 3}),
      encode_pool(PoolResult{RequestId{"fuzz-r"}, std::nullopt, 8}),
      encode_pool(PoolResult{RequestId{"fuzz-r"}, make_error(ErrorCategory::kIo, "c", "m"), 0}),
      encode_pool(PoolWork{header("fuzz-r"), 8, 1}),
      encode_pool(PoolReregister{}),
      encode_pool(PoolDisconnect{WorkerId{"fuzz-w"}}),
      encode_pool(PoolStatsRequest{}),
      encode_pool(stats),
  };
}

std::string mutate(std::string f, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 6);
  for (int k = 0; k < edits && !f.empty(); ++k) {
    switch (rng() % 5) {
      case 0: f[rng() % f.size()] = static_cast<char>(rng()); break;
      case 1: f.resize(rng() % (f.size() + 1)); break;
      case 2: f.insert(rng() % (f.size() + 1), 8, static_cast<char>(rng())); break;
      case 3: f[rng() % f.size()] ^= static_cast<char>(1u << (rng() % 8)); break;
      case 4: f.resize(f.size() + 8 * (rng() % 4), '\0'); break;
    }
  }
  return f;
}

void drain(RawPeer& peer) {
  zmq::message_t m;
  while (peer.socket().recv(m, zmq::recv_flags::dontwait)) {
  }
}

TEST(PoolFuzz, MutatedFramesNeitherCrashNorWedgeTheBroker) {
  quiet_logs();
  const char* env = std::getenv("CUDA_AGENT_TEST_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("seed=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);

  auto options = fast_broker();
  options.max_queued_requests = 1000;
  auto broker = must(WorkPoolBroker::start(options));
  const std::string tag = "real-" + std::to_string(seed);
  auto worker = must(PoolWorker::start(
      fast_worker(*broker, "real-worker", {tag}),
      [](const WorkItem& item) -> Expected<std::string> { return "echo:" + item.payload.str(); }));
  ASSERT_TRUE(has_workers(*broker, 1));
  RawPeer client_side(broker->client_endpoint());
  RawPeer worker_side(broker->worker_endpoint());
  const auto seeds = valid_envelopes();

  int decoded = 0;
  int rejected = 0;
  constexpr int kFrames = 100'000;
  for (int i = 0; i < kFrames; ++i) {
    std::vector<std::string> frames;
    const std::string& base = seeds[rng() % seeds.size()];
    switch (rng() % 10) {
      case 0: {  // garbage
        std::string g(rng() % 96, '\0');
        for (char& c : g) c = static_cast<char>(rng());
        frames.push_back(std::move(g));
        break;
      }
      case 1: frames.push_back(base); break;  // valid, with random framing below
      default: frames.push_back(mutate(base, rng)); break;
    }
    const int extra = static_cast<int>(rng() % 3);
    for (int k = 0; k < extra; ++k) frames.push_back(std::string(rng() % 2 ? 8 : rng() % 64, 'x'));

    auto m = decode_pool_message(frames[0]);
    if (m) {
      ++decoded;
    } else {
      ++rejected;
      ASSERT_EQ(m.error().category, ErrorCategory::kInvalidInput) << m.error().to_string();
    }
    (i % 2 ? client_side : worker_side).send(frames);
    if (i % 256 == 0) {
      drain(client_side);
      drain(worker_side);
    }
  }
  EXPECT_GT(rejected, kFrames / 4);
  EXPECT_GT(decoded, 0);

  // The broker has read every frame once it answers a stats request queued behind them on the
  // same client connection.
  client_side.send({encode_pool(PoolStatsRequest{})});
  ASSERT_TRUE(client_side.receive_as<PoolStats>(std::chrono::seconds(30)));
  auto s = stats_of(*broker);
  std::printf(
      "decoder: %d decoded, %d rejected; broker: %llu malformed, %llu submitted, %llu "
      "workers lost, %llu unknown results\n",
      decoded, rejected, static_cast<unsigned long long>(s.malformed_frames),
      static_cast<unsigned long long>(s.submitted), static_cast<unsigned long long>(s.workers_lost),
      static_cast<unsigned long long>(s.unknown_results));
  EXPECT_GT(s.malformed_frames, static_cast<std::uint64_t>(kFrames / 4));

  auto client = must(PoolClient::connect({.broker_endpoint = broker->client_endpoint()}));
  auto out = client->call(request("after-fuzz", "still-serving", {tag}));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(*out, "echo:still-serving");
}

}  // namespace
}  // namespace cuda_agent
