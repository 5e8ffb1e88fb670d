// The one place that knows which libtorch we build against: Debian's libtorch 1.13 (CPU) on
// machines without a GPU, the node's own PyTorch libtorch (2.11, CUDA) on GPU nodes. Code in
// model/ and learner/ calls these instead of version-specific APIs, so both builds stay green.
//
// Include only from torch-linked libraries (model, learner): <torch/torch.h> costs 22-32 s and
// ~1.1 GB per translation unit to compile.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <optional>
#include <string>

namespace cuda_agent::torch_compat {

inline constexpr int kTorchMajor = TORCH_VERSION_MAJOR;
inline constexpr int kTorchMinor = TORCH_VERSION_MINOR;
/// True where at::scaled_dot_product_attention is public (PyTorch 2.0 and later).
inline constexpr bool kHasPublicSdpa = kTorchMajor >= 2;
/// True where scaled_dot_product_attention takes `enable_gqa` (PyTorch 2.5 and later): keys and
/// values with fewer heads than the queries, without repeating them.
#define CA_TORCH_HAS_SDPA_GQA \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
inline constexpr bool kHasSdpaGqa = CA_TORCH_HAS_SDPA_GQA;

/// "1.13.1" / "2.11.0".
inline std::string version_string() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

/// Scaled dot-product attention.
///   q: [batch, heads, q_len, head_dim]; k, v: [batch, heads, kv_len, head_dim] (same dtype and
///   device); mask: optional additive float mask broadcastable to [batch, heads, q_len, kv_len];
///   causal: query i attends to keys j <= i + (kv_len - q_len) (queries are the last q_len
///   positions, as in decoding with a KV cache).
/// Returns [batch, heads, q_len, head_dim]. PyTorch 2.x uses its fused kernels; 1.13 uses the
/// plain math form, computing the softmax in float32 for half types.
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k,
                                               const at::Tensor& v,
                                               const std::optional<at::Tensor>& mask, bool causal) {
  const int64_t q_len = q.size(-2);
  const int64_t kv_len = k.size(-2);
  std::optional<at::Tensor> bias = mask;
  if (causal) {
    // Built explicitly: the fused kernels' own is_causal aligns to the top-left, not to the
    // KV-cache convention above when q_len != kv_len.
    auto opts = at::TensorOptions().dtype(at::kBool).device(q.device());
    auto allowed = at::ones({q_len, kv_len}, opts).tril(kv_len - q_len);
    auto causal_bias =
        at::zeros({q_len, kv_len}, q.options()).masked_fill(allowed.logical_not(), -INFINITY);
    bias = bias ? *bias + causal_bias : causal_bias;
  }
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, bias, 0.0, false);
#else
  const bool half = q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16;
  auto qf = half ? q.to(at::kFloat) : q;
  auto kf = half ? k.to(at::kFloat) : k;
  auto vf = half ? v.to(at::kFloat) : v;
  auto scores = at::matmul(qf, kf.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (bias) scores = scores + bias->to(scores.scalar_type());
  auto out = at::matmul(at::softmax(scores, -1), vf);
  return half ? out.to(q.scalar_type()) : out;
#endif
}

/// Causal self-attention over the same T positions (query i sees keys 0..i) with grouped-query
/// heads: q [batch, heads, T, head_dim]; k, v [batch, kv_heads, T, head_dim], heads a multiple of
/// kv_heads (query head h uses key head h / (heads / kv_heads), as transformers' repeat_kv).
/// Returns [batch, heads, T, head_dim]. PyTorch 2.5+: the fused kernels' own is_causal (top-left
/// aligned, which is right when q_len == kv_len) with enable_gqa, so the keys are not copied;
/// older versions repeat the keys and use the function above.
inline at::Tensor causal_attention_gqa(const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v) {
  const int64_t rep = q.size(1) / k.size(1);
#if CA_TORCH_HAS_SDPA_GQA
  return at::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, /*is_causal=*/true,
                                          std::nullopt, /*enable_gqa=*/rep > 1);
#else
  auto keys = rep > 1 ? k.repeat_interleave(rep, 1) : k;
  auto values = rep > 1 ? v.repeat_interleave(rep, 1) : v;
  return scaled_dot_product_attention(q, keys, values, std::nullopt, /*causal=*/true);
#endif
}

}  // namespace cuda_agent::torch_compat
