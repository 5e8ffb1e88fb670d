#include "messages/learner_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::with_format_version;

TEST(LearnerCodec, WeightManifestRoundTrips) {
  const WeightManifest in = wire_samples::weight_manifest();
  const std::string bytes = encode_weight_manifest(in);
  auto out = decode_weight_manifest(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->run_id, in.run_id);
  EXPECT_EQ(out->version, PolicyVersion{43});
  EXPECT_EQ(out->base_version, PolicyVersion{42});
  EXPECT_FALSE(out->full_snapshot);
  EXPECT_EQ(out->total_bytes, in.total_bytes);
  ASSERT_EQ(out->buckets.size(), 2u);
  for (std::size_t b = 0; b < 2; ++b) {
    const WeightBucketInfo& got = out->buckets[b];
    const WeightBucketInfo& want = in.buckets[b];
    EXPECT_EQ(got.index, want.index);
    EXPECT_EQ(got.size_bytes, want.size_bytes);
    EXPECT_EQ(got.checksum, want.checksum);
    EXPECT_EQ(got.checksum_algorithm, "xxh64");
    ASSERT_EQ(got.tensors.size(), want.tensors.size());
    for (std::size_t t = 0; t < got.tensors.size(); ++t) {
      EXPECT_EQ(got.tensors[t].name, want.tensors[t].name);
      EXPECT_EQ(got.tensors[t].dtype, want.tensors[t].dtype);
      EXPECT_EQ(got.tensors[t].shape, want.tensors[t].shape);
      EXPECT_EQ(got.tensors[t].offset_bytes, want.tensors[t].offset_bytes);
      EXPECT_EQ(got.tensors[t].size_bytes, want.tensors[t].size_bytes);
    }
  }
  EXPECT_TRUE(out->buckets[1].tensors[0].shape.empty());  // a scalar
  EXPECT_EQ(encode_weight_manifest(*out), bytes);
}

TEST(LearnerCodec, EveryDTypeRoundTripsAndANewerOneIsUnknown) {
  WeightManifest m;
  m.buckets.resize(1);
  for (int d = 0; d <= 13; ++d) {
    m.buckets[0].tensors.push_back(
        {"t" + std::to_string(d), static_cast<TensorDType>(d), {}, 0, 0});
  }
  auto out = decode_weight_manifest(encode_weight_manifest(m));
  ASSERT_TRUE(out) << out.error().to_string();
  for (int d = 0; d <= 12; ++d) {
    EXPECT_EQ(out->buckets[0].tensors[d].dtype, static_cast<TensorDType>(d));
  }
  EXPECT_EQ(out->buckets[0].tensors[13].dtype, TensorDType::kUnknown);
}

TEST(LearnerCodec, WeightBucketRoundTripsEightMebibytes) {
  const WeightBucket in = wire_samples::weight_bucket(8u << 20);
  const std::string bytes = encode_weight_bucket(in);
  auto out = decode_weight_bucket(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->version, PolicyVersion{43});
  EXPECT_EQ(out->index, 1u);
  EXPECT_EQ(out->data, in.data);
  // Larger than the limit: the receiver passes a limit that fits its bucket size.
  EXPECT_EQ(decode_weight_bucket(bytes, {.max_bytes = 4u << 20}).error().code, "wire.too_large");
}

TEST(LearnerCodec, VersionAnnouncementRoundTrips) {
  const VersionAnnouncement in = wire_samples::version_announcement();
  auto out = decode_version_announcement(encode_version_announcement(in));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->run_id, in.run_id);
  EXPECT_EQ(out->version, PolicyVersion{43});
  EXPECT_EQ(out->base_version, PolicyVersion{42});
  EXPECT_EQ(out->total_bytes, in.total_bytes);
  EXPECT_EQ(out->bucket_count, 2u);
  EXPECT_EQ(out->published_unix_ms, in.published_unix_ms);
}

TEST(LearnerCodec, EmptyAndExtremeValuesRoundTrip) {
  auto manifest = decode_weight_manifest(encode_weight_manifest(WeightManifest{}));
  ASSERT_TRUE(manifest) << manifest.error().to_string();
  EXPECT_TRUE(manifest->buckets.empty());
  auto bucket = decode_weight_bucket(encode_weight_bucket(WeightBucket{}));
  ASSERT_TRUE(bucket) << bucket.error().to_string();
  EXPECT_TRUE(bucket->data.empty());

  VersionAnnouncement a;
  a.version = PolicyVersion{std::numeric_limits<std::uint64_t>::max()};
  a.published_unix_ms = std::numeric_limits<std::int64_t>::min();
  a.bucket_count = std::numeric_limits<std::uint32_t>::max();
  auto out = decode_version_announcement(encode_version_announcement(a));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->version, a.version);
  EXPECT_EQ(out->published_unix_ms, a.published_unix_ms);
  EXPECT_EQ(out->bucket_count, a.bucket_count);

  WeightManifest m;
  m.buckets = {{0,
                {{"w",
                  TensorDType::kInt8,
                  {-1, std::numeric_limits<std::int64_t>::max()},
                  0,
                  std::numeric_limits<std::uint64_t>::max()}},
                0,
                std::numeric_limits<std::uint64_t>::max(),
                ""}};
  auto back = decode_weight_manifest(encode_weight_manifest(m));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->buckets[0].tensors[0].shape, m.buckets[0].tensors[0].shape);
  EXPECT_EQ(back->buckets[0].checksum, std::numeric_limits<std::uint64_t>::max());
}

TEST(LearnerCodec, RejectsANewerFormatVersionAndAnotherMessageType) {
  const std::string manifest = encode_weight_manifest(wire_samples::weight_manifest());
  const std::string bucket = encode_weight_bucket(wire_samples::weight_bucket(100));
  const std::string announcement =
      encode_version_announcement(wire_samples::version_announcement());
  EXPECT_EQ(decode_weight_manifest(with_format_version(manifest, false, 2)).error().code,
            "wire.version");
  EXPECT_EQ(decode_weight_bucket(with_format_version(bucket, false, 2)).error().code,
            "wire.version");
  EXPECT_EQ(decode_version_announcement(with_format_version(announcement, false, 9)).error().code,
            "wire.version");
  EXPECT_EQ(decode_weight_manifest(bucket).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_weight_bucket(announcement).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_version_announcement(manifest).error().code, "wire.wrong_type");
}

TEST(LearnerCodec, WeightTensorPieceOffsetRoundTrips) {
  WeightManifest m;
  m.buckets.resize(1);
  m.buckets[0].tensors.push_back({"embed", TensorDType::kBFloat16, {8, 4}, 0, 32, 32});
  auto out = decode_weight_manifest(encode_weight_manifest(m));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->buckets[0].tensors[0].piece_offset_bytes, 32u);
  EXPECT_EQ(out->buckets[0].tensors[0].size_bytes, 32u);
}

TEST(LearnerCodec, WeightFetchRequestAndReplyRoundTrip) {
  WeightFetchRequest q{RequestId{"f-1"}, RunId{"run-7"}, PolicyVersion{43}, false, 5};
  auto back = decode_weight_fetch_request(encode_weight_fetch_request(q));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->request_id, q.request_id);
  EXPECT_EQ(back->run_id, q.run_id);
  EXPECT_EQ(back->version, PolicyVersion{43});
  EXPECT_FALSE(back->manifest_only);
  EXPECT_EQ(back->bucket_index, 5u);

  WeightFetchReply ok{RequestId{"f-1"}, PolicyVersion{43}, true, 0, 1234, Status::ok()};
  auto r = decode_weight_fetch_reply(encode_weight_fetch_reply(ok));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->outcome.is_ok());
  EXPECT_TRUE(r->manifest_only);
  EXPECT_EQ(r->payload_bytes, 1234u);

  WeightFetchReply bad = ok;
  bad.outcome = make_error(ErrorCategory::kNotFound, "weights.not_held", "version 43 was freed");
  auto e = decode_weight_fetch_reply(encode_weight_fetch_reply(bad));
  ASSERT_TRUE(e) << e.error().to_string();
  ASSERT_FALSE(e->outcome.is_ok());
  EXPECT_EQ(e->outcome.error().code, "weights.not_held");
  EXPECT_EQ(e->outcome.error().category, ErrorCategory::kNotFound);
  EXPECT_EQ(e->outcome.error().message, "version 43 was freed");

  const std::string request = encode_weight_fetch_request(q);
  EXPECT_EQ(decode_weight_fetch_reply(request).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_weight_fetch_request(encode_weight_fetch_reply(ok)).error().code,
            "wire.wrong_type");
  EXPECT_EQ(decode_weight_fetch_request(with_format_version(request, false, 9)).error().code,
            "wire.version");
  EXPECT_FALSE(decode_weight_fetch_request(request.substr(0, request.size() / 2)));
}

}  // namespace
}  // namespace cuda_agent
