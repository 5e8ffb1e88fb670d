// Chunked log-probs against a full-logits reference and finite differences; the losses on
// hand-computed cases, against direct formulas, and split into micro-batches. CPU only.
#include <gtest/gtest.h>

#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "learner/losses.h"
#include "learner/token_logprobs.h"

namespace cuda_agent {
namespace {

double max_abs(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}
double max_rel(const at::Tensor& got, const at::Tensor& want) {
  return max_abs(got, want) / std::max(1e-30, want.to(at::kDouble).abs().max().item<double>());
}

/// The plain computation: all N x V logits, the engine's cast and scale, log_softmax.
TokenLogprobs full_reference(const at::Tensor& hidden, const at::Tensor& weight,
                             const at::Tensor& targets, double inv_t) {
  const auto dtype = weight.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  auto z = at::linear(hidden, weight).to(dtype) * inv_t;
  auto logp = at::log_softmax(z, -1);
  return {logp.gather(1, targets.unsqueeze(1)).squeeze(1), -(logp.exp() * logp).sum(-1)};
}

struct Case {
  at::Tensor hidden, weight, targets, a, b;  // a, b: loss = sum(a * logprobs) + sum(b * entropy)
};

Case make_case(std::int64_t N, std::int64_t H, std::int64_t V, at::ScalarType dtype,
               std::uint64_t seed) {
  torch::manual_seed(seed);
  Case c;
  c.hidden = torch::randn({N, H}, at::kDouble).to(dtype);
  c.weight = (0.5 * torch::randn({V, H}, at::kDouble)).to(dtype);
  c.targets = torch::randint(V, {N}, at::kLong);
  const auto out = dtype == at::kDouble ? at::kDouble : at::kFloat;
  c.a = torch::randn({N}, out);
  c.b = torch::randn({N}, out);
  return c;
}

enum class LossUses { kBoth, kLogprobsOnly, kEntropyOnly };

/// Gradients of the test loss w.r.t. hidden and weight: {logprobs, entropy, dhidden, dweight}.
std::vector<at::Tensor> run(const Case& c, LossUses uses, double inv_t, std::int64_t chunk) {
  auto h = c.hidden.clone().requires_grad_(true);
  auto w = c.weight.clone().requires_grad_(true);
  TokenLogprobs r;
  if (chunk > 0) {
    r = chunked_token_logprobs(h, w, c.targets, chunk, /*with_entropy=*/true, inv_t);
  } else {
    r = full_reference(h, w, c.targets, inv_t);
  }
  at::Tensor loss;
  if (uses == LossUses::kBoth) loss = (c.a * r.logprobs).sum() + (c.b * r.entropy).sum();
  if (uses == LossUses::kLogprobsOnly) loss = (c.a * r.logprobs).sum();
  if (uses == LossUses::kEntropyOnly) loss = (c.b * r.entropy).sum();
  loss.backward();
  return {r.logprobs.detach(), r.entropy.detach(), h.grad(), w.grad()};
}

TEST(ChunkedTokenLogprobs, MatchesFullLogitsForEveryChunkSize) {
  constexpr std::int64_t N = 13, H = 8, V = 37;
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const double value_tol = dtype == at::kFloat ? 1e-6 : 1e-12;
    const double grad_tol = dtype == at::kFloat ? 1e-5 : 1e-12;
    const Case c = make_case(N, H, V, dtype, 7);
    double worst_value = 0, worst_grad = 0;
    for (double inv_t : {1.0, 1.0 / 0.7}) {
      for (auto uses : {LossUses::kBoth, LossUses::kLogprobsOnly, LossUses::kEntropyOnly}) {
        const auto want = run(c, uses, inv_t, /*chunk=*/0);
        for (std::int64_t chunk : {std::int64_t{1}, std::int64_t{7}, N, N + 5}) {
          SCOPED_TRACE(testing::Message() << "dtype " << dtype << " inv_t " << inv_t << " uses "
                                          << int(uses) << " chunk " << chunk);
          const auto got = run(c, uses, inv_t, chunk);
          EXPECT_EQ(got[0].scalar_type(), dtype == at::kDouble ? at::kDouble : at::kFloat);
          EXPECT_LT(max_abs(got[0], want[0]), value_tol);
          EXPECT_LT(max_abs(got[1], want[1]), value_tol);
          EXPECT_LT(max_rel(got[2], want[2]), grad_tol);
          EXPECT_LT(max_rel(got[3], want[3]), grad_tol);
          EXPECT_EQ(got[2].scalar_type(), dtype);
          EXPECT_EQ(got[3].scalar_type(), dtype);
          worst_value = std::max({worst_value, max_abs(got[0], want[0]), max_abs(got[1], want[1])});
          worst_grad = std::max({worst_grad, max_rel(got[2], want[2]), max_rel(got[3], want[3])});
        }
      }
    }
    std::printf("%s: largest value error %.3g, largest relative gradient error %.3g\n",
                c10::toString(dtype), worst_value, worst_grad);
  }
}

TEST(ChunkedTokenLogprobs, FiniteDifferencesInFloat64) {
  constexpr std::int64_t N = 4, H = 3, V = 5;
  const Case c = make_case(N, H, V, at::kDouble, 11);
  const double inv_t = 1.3;
  auto loss_of = [&](const at::Tensor& h, const at::Tensor& w) {
    auto r = chunked_token_logprobs(h, w, c.targets, 3, true, inv_t);
    return ((c.a * r.logprobs).sum() + (c.b * r.entropy).sum()).item<double>();
  };
  const auto grads = run(c, LossUses::kBoth, inv_t, 3);
  const double eps = 1e-6;
  for (int which = 0; which < 2; ++which) {
    const at::Tensor& base = which == 0 ? c.hidden : c.weight;
    const at::Tensor& analytic = grads[2 + which];
    for (std::int64_t i = 0; i < base.numel(); ++i) {
      auto plus = base.clone(), minus = base.clone();
      plus.view({-1})[i] += eps;
      minus.view({-1})[i] -= eps;
      const double numeric = which == 0
                                 ? (loss_of(plus, c.weight) - loss_of(minus, c.weight)) / (2 * eps)
                                 : (loss_of(c.hidden, plus) - loss_of(c.hidden, minus)) / (2 * eps);
      EXPECT_NEAR(analytic.view({-1})[i].item<double>(), numeric, 1e-7)
          << (which == 0 ? "hidden" : "weight") << " element " << i;
    }
  }
}

TEST(ChunkedTokenLogprobs, Bfloat16IsCloseToFloat32) {
  constexpr std::int64_t N = 16, H = 8, V = 50;
  const Case c16 = make_case(N, H, V, at::kBFloat16, 3);
  Case c32 = c16;
  c32.hidden = c16.hidden.to(at::kFloat);  // the same (rounded) values in float32
  c32.weight = c16.weight.to(at::kFloat);
  const auto got = run(c16, LossUses::kBoth, 1.0 / 0.9, 5);
  const auto want = run(c32, LossUses::kBoth, 1.0 / 0.9, 5);
  std::printf("bf16 vs fp32: logprobs %.3g, entropy %.3g, dhidden %.3g (rel), dweight %.3g (rel)\n",
              max_abs(got[0], want[0]), max_abs(got[1], want[1]), max_rel(got[2], want[2]),
              max_rel(got[3], want[3]));
  EXPECT_EQ(got[0].scalar_type(), at::kFloat);
  EXPECT_EQ(got[2].scalar_type(), at::kBFloat16);
  EXPECT_EQ(got[3].scalar_type(), at::kBFloat16);
  EXPECT_LT(max_abs(got[0], want[0]), 2e-2);
  EXPECT_LT(max_abs(got[1], want[1]), 2e-2);
  EXPECT_LT(max_rel(got[2], want[2]), 2e-2);
  EXPECT_LT(max_rel(got[3], want[3]), 2e-2);
}

TEST(ChunkedTokenLogprobs, EntropyOnlyWhenAskedAndMisuseThrows) {
  const Case c = make_case(5, 4, 9, at::kFloat, 5);
  auto w = c.weight.clone().requires_grad_(true);
  auto r = chunked_token_logprobs(c.hidden, w, c.targets, 2, /*with_entropy=*/false);
  EXPECT_FALSE(r.entropy.defined());
  EXPECT_TRUE(r.logprobs.requires_grad());
  r.logprobs.sum().backward();  // hidden needs no gradient: only the weight's is computed
  EXPECT_TRUE(w.grad().defined());
  auto want = full_reference(c.hidden, c.weight, c.targets, 1.0);
  EXPECT_LT(max_abs(r.logprobs.detach(), want.logprobs), 1e-6);
  // Column-major hidden rows (any strides work).
  auto strided =
      chunked_token_logprobs(c.hidden.t().contiguous().t(), c.weight, c.targets, 2, true);
  EXPECT_LT(max_abs(strided.logprobs, want.logprobs), 1e-6);
  EXPECT_LT(max_abs(strided.entropy, want.entropy), 1e-6);
  // No tokens: empty results, and a backward that does nothing.
  auto none =
      chunked_token_logprobs(c.hidden.narrow(0, 0, 0), w, c.targets.narrow(0, 0, 0), 4, true);
  EXPECT_EQ(none.logprobs.numel(), 0);
  EXPECT_EQ(none.entropy.numel(), 0);
  (none.logprobs.sum() + none.entropy.sum()).backward();
  EXPECT_THROW(chunked_token_logprobs(c.hidden, c.weight, c.targets, 0, false), c10::Error);
  EXPECT_THROW(chunked_token_logprobs(c.hidden, c.weight, c.targets.narrow(0, 0, 3), 2, false),
               c10::Error);
  EXPECT_THROW(chunked_token_logprobs(c.hidden, c.weight.t(), c.targets, 2, false), c10::Error);
}

// Records what the CPU allocator hands out while it is installed on this thread (the engine
// reports every allocation to the profiler's thread-local state when memory profiling is on).
// The argument types of reportMemoryUsage differ between libtorch versions: read them off it.
template <class F>
struct ReportSignature;
template <class C, class R, class P, class S, class T, class U, class D>
struct ReportSignature<R (C::*)(P, S, T, U, D)> {
  using Total = T;
};
using ReportTotal =
    ReportSignature<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::Total;

class CpuAllocationRecorder : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, ReportTotal /*total_allocated*/,
                         ReportTotal /*total_reserved*/, c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    live_ += alloc_size;
    peak_ = std::max(peak_, live_);
    largest_ = std::max(largest_, alloc_size);
  }
  bool memoryProfilingEnabled() const override { return true; }
  std::int64_t peak() const { return peak_; }        ///< most bytes live at once, from 0
  std::int64_t largest() const { return largest_; }  ///< the largest single allocation

 private:
  std::int64_t live_ = 0, peak_ = 0, largest_ = 0;
};

template <class F>
std::shared_ptr<CpuAllocationRecorder> record_allocations(F&& f) {
  auto recorder = std::make_shared<CpuAllocationRecorder>();
  c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, recorder);
  f();
  return recorder;
}

TEST(ChunkedTokenLogprobs, NeverMaterialisesTheFullLogits) {
  constexpr std::int64_t N = 256, H = 16, V = 4096, kChunk = 16;
  const Case c = make_case(N, H, V, at::kFloat, 13);
  const std::int64_t full_bytes = N * V * 4;  // 4 MiB
  auto h = c.hidden.clone().requires_grad_(true);
  auto w = c.weight.clone().requires_grad_(true);
  auto chunked = record_allocations([&] {
    auto r = chunked_token_logprobs(h, w, c.targets, kChunk, true);
    ((c.a * r.logprobs).sum() + (c.b * r.entropy).sum()).backward();
  });
  // The instrument sees the reference's N x V logits.
  auto full = record_allocations([&] {
    auto r = full_reference(h, w, c.targets, 1.0);
    ((c.a * r.logprobs).sum() + (c.b * r.entropy).sum()).backward();
  });
  std::printf("full logits %lld B; chunked: peak %lld B, largest %lld B; reference: peak %lld B\n",
              (long long)full_bytes, (long long)chunked->peak(), (long long)chunked->largest(),
              (long long)full->peak());
  EXPECT_GE(full->largest(), full_bytes);
  EXPECT_LE(chunked->largest(), std::max(kChunk * V * 4, V * H * 4));
  EXPECT_LT(chunked->peak(), full_bytes / 4);
}

// --- losses ---

at::Tensor f64(std::vector<double> v) { return torch::tensor(v, at::kDouble); }

/// The PPO loss written out directly over the model tokens only (no masking tricks).
at::Tensor direct_ppo(const at::Tensor& logp, const at::Tensor& prox, const at::Tensor& behav,
                      const at::Tensor& adv, const at::Tensor& mask, const PpoOptions& o,
                      double norm, const at::Tensor& ref) {
  auto idx = mask.nonzero().squeeze(1);
  auto lp = logp.index_select(0, idx), px = prox.index_select(0, idx);
  auto bh = behav.index_select(0, idx), a = adv.index_select(0, idx);
  auto ratio = at::exp(lp - px);
  auto w = at::clamp_max(at::exp(px - bh), o.importance_cap);
  auto obj = at::min(ratio * a, at::clamp(ratio, 1 - o.clip_low, 1 + o.clip_high) * a);
  auto loss = -(w * obj);
  if (o.kl_coef > 0 && ref.defined()) {
    auto d = ref.index_select(0, idx) - lp;
    loss = loss + o.kl_coef * (at::exp(d) - d - 1);
  }
  return loss.sum() / norm;
}

TEST(PpoPolicyLoss, HandComputedCases) {
  const double inf = INFINITY;
  // Per token: advantage, ratio, proximal/behaviour ratio. Token 7 is masked out (garbage).
  //  0: A +1, r 1.1 inside          -> -1.1       3: A -1, r 1.5 (unclipped) -> +1.5
  //  1: A +1, r 1.5 clipped at 1.28 -> -1.28      4: A +2, r 0.5 (unclipped) -> -1.0
  //  2: A -1, r 0.5 clipped at 0.8  -> +0.8       5: A +1, importance 10 capped at 5 -> -5
  //  6: A 0.5, importance 2         -> -1.0
  auto adv = f64({1, 1, -1, -1, 2, 1, 0.5, NAN});
  auto ratio = f64({1.1, 1.5, 0.5, 1.5, 0.5, 1, 1, 1});
  auto importance = f64({1, 1, 1, 1, 1, 10, 2, 1});
  auto prox = f64({-1, -2, -0.5, -3, -1, -2, -1, inf});
  auto logp = (prox + ratio.log()).index_put_({7}, -inf).requires_grad_(true);
  auto behav = prox - importance.log();
  auto mask = torch::tensor({1, 1, 1, 1, 1, 1, 1, 0}, at::kFloat);
  const double norm = 10;
  auto r = ppo_policy_loss(logp, prox, behav, adv, mask, PpoOptions{}, norm);
  EXPECT_NEAR(r.loss.item<double>(), (-1.1 - 1.28 + 0.8 + 1.5 - 1.0 - 5 - 1.0) / norm, 1e-12);
  EXPECT_EQ(r.tokens, 7);
  EXPECT_EQ(r.clipped_tokens, 2);
  EXPECT_EQ(r.capped_tokens, 1);
  EXPECT_NEAR(r.importance_sum, 1 + 1 + 1 + 1 + 1 + 5 + 2, 1e-12);
  EXPECT_NEAR(r.ratio_sum, 1.1 + 1.5 + 0.5 + 1.5 + 0.5 + 1 + 1, 1e-12);
  double approx_kl = 0;
  for (double x : {1.1, 1.5, 0.5, 1.5, 0.5}) approx_kl += x - 1 - std::log(x);
  EXPECT_NEAR(r.approx_kl_sum, approx_kl, 1e-12);
  EXPECT_EQ(r.kl_sum, 0);
  r.loss.backward();
  // d/dlogp = -w * A * ratio / norm where unclipped, 0 where clipped or masked.
  auto want = f64({-1.1, 0, 0, 1.5, -1.0, -5, -1.0, 0}) / norm;
  EXPECT_LT(max_abs(logp.grad(), want), 1e-12) << logp.grad();
}

TEST(PpoPolicyLoss, MatchesDirectFormulaWithKl) {
  for (auto dtype : {at::kFloat, at::kDouble}) {
    torch::manual_seed(21);
    constexpr std::int64_t N = 64;
    auto prox = (-torch::rand({N}, at::kDouble) * 3).to(dtype);
    auto logp0 = prox + 0.4 * torch::randn({N}, dtype);
    auto behav = prox + 0.8 * torch::randn({N}, dtype);
    auto adv = torch::randn({N}, dtype);
    auto ref = prox + 0.3 * torch::randn({N}, dtype);
    auto mask = (torch::rand({N}) > 0.3).to(at::kFloat);
    const double tol = dtype == at::kFloat ? 1e-5 : 1e-12;
    for (double kl_coef : {0.0, 0.1}) {
      for (bool with_ref : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtype << " kl " << kl_coef << " ref " << with_ref);
        PpoOptions o;
        o.kl_coef = kl_coef;
        o.importance_cap = 2.0;
        const at::Tensor r_in = with_ref ? ref : at::Tensor();
        auto lp = logp0.clone().requires_grad_(true);
        auto got = ppo_policy_loss(lp, prox, behav, adv, mask, o, 50.0, r_in);
        got.loss.backward();
        auto lp2 = logp0.clone().requires_grad_(true);
        auto want = direct_ppo(lp2, prox, behav, adv, mask, o, 50.0, r_in);
        want.backward();
        EXPECT_LT(max_abs(got.loss.detach(), want.detach()), tol);
        EXPECT_LT(max_rel(lp.grad(), lp2.grad()), tol);
        if (kl_coef > 0 && with_ref) {
          auto d = (ref - logp0).to(at::kDouble);
          auto k3 = ((d.exp() - d - 1) * mask.to(at::kDouble)).sum().item<double>();
          EXPECT_NEAR(got.kl_sum, k3, tol * std::max(1.0, k3));
        } else {
          EXPECT_EQ(got.kl_sum, 0);
        }
      }
    }
  }
}

TEST(ValueLoss, ClippedAndUnclipped) {
  // 0: v moves away from R by 0.5 > clip: the clipped error is smaller, max keeps (v - R)^2.
  // 1: far from R: (v - R)^2 = 4.  2: v moves toward R beyond the clip: the clipped error
  // (0.2 - 1)^2 = 0.64 is the larger one and its gradient is 0 (clamp saturated).
  auto values = f64({1.0, 2.0, 0.9, 5.0}).requires_grad_(true);
  auto old = f64({0.5, 0.5, 0.0, 0.0});
  auto ret = f64({0.0, 0.0, 1.0, NAN});
  auto mask = torch::tensor({1.f, 1.f, 1.f, 0.f});
  auto clipped = value_loss(values, old, ret, mask, 0.2, 4.0);
  EXPECT_NEAR(clipped.loss.item<double>(), 0.5 * (1 + 4 + 0.64) / 4, 1e-12);
  EXPECT_EQ(clipped.clipped_tokens, 1);
  EXPECT_EQ(clipped.tokens, 3);
  EXPECT_NEAR(clipped.sq_error_sum, 1 + 4 + 0.01, 1e-12);
  clipped.loss.backward();
  EXPECT_LT(max_abs(values.grad(), f64({1.0, 2.0, 0, 0}) / 4), 1e-12) << values.grad();

  values.grad().zero_();
  auto plain = value_loss(values, old, ret, mask, 0.0, 4.0);
  EXPECT_NEAR(plain.loss.item<double>(), 0.5 * (1 + 4 + 0.01) / 4, 1e-12);
  EXPECT_EQ(plain.clipped_tokens, 0);
  plain.loss.backward();
  EXPECT_LT(max_abs(values.grad(), f64({1.0, 2.0, -0.1, 0}) / 4), 1e-12) << values.grad();
}

TEST(SftLoss, NegativeLogLikelihoodOfModelTokens) {
  auto logp = f64({-0.5, -2.0, -INFINITY, -1.0}).requires_grad_(true);
  auto mask = torch::tensor({1.f, 1.f, 0.f, 1.f});
  auto r = sft_loss(logp, mask, 6.0);
  EXPECT_NEAR(r.loss.item<double>(), 3.5 / 6, 1e-12);
  EXPECT_NEAR(r.nll_sum, 3.5, 1e-12);
  EXPECT_EQ(r.tokens, 3);
  r.loss.backward();
  EXPECT_LT(max_abs(logp.grad(), f64({-1, -1, 0, -1}) / 6), 1e-12);
}

TEST(Losses, MicroBatchesAddUpToTheWholeBatch) {
  torch::manual_seed(33);
  constexpr std::int64_t N = 40;
  auto prox = -torch::rand({N}) * 3;
  auto logp = prox + 0.3 * torch::randn({N});
  auto behav = prox + 0.5 * torch::randn({N});
  auto adv = torch::randn({N});
  auto values = torch::randn({N}), old = values + 0.3 * torch::randn({N});
  auto returns = torch::randn({N});
  auto mask = (torch::rand({N}) > 0.25).to(at::kFloat);
  const double norm = mask.sum().item<double>();
  PpoOptions o;
  auto halves = [&](const at::Tensor& t, int i) { return t.narrow(0, i * N / 2, N / 2); };

  auto whole = ppo_policy_loss(logp, prox, behav, adv, mask, o, norm);
  auto a = ppo_policy_loss(halves(logp, 0), halves(prox, 0), halves(behav, 0), halves(adv, 0),
                           halves(mask, 0), o, norm);
  auto b = ppo_policy_loss(halves(logp, 1), halves(prox, 1), halves(behav, 1), halves(adv, 1),
                           halves(mask, 1), o, norm);
  EXPECT_NEAR((a.loss + b.loss).item<double>(), whole.loss.item<double>(), 1e-6);
  a.add(b);
  EXPECT_EQ(a.tokens, whole.tokens);
  EXPECT_EQ(a.clipped_tokens, whole.clipped_tokens);
  EXPECT_NEAR(a.ratio_sum, whole.ratio_sum, 1e-4);

  auto vw = value_loss(values, old, returns, mask, 0.2, norm);
  auto va =
      value_loss(halves(values, 0), halves(old, 0), halves(returns, 0), halves(mask, 0), 0.2, norm);
  auto vb =
      value_loss(halves(values, 1), halves(old, 1), halves(returns, 1), halves(mask, 1), 0.2, norm);
  EXPECT_NEAR((va.loss + vb.loss).item<double>(), vw.loss.item<double>(), 1e-6);
  va.add(vb);
  EXPECT_EQ(va.clipped_tokens, vw.clipped_tokens);
  EXPECT_NEAR(va.sq_error_sum, vw.sq_error_sum, 1e-4);

  auto sw = sft_loss(logp, mask, norm);
  auto sa = sft_loss(halves(logp, 0), halves(mask, 0), norm);
  auto sb = sft_loss(halves(logp, 1), halves(mask, 1), norm);
  EXPECT_NEAR((sa.loss + sb.loss).item<double>(), sw.loss.item<double>(), 1e-6);
  EXPECT_NEAR(sw.loss.item<double>(), -(logp * mask).sum().item<double>() / norm, 1e-6);
  // The whole-batch token mean: every model token weighs 1 / norm.
  EXPECT_NEAR(sw.loss.item<double>(),
              -logp.index_select(0, mask.nonzero().squeeze(1)).mean().item<double>(), 1e-6);

  auto ew = ExplainedVariance::from_tensors(values, returns, mask);
  auto ea = ExplainedVariance::from_tensors(halves(values, 0), halves(returns, 0), halves(mask, 0));
  ea.add(ExplainedVariance::from_array(
      ExplainedVariance::from_tensors(halves(values, 1), halves(returns, 1), halves(mask, 1))
          .as_array()));
  EXPECT_NEAR(ea.value(), ew.value(), 1e-12);
  auto idx = mask.nonzero().squeeze(1);
  auto R = returns.index_select(0, idx).to(at::kDouble);
  auto E = R - values.index_select(0, idx).to(at::kDouble);
  const double direct =
      1 - E.var(/*unbiased=*/false).item<double>() / R.var(/*unbiased=*/false).item<double>();
  EXPECT_NEAR(ew.value(), direct, 1e-9);
}

TEST(ExplainedVariance, PerfectMeanAndConstant) {
  auto r = torch::tensor({1.f, 2.f, 4.f, 7.f});
  auto m = torch::ones({4});
  EXPECT_NEAR(ExplainedVariance::from_tensors(r, r, m).value(), 1.0, 1e-12);
  EXPECT_NEAR(ExplainedVariance::from_tensors(torch::full({4}, 3.5f), r, m).value(), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(ExplainedVariance::from_tensors(r, torch::full({4}, 2.f), m).value()));
  EXPECT_TRUE(std::isnan(ExplainedVariance{}.value()));
}

}  // namespace
}  // namespace cuda_agent
