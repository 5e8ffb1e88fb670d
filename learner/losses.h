// The learner's losses over the tokens of one micro-batch: decoupled PPO for the actor, clipped
// value regression for the critic, negative log-likelihood for RFT / SFT, and the critic's
// explained variance.
//
// Conventions shared by every function here:
//   - inputs are flat [N] tensors over the micro-batch's tokens, one device, one floating dtype
//     (float32 in training; float64 works too), except that `mask` may be any floating dtype;
//   - `mask` [N]: 1 for a model token (trained on), 0 for prompt, tool output and padding. Values
//     at masked-out positions are never read into the loss (they may be anything, even inf/NaN);
//   - the loss is a SUM over masked tokens divided by `token_normaliser`, the number of model
//     tokens in the whole global batch (all micro-batches of all ranks). So the micro-batch losses
//     of one step add up to the token mean over the global batch, and their gradients to its
//     gradient, whatever the split. token_normaliser must be > 0;
//   - statistics come back as plain sums (doubles) over the micro-batch's masked tokens, so a
//     trainer adds them over micro-batches (`add`) and all-reduces them before dividing. Reading
//     them costs one device-to-host copy per call.
// Every function throws c10::Error on shape or dtype misuse (a programming error: the caller
// catches).
#pragma once

#include <array>
#include <cstdint>

#include "model/torch_compat.h"

namespace cuda_agent {

/// Decoupled PPO (AReaL: Fu et al. 2025, "AReaL: a large-scale asynchronous RL system") with
/// CUDA Agent's asymmetric clip.
struct PpoOptions {
  /// The ratio is clipped to [1 - clip_low, 1 + clip_high]. Default: 0.2 / 0.28 (DAPO-style
  /// asymmetric clipping: more room to raise unlikely tokens keeps exploration).
  double clip_low = 0.2, clip_high = 0.28;
  /// Upper bound of the per-token importance weight proximal / behaviour of a stale sample: a
  /// token the sampling policy found much less likely than the current one cannot dominate the
  /// batch. Default: 5.
  double importance_cap = 5.0;
  /// Weight of the k3 KL penalty to a reference policy; 0 (the default) turns it off.
  double kl_coef = 0.0;
};

struct PolicyLossResult {
  at::Tensor loss;  ///< scalar, differentiable w.r.t. logp
  // Sums over masked tokens:
  double clipped_tokens = 0;  ///< tokens whose clipped branch is the active one (no gradient)
  double tokens = 0;          ///< masked tokens
  double ratio_sum = 0;       ///< exp(logp - proximal_logp)
  double approx_kl_sum = 0;   ///< k3 estimate of KL(proximal || current): (r - 1) - log r
  double importance_sum = 0;  ///< the importance weight w after the cap
  double capped_tokens = 0;   ///< tokens whose importance weight reached the cap
  double kl_sum = 0;          ///< k3 KL to the reference; 0 when the penalty is off

  /// Adds another micro-batch's statistics (not the loss).
  void add(const PolicyLossResult& other);
};

/// Decoupled PPO loss for samples from a stale behaviour policy. Per model token t:
///   ratio_t = exp(logp - proximal_logp)            (the gradient flows through logp only)
///   w_t     = min(exp(proximal_logp - behaviour_logp), importance_cap)      (no gradient)
///   loss_t  = -w_t * min(ratio_t * A_t, clip(ratio_t, 1 - clip_low, 1 + clip_high) * A_t)
///             + kl_coef * (exp(ref - logp) - (ref - logp) - 1)   (when kl_coef > 0 and
///                                                                 reference_logp is defined)
/// and the loss is sum_t mask_t * loss_t / token_normaliser.
///   logp:           [N] the current policy's log-probs of the sampled tokens (requires grad).
///   proximal_logp:  [N] log-probs under the weights before this update (no grad), computed once
///                   per step; with one PPO epoch and no staleness it equals logp's value.
///   behaviour_logp: [N] the log-probs the engine sampled with.
///   advantages:     [N] e.g. GAE advantages, already normalised if the trainer normalises.
///   reference_logp: [N] log-probs under the reference policy, or undefined.
/// The KL penalty is not importance-weighted (it regularises the current policy wherever the
/// batch's tokens came from).
PolicyLossResult ppo_policy_loss(const at::Tensor& logp, const at::Tensor& proximal_logp,
                                 const at::Tensor& behaviour_logp, const at::Tensor& advantages,
                                 const at::Tensor& mask, const PpoOptions& options,
                                 double token_normaliser, const at::Tensor& reference_logp = {});

struct ValueLossResult {
  at::Tensor loss;            ///< scalar, differentiable w.r.t. values
  double clipped_tokens = 0;  ///< tokens where the clipped error is the larger (active) one
  double tokens = 0;          ///< masked tokens
  double sq_error_sum = 0;    ///< (v - R)^2 of the unclipped values

  void add(const ValueLossResult& other);
};

/// Critic loss: per token 0.5 * max((v - R)^2, (clip(v, old - c, old + c) - R)^2), c =
/// value_clip; value_clip <= 0 means unclipped, 0.5 * (v - R)^2. Sum over masked tokens /
/// token_normaliser.
///   values: [N] the critic's current values (requires grad); old_values: [N] the values at
///   rollout time (no grad); returns: [N] the regression targets (e.g. GAE returns).
ValueLossResult value_loss(const at::Tensor& values, const at::Tensor& old_values,
                           const at::Tensor& returns, const at::Tensor& mask, double value_clip,
                           double token_normaliser);

struct SftLossResult {
  at::Tensor loss;     ///< scalar, differentiable w.r.t. logp
  double nll_sum = 0;  ///< -logp summed over masked tokens
  double tokens = 0;

  void add(const SftLossResult& other);
};

/// Negative log-likelihood of the model tokens (RFT on filtered trajectories):
/// -sum(mask * logp) / token_normaliser.
SftLossResult sft_loss(const at::Tensor& logp, const at::Tensor& mask, double token_normaliser);

/// The critic's explained variance 1 - Var(R - V) / Var(R) over masked tokens, from sums that add
/// across micro-batches and ranks (all-reduce `as_array()` and rebuild with `from_array`).
/// 1: perfect; 0: no better than predicting the mean return; negative: worse.
struct ExplainedVariance {
  double count = 0;
  double returns_sum = 0;      ///< sum R
  double returns_sq_sum = 0;   ///< sum R^2
  double residual_sum = 0;     ///< sum (R - V)
  double residual_sq_sum = 0;  ///< sum (R - V)^2

  /// The sums of one micro-batch: values, returns, mask [N] (one device copy to the host).
  static ExplainedVariance from_tensors(const at::Tensor& values, const at::Tensor& returns,
                                        const at::Tensor& mask);
  static ExplainedVariance from_array(const std::array<double, 5>& sums);
  std::array<double, 5> as_array() const;
  void add(const ExplainedVariance& other);
  /// 1 - Var(R - V) / Var(R) with population variances. NaN when count is 0 or Var(R) is 0
  /// (explained variance is undefined for constant returns).
  double value() const;
};

}  // namespace cuda_agent
