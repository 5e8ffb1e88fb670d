#include "messages/common_codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace cuda_agent {
namespace {

std::string_view as_span(const std::string& s) { return s; }

TEST(CommonCodec, ErrorRoundTrips) {
  Error e = make_error(ErrorCategory::kPolicy, "policy.symbol", "dlopen is not allowed");
  auto back = decode_error(as_span(encode_error(e)));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->category, ErrorCategory::kPolicy);
  EXPECT_EQ(back->code, "policy.symbol");
  EXPECT_EQ(back->message, "dlopen is not allowed");
}

TEST(CommonCodec, HeaderRoundTripsAndCarriesTheFormatVersion) {
  RequestHeader h{.request_id = RequestId{"r-1"},
                  .run_id = RunId{"run"},
                  .policy_version = PolicyVersion{7},
                  .deadline_unix_ms = 1'800'000'000'000};
  auto back = decode_request_header(as_span(encode_request_header(h)));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->format_version, 1);
  EXPECT_EQ(back->request_id, RequestId{"r-1"});
  EXPECT_EQ(back->policy_version, PolicyVersion{7});
  EXPECT_EQ(back->deadline_unix_ms, 1'800'000'000'000);
}

TEST(CommonCodec, RejectsEmptyTruncatedOversizedAndUnalignedInput) {
  std::string good = encode_error(make_error(ErrorCategory::kIo, "x", "y"));
  EXPECT_EQ(decode_error({}).error().code, "wire.malformed");
  EXPECT_EQ(decode_error(as_span(good.substr(0, good.size() - 8))).error().code, "wire.malformed");
  EXPECT_EQ(decode_error(as_span(good.substr(0, 5))).error().code, "wire.malformed");
  EXPECT_EQ(decode_error(as_span(good), {.max_bytes = 8}).error().code, "wire.too_large");
  // Not 8-byte aligned in memory: the decoder copies, so this still decodes.
  std::string shifted = "x" + good;
  EXPECT_TRUE(decode_error(as_span(shifted).substr(1)));
}

TEST(CommonCodec, RejectsANewerFormatVersion) {
  std::string bytes = encode_request_header({});
  // The format version is the first UInt16 of the root struct's data section: word 2 of the
  // flat message (segment table, root pointer, data).
  bytes[16] = 2;
  auto r = decode_request_header(as_span(bytes));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "wire.version");
}

// Property: any mutation of a valid frame decodes to a value or a typed error, never a crash or
// an exception. Prints its seed; set CUDA_AGENT_TEST_SEED to replay.
TEST(CommonCodec, MutatedFramesNeverCrash) {
  const char* env = std::getenv("CUDA_AGENT_TEST_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("seed=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  RequestHeader h{.request_id = RequestId{"request-0123456789"}, .run_id = RunId{"run-a"}};
  const std::string frames[] = {
      encode_error(make_error(ErrorCategory::kTimeout, "broker.deadline", "late")),
      encode_request_header(h)};
  int errors = 0;
  for (int i = 0; i < 20'000; ++i) {
    std::string f = frames[i % 2];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < edits; ++k) {
      switch (rng() % 4) {
        case 0: f[rng() % f.size()] = static_cast<char>(rng()); break;  // flip a byte
        case 1: f.resize(rng() % (f.size() + 1)); break;                // truncate
        case 2: f.insert(rng() % (f.size() + 1), 8, static_cast<char>(rng())); break;  // grow
        case 3:
          if (!f.empty()) f[rng() % f.size()] ^= static_cast<char>(1u << (rng() % 8));
          break;
      }
      if (f.empty()) break;
    }
    auto a = decode_error(as_span(f));
    auto b = decode_request_header(as_span(f));
    errors += !a + !b;
    if (!a) {
      EXPECT_EQ(a.error().category, ErrorCategory::kInvalidInput);
    }
    if (!b) {
      EXPECT_EQ(b.error().category, ErrorCategory::kInvalidInput);
    }
  }
  EXPECT_GT(errors, 0);  // the mutations did reach the error paths
}

}  // namespace
}  // namespace cuda_agent
