// Per-token log-probabilities (and entropies) of the policy, computed from the final hidden states
// and the lm_head a few rows at a time, so the N x V logits of a micro-batch never exist at once,
// neither in the forward nor in the backward pass. With N = 32768 tokens and a 152k vocabulary
// the full float32 logits alone would take 20 GB; chunked, one chunk of 1024 rows takes 0.6 GB.
//
//   at::Tensor h = model.hidden(tokens, nullptr, {}, {}).view({-1, hidden_size});  // [N, H]
//   TokenLogprobs out = chunked_token_logprobs(h, model.weights().lm_head, targets,
//                                              /*chunk_rows=*/1024, /*with_entropy=*/true);
//   at::Tensor loss = ... out.logprobs ... out.entropy ...;  // [N] float32
//   loss.backward();  // gradients reach h (and through it the layers) and the lm_head
//
// Numerics: each row's logits are computed as the engine computes them when it samples
// (model/generate.cpp): hidden @ lm_head^T in the model dtype, then cast to float32, then
// multiplied by the inverse temperature, then log_softmax in float32. So on the same weights the
// learner's log-probs are the engine's behaviour log-probs up to the matmul's own rounding (a GPU
// matmul over a different number of rows may round differently).
//
// The backward pass recomputes each chunk's logits (one extra matmul per chunk) instead of keeping
// them: with p = softmax(z) and z the scaled float32 logits,
//   dL/dz = g_logprob * (onehot(target) - p) + g_entropy * (-p * (log p + H)),
// cast to the model dtype after the inverse temperature is applied (as autograd would through
// the cast), then dL/dhidden = dL/dlogits @ W and dL/dW = sum over chunks of dL/dlogits^T @ hidden,
// summed in float32 (float64 for a float64 model) and cast to W's dtype at the end.
// The backward is not itself differentiable (no double backward).
#pragma once

#include <cstdint>

#include "model/torch_compat.h"

namespace cuda_agent {

struct TokenLogprobs {
  /// [N] log p(target) under softmax(inv_temperature * logits). float32, or float64 when the
  /// model dtype is float64 (gradient checks). Differentiable w.r.t. hidden and weight.
  at::Tensor logprobs;
  /// [N] entropy of the same distribution, same dtype; undefined unless `with_entropy`.
  at::Tensor entropy;
};

/// Log-probabilities of `targets` (and optionally the entropy) from the final hidden states.
///   hidden:  [N, H] in the model dtype (float32, bfloat16, float16 or float64), may require grad;
///            any strides (a view of [B, T, H] is fine).
///   weight:  [V, H] the lm_head, same dtype and device, may require grad.
///   targets: [N] int64 on the same device, each in [0, V).
///   chunk_rows: rows per chunk (>= 1): the forward holds a few [chunk_rows, V] float32 buffers
///            at a time, the backward the same plus dL/dW's [V, H] float32 accumulator. A value
///            above N means one chunk. Trade-off: fewer rows per chunk save memory, more rows
///            make larger (faster) matmuls. The trainer takes it from its options.
///   with_entropy: also return the entropy; costs one more [chunk_rows, V] pass per chunk.
///   inv_temperature: 1 / the sampling temperature, as the engine applies it.
/// Throws c10::Error on shape, dtype or device misuse (a programming error: the caller catches).
TokenLogprobs chunked_token_logprobs(const at::Tensor& hidden, const at::Tensor& weight,
                                     const at::Tensor& targets, std::int64_t chunk_rows,
                                     bool with_entropy, double inv_temperature = 1.0);

}  // namespace cuda_agent
