#include "learner/losses.h"

#include <cmath>
#include <limits>
#include <vector>

namespace cuda_agent {
namespace {

/// Checks that every defined tensor of `ts` is [N] like the first, one device, floating.
void check_flat(const char* what, std::initializer_list<const at::Tensor*> ts) {
  const at::Tensor& first = **ts.begin();
  TORCH_CHECK(first.dim() == 1, what, ": inputs must be flat [N] tensors, got ", first.sizes());
  for (const at::Tensor* t : ts) {
    if (!t->defined()) continue;
    TORCH_CHECK(t->dim() == 1 && t->size(0) == first.size(0), what,
                ": all inputs must be [N] with the same N, got ", t->sizes(), " and ",
                first.sizes());
    TORCH_CHECK(t->device() == first.device(), what, ": all inputs must be on one device");
    TORCH_CHECK(at::isFloatingType(t->scalar_type()), what, ": inputs must be floating, got ",
                t->scalar_type());
  }
}

void check_normaliser(const char* what, double token_normaliser) {
  TORCH_CHECK(token_normaliser > 0, what, ": token_normaliser must be > 0, got ", token_normaliser);
}

/// `x` where the mask is set, 0 elsewhere: masked-out values (possibly inf or NaN) can then
/// reach neither the loss nor, through 0 * inf, its gradient.
at::Tensor masked(const at::Tensor& x, const at::Tensor& valid) {
  return at::where(valid, x, at::zeros({}, x.options()));
}

/// The scalar sums `sums` read back in one copy.
std::vector<double> read_sums(const std::vector<at::Tensor>& sums) {
  auto host = at::stack(sums).detach().to(at::kDouble).cpu().contiguous();
  const double* p = host.data_ptr<double>();
  return std::vector<double>(p, p + host.numel());
}

}  // namespace

void PolicyLossResult::add(const PolicyLossResult& o) {
  clipped_tokens += o.clipped_tokens;
  tokens += o.tokens;
  ratio_sum += o.ratio_sum;
  approx_kl_sum += o.approx_kl_sum;
  importance_sum += o.importance_sum;
  capped_tokens += o.capped_tokens;
  kl_sum += o.kl_sum;
}

void ValueLossResult::add(const ValueLossResult& o) {
  clipped_tokens += o.clipped_tokens;
  tokens += o.tokens;
  sq_error_sum += o.sq_error_sum;
}

void SftLossResult::add(const SftLossResult& o) {
  nll_sum += o.nll_sum;
  tokens += o.tokens;
}

PolicyLossResult ppo_policy_loss(const at::Tensor& logp, const at::Tensor& proximal_logp,
                                 const at::Tensor& behaviour_logp, const at::Tensor& advantages,
                                 const at::Tensor& mask, const PpoOptions& options,
                                 double token_normaliser, const at::Tensor& reference_logp) {
  check_flat("ppo_policy_loss",
             {&logp, &proximal_logp, &behaviour_logp, &advantages, &mask, &reference_logp});
  check_normaliser("ppo_policy_loss", token_normaliser);
  const auto valid = mask > 0;
  const auto m = mask.to(logp.scalar_type());
  const auto lp = masked(logp, valid);
  const auto prox = masked(proximal_logp.detach(), valid);
  const auto behav = masked(behaviour_logp.detach(), valid);
  const auto adv = masked(advantages.detach(), valid);

  const auto log_ratio = lp - prox;
  const auto ratio = log_ratio.exp();
  const auto clipped_ratio = ratio.clamp(1.0 - options.clip_low, 1.0 + options.clip_high);
  const auto unclipped_obj = ratio * adv;
  const auto clipped_obj = clipped_ratio * adv;
  const auto raw_weight = (prox - behav).exp();
  const auto weight = raw_weight.clamp_max(options.importance_cap);
  auto per_token = -weight * at::min(unclipped_obj, clipped_obj);

  const bool with_kl = options.kl_coef > 0 && reference_logp.defined();
  at::Tensor kl;
  if (with_kl) {
    const auto ref_minus_logp = masked(reference_logp.detach(), valid) - lp;
    kl = ref_minus_logp.exp() - ref_minus_logp - 1.0;
    per_token = per_token + options.kl_coef * kl;
  }

  PolicyLossResult result;
  result.loss = (per_token * m).sum() / token_normaliser;

  at::NoGradGuard no_grad;
  const auto r = ratio.detach();
  std::vector<at::Tensor> sums = {
      ((clipped_obj.detach() < unclipped_obj.detach()) & valid).sum().to(at::kDouble),
      m.sum().to(at::kDouble),
      (r * m).sum().to(at::kDouble),
      (((r - 1.0) - log_ratio.detach()) * m).sum().to(at::kDouble),
      (weight * m).sum().to(at::kDouble),
      ((raw_weight >= options.importance_cap) & valid).sum().to(at::kDouble),
  };
  if (with_kl) sums.push_back((kl.detach() * m).sum().to(at::kDouble));
  const auto host = read_sums(sums);
  result.clipped_tokens = host[0];
  result.tokens = host[1];
  result.ratio_sum = host[2];
  result.approx_kl_sum = host[3];
  result.importance_sum = host[4];
  result.capped_tokens = host[5];
  if (with_kl) result.kl_sum = host[6];
  return result;
}

ValueLossResult value_loss(const at::Tensor& values, const at::Tensor& old_values,
                           const at::Tensor& returns, const at::Tensor& mask, double value_clip,
                           double token_normaliser) {
  check_flat("value_loss", {&values, &old_values, &returns, &mask});
  check_normaliser("value_loss", token_normaliser);
  const auto valid = mask > 0;
  const auto m = mask.to(values.scalar_type());
  const auto v = masked(values, valid);
  const auto ret = masked(returns.detach(), valid);
  const auto sq_error = (v - ret).pow(2);
  at::Tensor per_token = sq_error;
  at::Tensor clipped_larger;
  if (value_clip > 0) {
    const auto old = masked(old_values.detach(), valid);
    const auto v_clipped = old + (v - old).clamp(-value_clip, value_clip);
    const auto clipped_sq_error = (v_clipped - ret).pow(2);
    per_token = at::max(sq_error, clipped_sq_error);
    clipped_larger = (clipped_sq_error.detach() > sq_error.detach()) & valid;
  }
  ValueLossResult result;
  result.loss = 0.5 * (per_token * m).sum() / token_normaliser;

  at::NoGradGuard no_grad;
  std::vector<at::Tensor> sums = {m.sum().to(at::kDouble),
                                  (sq_error.detach() * m).sum().to(at::kDouble)};
  if (clipped_larger.defined()) sums.push_back(clipped_larger.sum().to(at::kDouble));
  const auto host = read_sums(sums);
  result.tokens = host[0];
  result.sq_error_sum = host[1];
  if (clipped_larger.defined()) result.clipped_tokens = host[2];
  return result;
}

SftLossResult sft_loss(const at::Tensor& logp, const at::Tensor& mask, double token_normaliser) {
  check_flat("sft_loss", {&logp, &mask});
  check_normaliser("sft_loss", token_normaliser);
  const auto valid = mask > 0;
  const auto m = mask.to(logp.scalar_type());
  const auto nll = -(masked(logp, valid) * m).sum();
  SftLossResult result;
  result.loss = nll / token_normaliser;
  at::NoGradGuard no_grad;
  const auto host = read_sums({nll.detach().to(at::kDouble), m.sum().to(at::kDouble)});
  result.nll_sum = host[0];
  result.tokens = host[1];
  return result;
}

ExplainedVariance ExplainedVariance::from_tensors(const at::Tensor& values,
                                                  const at::Tensor& returns,
                                                  const at::Tensor& mask) {
  check_flat("explained_variance", {&values, &returns, &mask});
  at::NoGradGuard no_grad;
  const auto valid = mask > 0;
  const auto m = mask.to(at::kDouble);
  const auto ret = masked(returns.to(at::kDouble), valid);
  const auto residual = ret - masked(values.detach().to(at::kDouble), valid);
  const auto host = read_sums({m.sum(), (ret * m).sum(), (ret * ret * m).sum(),
                               (residual * m).sum(), (residual * residual * m).sum()});
  return from_array({host[0], host[1], host[2], host[3], host[4]});
}

ExplainedVariance ExplainedVariance::from_array(const std::array<double, 5>& s) {
  return ExplainedVariance{s[0], s[1], s[2], s[3], s[4]};
}

std::array<double, 5> ExplainedVariance::as_array() const {
  return {count, returns_sum, returns_sq_sum, residual_sum, residual_sq_sum};
}

void ExplainedVariance::add(const ExplainedVariance& o) {
  count += o.count;
  returns_sum += o.returns_sum;
  returns_sq_sum += o.returns_sq_sum;
  residual_sum += o.residual_sum;
  residual_sq_sum += o.residual_sq_sum;
}

double ExplainedVariance::value() const {
  if (count <= 0) return std::numeric_limits<double>::quiet_NaN();
  const double mean_r = returns_sum / count;
  const double var_r = returns_sq_sum / count - mean_r * mean_r;
  const double mean_e = residual_sum / count;
  const double var_e = residual_sq_sum / count - mean_e * mean_e;
  // Constant returns: Var(R) is 0 up to the rounding of E[R^2] - E[R]^2.
  if (!(var_r > 1e-12 * (returns_sq_sum / count))) return std::numeric_limits<double>::quiet_NaN();
  return 1.0 - var_e / var_r;
}

}  // namespace cuda_agent
