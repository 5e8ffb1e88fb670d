#include "messages/pool_codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace cuda_agent {
namespace {

RequestHeader header() {
  return RequestHeader{.request_id = RequestId{"r-1"},
                       .run_id = RunId{"run"},
                       .policy_version = PolicyVersion{7},
                       .deadline_unix_ms = 1'800'000'000'000};
}

template <class T>
T round_trip(const T& m) {
  auto back = decode_pool_message(encode_pool(m));
  EXPECT_TRUE(back) << back.error().to_string();
  if (!back) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*back)) << pool_message_name(*back);
  return std::holds_alternative<T>(*back) ? std::get<T>(*back) : T{};
}

TEST(PoolCodec, SubmitAndWorkRoundTrip) {
  auto s = round_trip(PoolSubmit{header(), {"gpu:NVIDIA H200", "sm_90"}, 4096});
  EXPECT_EQ(s.header.request_id, RequestId{"r-1"});
  EXPECT_EQ(s.header.format_version, 1);
  EXPECT_EQ(s.header.deadline_unix_ms, 1'800'000'000'000);
  EXPECT_EQ(s.tags, (std::vector<std::string>{"gpu:NVIDIA H200", "sm_90"}));
  EXPECT_EQ(s.payload_bytes, 4096u);
  EXPECT_TRUE(has_payload_frame(PoolMessage{s}));

  auto w = round_trip(PoolWork{header(), 9, 2});
  EXPECT_EQ(w.header.run_id, RunId{"run"});
  EXPECT_EQ(w.payload_bytes, 9u);
  EXPECT_EQ(w.attempt, 2u);
}

TEST(PoolCodec, ReplyAndResultCarryAPayloadOrATypedError) {
  auto ok = round_trip(PoolReply{RequestId{"r-2"}, std::nullopt, 12, 3, WorkerId{"w-1"}});
  EXPECT_FALSE(ok.error);
  EXPECT_EQ(ok.payload_bytes, 12u);
  EXPECT_EQ(ok.attempts, 3u);
  EXPECT_EQ(ok.worker_id, WorkerId{"w-1"});
  EXPECT_TRUE(has_payload_frame(PoolMessage{ok}));

  Error e = make_error(ErrorCategory::kUnavailable, "pool.busy", "queue full");
  auto bad = round_trip(PoolReply{RequestId{"r-3"}, e, 0, 0, WorkerId{}});
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->category, ErrorCategory::kUnavailable);
  EXPECT_EQ(bad.error->code, "pool.busy");
  EXPECT_EQ(bad.error->message, "queue full");
  EXPECT_FALSE(has_payload_frame(PoolMessage{bad}));

  auto r =
      round_trip(PoolResult{RequestId{"r-4"}, make_error(ErrorCategory::kPolicy, "p", "m"), 0});
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->category, ErrorCategory::kPolicy);
  auto r2 = round_trip(PoolResult{RequestId{"r-5"}, std::nullopt, 77});
  EXPECT_EQ(r2.payload_bytes, 77u);
}

TEST(PoolCodec, WorkerMessagesAndStatsRoundTrip) {
  auto ready = round_trip(PoolReady{WorkerId{"w-9"}, {"cpu"}, 4, {"r-7"}});
  EXPECT_EQ(ready.worker_id, WorkerId{"w-9"});
  EXPECT_EQ(ready.slots, 4u);
  EXPECT_EQ(ready.running, std::vector<std::string>{"r-7"});
  EXPECT_EQ(round_trip(PoolHeartbeat{WorkerId{"w-9"}, 41}).seq, 41u);
  EXPECT_EQ(round_trip(PoolDisconnect{WorkerId{"w-9"}}).worker_id, WorkerId{"w-9"});
  round_trip(PoolReregister{});
  round_trip(PoolStatsRequest{});

  PoolStats stats;
  stats.queue_depth = 3;
  stats.late_results = 2;
  stats.unknown_results = 5;
  stats.wakes = 6;
  stats.messages_read = 7;
  stats.workers.push_back(PoolWorkerStats{WorkerId{"w"}, {"a"}, 2, 1, 10, 1, 150, 900});
  auto back = round_trip(stats);
  EXPECT_EQ(back.queue_depth, 3u);
  EXPECT_EQ(back.late_results, 2u);
  EXPECT_EQ(back.unknown_results, 5u);
  EXPECT_EQ(back.wakes, 6u);
  EXPECT_EQ(back.messages_read, 7u);
  ASSERT_EQ(back.workers.size(), 1u);
  EXPECT_EQ(back.workers[0].latency_p99_us, 900u);
  EXPECT_EQ(back.workers[0].tags, std::vector<std::string>{"a"});
}

TEST(PoolCodec, RejectsUnsetAndNewerFormatVersions) {
  std::string bytes = encode_pool(PoolHeartbeat{WorkerId{"w"}, 1});
  // formatVersion is the first UInt16 of the root's data section: word 2 of the flat message.
  bytes[16] = 0;
  EXPECT_EQ(decode_pool_message(bytes).error().code, "wire.version");
  bytes[16] = 2;
  EXPECT_EQ(decode_pool_message(bytes).error().code, "wire.version");
}

TEST(PoolCodec, RejectsOverLongIdsTooManyTagsAndOversizedFrames) {
  PoolSubmit s{header(), {}, 0};
  s.header.request_id = RequestId{std::string(kPoolMaxTextBytes + 1, 'x')};
  auto r = decode_pool_message(encode_pool(s));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "wire.malformed");

  PoolReady ready{WorkerId{"w"}, std::vector<std::string>(kPoolMaxTags + 1, "t"), 1};
  EXPECT_EQ(decode_pool_message(encode_pool(ready)).error().code, "wire.malformed");

  std::string hb = encode_pool(PoolHeartbeat{});
  DecodeLimits small;
  small.max_bytes = 8;
  EXPECT_EQ(decode_pool_message(hb, small).error().code, "wire.too_large");
  EXPECT_EQ(decode_pool_message(hb.substr(0, 5)).error().code, "wire.malformed");
  EXPECT_EQ(decode_pool_message("").error().code, "wire.malformed");
}

// Covers the two forms of a message with a payload: appended to the envelope frame (up to
// kPoolInlinePayloadBytes) or in a frame of its own (the envelope frame alone).
TEST(PoolCodec, FramesSplitAnInlinePayloadFromTheEnvelope) {
  const std::string envelope = encode_pool(PoolSubmit{header(), {"cpu"}, 5});
  const std::string framed = envelope + "hello";  // `trailing` is a view into the frame
  auto inline_form = decode_pool_frame(framed);
  ASSERT_TRUE(inline_form) << inline_form.error().to_string();
  EXPECT_EQ(inline_form->trailing, "hello");
  EXPECT_EQ(std::get<PoolSubmit>(inline_form->message).payload_bytes, 5u);

  auto alone = decode_pool_frame(envelope);
  ASSERT_TRUE(alone);
  EXPECT_TRUE(alone->trailing.empty());

  // Bytes after a message that takes no payload, an inline payload over the limit, and an
  // envelope cut short are refused with typed errors.
  auto after_heartbeat = decode_pool_frame(encode_pool(PoolHeartbeat{WorkerId{"w"}, 1}) + "x");
  ASSERT_FALSE(after_heartbeat);
  EXPECT_EQ(after_heartbeat.error().code, "wire.malformed");
  EXPECT_NE(after_heartbeat.error().message.find("heartbeat"), std::string::npos)
      << after_heartbeat.error().message;
  auto big = decode_pool_frame(envelope + std::string(kPoolInlinePayloadBytes + 1, 'p'));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, "wire.too_large");
  EXPECT_EQ(decode_pool_frame(envelope.substr(0, envelope.size() - 8)).error().code,
            "wire.malformed");
  DecodeLimits small;
  small.max_bytes = 64;
  EXPECT_EQ(
      decode_pool_frame(std::string(64 + kPoolInlinePayloadBytes + 1, '\0'), small).error().code,
      "wire.too_large");
  // A segment table that claims more than the frame holds is left to the decoder to refuse.
  std::string lying = envelope;
  lying[4] = '\x7f';
  EXPECT_FALSE(decode_pool_frame(lying));
}

// Property: 100,000 mutated or garbage frames decode to a value or a typed invalid_input error,
// never a crash or an exception. Prints its seed; set CUDA_AGENT_TEST_SEED to replay.
TEST(PoolCodec, MutatedFramesNeverCrash) {
  const char* env = std::getenv("CUDA_AGENT_TEST_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("seed=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  PoolStats stats;
  stats.workers.push_back(PoolWorkerStats{WorkerId{"w"}, {"a", "b"}, 2, 1, 10, 1, 150, 900});
  const std::vector<std::string> frames = {
      encode_pool(PoolSubmit{header(), {"gpu:NVIDIA H200"}, 64}),
      encode_pool(PoolReply{RequestId{"r"}, make_error(ErrorCategory::kTimeout, "c", "m"), 0, 1,
                            WorkerId{"w"}}),
      encode_pool(PoolReady{WorkerId{"w"}, {"cpu", "x"}, 2}),
      encode_pool(PoolResult{RequestId{"r"}, std::nullopt, 5}),
      encode_pool(PoolWork{header(), 5, 1}),
      encode_pool(stats)};
  int errors = 0;
  int values = 0;
  for (int i = 0; i < 100'000; ++i) {
    std::string f;
    if (i % 10 == 0) {  // pure garbage of a whole number of words
      f.resize(8 * (rng() % 16));
      for (char& c : f) c = static_cast<char>(rng());
    } else {
      f = frames[i % frames.size()];
      const int edits = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < edits && !f.empty(); ++k) {
        switch (rng() % 4) {
          case 0: f[rng() % f.size()] = static_cast<char>(rng()); break;
          case 1: f.resize(rng() % (f.size() + 1)); break;
          case 2: f.insert(rng() % (f.size() + 1), 8, static_cast<char>(rng())); break;
          case 3: f[rng() % f.size()] ^= static_cast<char>(1u << (rng() % 8)); break;
        }
      }
    }
    auto m = decode_pool_message(f);
    if (m) {
      ++values;
      (void)encode_pool_message(*m);  // whatever decodes must also encode
    } else {
      ++errors;
      ASSERT_EQ(m.error().category, ErrorCategory::kInvalidInput) << m.error().to_string();
    }
    // The same frame read as one that may carry an inline payload: its segment table is read
    // before the decoder sees it, so it gets the same treatment.
    auto split = decode_pool_frame(f);
    if (split) {
      ASSERT_LE(split->trailing.size(), kPoolInlinePayloadBytes);
      ASSERT_TRUE(split->trailing.empty() || has_payload_frame(split->message));
    } else {
      ASSERT_EQ(split.error().category, ErrorCategory::kInvalidInput) << split.error().to_string();
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(values, 0);
}

}  // namespace
}  // namespace cuda_agent
