// Builds against either libtorch (1.13 CPU, 2.11 CUDA). CPU cases run everywhere; the CUDA case
// skips where torch sees no GPU.
#include "model/torch_compat.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cuda_agent {
namespace {

at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               bool causal) {
  auto qd = q.to(at::kDouble), kd = k.to(at::kDouble), vd = v.to(at::kDouble);
  auto s = at::matmul(qd, kd.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  if (causal) {
    const int64_t ql = q.size(-2), kl = k.size(-2);
    for (int64_t i = 0; i < ql; ++i) {
      for (int64_t j = 0; j < kl; ++j) {
        if (j > i + (kl - ql)) s.select(-2, i).select(-1, j).fill_(-INFINITY);
      }
    }
  }
  return at::matmul(at::softmax(s, -1), vd);
}

TEST(TorchCompat, VersionIsOneOfTheSupported) {
  const std::string v = torch_compat::version_string();
  std::printf("libtorch %s\n", v.c_str());
  EXPECT_TRUE(torch_compat::kTorchMajor == 1 ? torch_compat::kTorchMinor >= 13
                                             : torch_compat::kTorchMajor == 2)
      << v;
}

TEST(TorchCompat, AttentionMatchesFloat64ReferenceOnCpu) {
  torch::manual_seed(1234);
  for (bool causal : {false, true}) {
    for (auto [ql, kl] : {std::pair<int64_t, int64_t>{5, 5}, {1, 7}, {3, 7}}) {
      auto q = torch::randn({2, 3, ql, 16});
      auto k = torch::randn({2, 3, kl, 16});
      auto v = torch::randn({2, 3, kl, 16});
      auto got = torch_compat::scaled_dot_product_attention(q, k, v, std::nullopt, causal);
      auto want = reference_attention(q, k, v, causal);
      EXPECT_LT((got.to(at::kDouble) - want).abs().max().item<double>(), 1e-5)
          << "causal=" << causal << " q_len=" << ql << " kv_len=" << kl;
    }
  }
}

TEST(TorchCompat, AdditiveMaskIsApplied) {
  auto q = torch::randn({1, 1, 2, 8});
  auto k = torch::randn({1, 1, 3, 8});
  auto v = torch::randn({1, 1, 3, 8});
  auto mask = torch::zeros({1, 1, 2, 3});
  mask.select(-1, 2).fill_(-INFINITY);  // hide key 2
  auto got = torch_compat::scaled_dot_product_attention(q, k, v, mask, false);
  auto want = reference_attention(q, k.narrow(-2, 0, 2), v.narrow(-2, 0, 2), false);
  EXPECT_LT((got.to(at::kDouble) - want).abs().max().item<double>(), 1e-5);
}

TEST(TorchCompat, CausalGroupedQueryAttentionUsesKeyHeadHOverRep) {
  torch::manual_seed(99);
  auto q = torch::randn({2, 6, 5, 16});
  auto k = torch::randn({2, 2, 5, 16});
  auto v = torch::randn({2, 2, 5, 16});
  auto got = torch_compat::causal_attention_gqa(q, k, v);
  auto want =
      reference_attention(q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1), /*causal=*/true);
  EXPECT_LT((got.to(at::kDouble) - want).abs().max().item<double>(), 1e-5);
}

TEST(TorchCompat, AttentionOnCudaInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU visible to libtorch";
  torch::manual_seed(7);
  auto opts = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  auto q = torch::randn({2, 4, 64, 64}, opts);
  auto k = torch::randn({2, 4, 64, 64}, opts);
  auto v = torch::randn({2, 4, 64, 64}, opts);
  auto got = torch_compat::scaled_dot_product_attention(q, k, v, std::nullopt, true);
  auto want = reference_attention(q.cpu(), k.cpu(), v.cpu(), true);
  EXPECT_LT((got.cpu().to(at::kDouble) - want).abs().max().item<double>(), 3e-2);
}

// PyTorch 2.11's libtorch.so exports a broken partial std::filesystem: in a binary that binds
// to it, remove_all crashes. The build links libstdc++ first (cmake/CheckNeededOrder.cmake);
// this is the behaviour that ordering protects.
TEST(TorchCompat, StdFilesystemWorksInATorchLinkedBinary) {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("ca_fs_" + std::to_string(::getpid()));
  fs::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "f.txt") << "x";
  EXPECT_EQ(fs::remove_all(dir), 4u);
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace cuda_agent
