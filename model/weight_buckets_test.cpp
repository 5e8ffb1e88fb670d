// Weight buckets on the CPU with tiny models: publish a Transformer's weights through a real
// WeightPublisher / WeightFetcher on loopback, stage them into another Transformer, and compare
// bit for bit; versions of another layout are refused with the tensor named.
#include "model/weight_buckets.h"

#include <gtest/gtest.h>

#include "model/model_test_util.h"

namespace cuda_agent {
namespace {

Transformer tiny(const std::string& type, std::uint64_t seed, at::ScalarType dtype) {
  return Transformer::random(testing::tiny_config(type), seed,
                             {.device = at::kCPU, .dtype = dtype});
}

void expect_bit_identical(const Transformer& a, const Transformer& b) {
  const auto pa = a.parameters();
  const auto pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
}

TEST(WeightBuckets, PublishFetchAndStageGivesBitIdenticalWeights) {
  for (const at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    const Transformer source = tiny("qwen2", 1, dtype);
    // 1000-byte buckets: most tensors are split into pieces over several buckets.
    auto version = snapshot_weights(source, RunId{"r"}, PolicyVersion{5}, PolicyVersion{4},
                                    {.bucket_bytes = 1000});
    ASSERT_TRUE(version) << version.error().to_string();
    EXPECT_GT(version->manifest.buckets.size(), 10u);
    for (const auto& b : version->manifest.buckets) {
      EXPECT_LE(b.size_bytes, 1000u);
      for (const auto& t : b.tensors) {
        EXPECT_EQ(t.dtype, dtype == at::kBFloat16 ? TensorDType::kBFloat16 : TensorDType::kFloat32);
      }
    }
    std::vector<std::unique_ptr<WeightPublisher>> ranks;
    WeightFetcherOptions fo;
    fo.plan = {2, 1};
    for (std::uint32_t r = 0; r < 2; ++r) {
      auto p = WeightPublisher::start({});
      ASSERT_TRUE(p) << p.error().to_string();
      ASSERT_TRUE((*p)->publish(shard_of(*version, fo.plan, r)));
      fo.endpoints.push_back((*p)->endpoint());
      ranks.push_back(std::move(*p));
    }
    WeightFetcher fetcher(fo);
    auto manifest = fetcher.fetch_manifest(PolicyVersion{5}, 10'000);
    ASSERT_TRUE(manifest) << manifest.error().to_string();

    WeightStager stager(tiny("qwen2", 2, dtype));
    ASSERT_FALSE(at::equal(stager.staged().parameters()[0].second, source.parameters()[0].second));
    ASSERT_TRUE(stager.begin(*manifest));
    auto stats = fetcher.fetch(
        *manifest, PolicyVersion{0},
        [&](const WeightBucketInfo& info, std::string_view data) {
          return stager.apply(info, data);
        },
        30'000);
    ASSERT_TRUE(stats) << stats.error().to_string();
    auto staged = stager.finish();
    ASSERT_TRUE(staged) << staged.error().to_string();
    expect_bit_identical(source, **staged);
    // The views forward reads (q/k/v of the stacked projection) follow, and so do the logits.
    const at::Tensor tokens = at::arange(6, at::kLong).reshape({1, 6});
    EXPECT_TRUE(at::equal(source.forward(tokens), (*staged)->forward(tokens)));
  }
}

TEST(WeightBuckets, RefusesAnotherLayoutNamingTheTensor) {
  const Transformer source = tiny("qwen2", 1, at::kBFloat16);
  auto version = snapshot_weights(source, RunId{"r"}, PolicyVersion{5}, PolicyVersion{4});
  ASSERT_TRUE(version) << version.error().to_string();
  WeightStager stager(tiny("qwen2", 2, at::kBFloat16));
  ASSERT_TRUE(stager.begin(version->manifest));

  WeightManifest wrong_shape = version->manifest;
  WeightTensor& t = wrong_shape.buckets[0].tensors[1];
  t.shape[0] += 1;
  Status st = stager.begin(wrong_shape);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, "policy.weights_mismatch");
  EXPECT_NE(st.error().message.find("'" + t.name + "' has shape"), std::string::npos)
      << st.error().message;

  WeightManifest missing = version->manifest;
  const std::string dropped = missing.buckets[0].tensors.back().name;
  missing.buckets[0].tensors.pop_back();
  st = stager.begin(missing);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("'" + dropped + "'"), std::string::npos) << st.error().message;

  // Another architecture: Qwen3 has per-head q/k norms a Qwen2 engine does not.
  auto qwen3 = snapshot_weights(tiny("qwen3", 1, at::kBFloat16), RunId{"r"}, PolicyVersion{6},
                                PolicyVersion{5});
  ASSERT_TRUE(qwen3);
  st = stager.begin(qwen3->manifest);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, "policy.weights_mismatch");
  EXPECT_NE(st.error().message.find("is not in this architecture"), std::string::npos)
      << st.error().message;

  // float32 weights into a bf16 engine.
  auto f32 = snapshot_weights(tiny("qwen2", 1, at::kFloat), RunId{"r"}, PolicyVersion{7},
                              PolicyVersion{6});
  ASSERT_TRUE(f32);
  st = stager.begin(f32->manifest);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("another dtype"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace cuda_agent
