#include "learner/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cuda_agent {
namespace {

// Padding granularity: keeps every shard boundary a multiple of any vector width.
constexpr std::int64_t kAlign = 64;

std::int64_t round_up(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

Error bad_state(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "optimizer.bad_state",
                    "optimizer state: " + what);
}

}  // namespace

double lr_schedule_factor(const AdamWOptions& o, std::int64_t t) {
  if (o.warmup_steps > 0 && t < o.warmup_steps)
    return static_cast<double>(t) / static_cast<double>(o.warmup_steps);
  if (o.decay_steps <= 0) return 1.0;
  const std::int64_t from = std::max<std::int64_t>(o.warmup_steps, 1);
  const double span = static_cast<double>(std::max<std::int64_t>(o.decay_steps - from, 1));
  const double x = std::clamp(static_cast<double>(t - from) / span, 0.0, 1.0);
  return o.min_lr_ratio + (1.0 - o.min_lr_ratio) * 0.5 * (1.0 + std::cos(M_PI * x));
}

MasterAdamW MasterAdamW::create(std::vector<std::pair<std::string, at::Tensor>> params,
                                const AdamWOptions& options, const ShardSpec& shard) {
  TORCH_CHECK(!params.empty(), "MasterAdamW: no parameters");
  TORCH_CHECK(
      !shard.sharded || (shard.world_size >= 1 && shard.rank >= 0 && shard.rank < shard.world_size),
      "MasterAdamW: rank ", shard.rank, " outside a world of ", shard.world_size);
  torch::NoGradGuard no_grad;
  MasterAdamW o;
  o.options_ = options;
  o.spec_ = shard;
  if (!o.spec_.sharded) o.spec_ = ShardSpec{.rank = 0, .world_size = 1, .sharded = false};
  const at::Device device = params.front().second.device();
  for (auto& [name, t] : params) {
    TORCH_CHECK(t.defined() && t.is_floating_point(), "MasterAdamW: parameter '", name,
                "' is not a floating-point tensor");
    TORCH_CHECK(t.device() == device, "MasterAdamW: parameter '", name, "' is on ", t.device(),
                ", the first on ", device);
    o.params_.push_back({name, t, o.numel_, t.numel()});
    o.numel_ += t.numel();
  }
  const std::int64_t world = o.spec_.world_size;
  o.padded_ = round_up(std::max<std::int64_t>(o.numel_, 1), kAlign * world);
  o.shard_ = o.padded_ / world;
  o.owned_offset_ = o.spec_.rank * o.shard_;
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  o.master_ = at::zeros({o.padded_}, f32);
  for (const Param& p : o.params_) {
    o.master_.narrow(0, p.offset, p.numel).copy_(p.tensor.detach().reshape({-1}));
  }
  o.exp_avg_ = at::zeros({o.shard_}, f32);
  o.exp_avg_sq_ = at::zeros({o.shard_}, f32);
  return o;
}

at::Tensor MasterAdamW::flat_grad() const {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  parts.reserve(params_.size());
  for (const Param& p : params_) {
    const at::Tensor& g = p.tensor.grad();
    if (g.defined()) {
      parts.push_back(g.detach().reshape({-1}).to(at::kFloat));
    } else {
      parts.push_back(at::zeros({p.numel}, master_.options()));
    }
  }
  return at::cat(parts);
}

OptimizerStepStats MasterAdamW::step(const at::Tensor& flat_grad, double lr_scale) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(flat_grad.dim() == 1 && (flat_grad.numel() == numel_ || flat_grad.numel() == padded_),
              "MasterAdamW::step: gradient of ", flat_grad.sizes(), ", expected [", numel_,
              "] or [", padded_, "]");
  at::Tensor g = flat_grad.to(master_.device(), at::kFloat).contiguous();
  OptimizerStepStats stats;
  // The norm over exactly the P real elements, so padding cannot change its reduction order.
  stats.grad_norm = g.narrow(0, 0, numel_).norm().item<double>();
  if (!std::isfinite(stats.grad_norm)) {
    stats.skipped = true;
    return stats;
  }
  double coef = 1.0;
  if (options_.max_grad_norm > 0) {
    const double c = options_.max_grad_norm / (stats.grad_norm + 1e-6);
    if (c < 1.0) {
      coef = c;
      stats.clipped = true;
    }
  }
  const std::int64_t t = steps_ + 1;
  double lr = options_.lr * lr_scale;
  lr *= lr_schedule_factor(options_, t);
  stats.lr = lr;

  // This rank's gradient slice [S] (zeros past P).
  at::Tensor gs;
  const std::int64_t real = std::clamp<std::int64_t>(numel_ - owned_offset_, 0, shard_);
  if (real == shard_) {
    gs = g.narrow(0, owned_offset_, shard_);
  } else {
    gs = at::zeros({shard_}, master_.options());
    if (real > 0) gs.narrow(0, 0, real).copy_(g.narrow(0, owned_offset_, real));
  }
  if (stats.clipped) gs = gs * coef;

  const double b1 = options_.beta1, b2 = options_.beta2;
  const double bias1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double bias2 = 1.0 - std::pow(b2, static_cast<double>(t));
  at::Tensor p = owned_master();
  if (options_.weight_decay != 0) p.mul_(1.0 - lr * options_.weight_decay);
  at::Tensor tmp = gs * (1.0 - b1);
  exp_avg_.mul_(b1).add_(tmp);
  at::mul_out(tmp, gs, gs);
  tmp.mul_(1.0 - b2);
  exp_avg_sq_.mul_(b2).add_(tmp);
  at::sqrt_out(tmp, exp_avg_sq_);
  tmp.div_(std::sqrt(bias2)).add_(options_.eps);  // denominator
  at::div_out(tmp, exp_avg_, tmp);
  tmp.mul_(-lr / bias1);
  p.add_(tmp);
  steps_ = t;
  if (!spec_.sharded) publish();
  return stats;
}

at::Tensor MasterAdamW::owned_master() { return master_.narrow(0, owned_offset_, shard_); }

at::Tensor MasterAdamW::full_master() { return master_; }

void MasterAdamW::publish() {
  torch::NoGradGuard no_grad;
  for (Param& p : params_) {
    p.tensor.detach().copy_(master_.narrow(0, p.offset, p.numel).view(p.tensor.sizes()));
  }
}

std::string MasterAdamW::layout_text() const {
  std::string out;
  for (const Param& p : params_) {
    out += p.name;
    out += ':';
    for (std::int64_t d = 0; d < p.tensor.dim(); ++d) {
      if (d > 0) out += 'x';
      out += std::to_string(p.tensor.size(d));
    }
    out += ';';
  }
  return out;
}

std::map<std::string, at::Tensor> MasterAdamW::state() const {
  const std::string layout = layout_text();
  auto u8 = at::empty({static_cast<std::int64_t>(layout.size())}, at::kByte);
  std::memcpy(u8.data_ptr(), layout.data(), layout.size());
  auto i64 = at::TensorOptions().dtype(at::kLong);
  return {
      {"master", master_.narrow(0, owned_offset_, shard_)},
      {"exp_avg", exp_avg_},
      {"exp_avg_sq", exp_avg_sq_},
      {"step", at::full({1}, steps_, i64)},
      {"layout.shard",
       at::tensor(std::vector<std::int64_t>{numel_, shard_, spec_.rank, spec_.world_size}, i64)},
      {"layout.params", u8},
  };
}

Status MasterAdamW::load_state(const std::map<std::string, at::Tensor>& state) {
  try {
    auto get = [&](const char* key, at::ScalarType dtype,
                   std::int64_t numel) -> Expected<at::Tensor> {
      auto it = state.find(key);
      if (it == state.end()) return bad_state(std::string("no tensor '") + key + "'");
      const at::Tensor& t = it->second;
      if (!t.defined() || t.scalar_type() != dtype || t.dim() != 1 ||
          (numel >= 0 && t.numel() != numel)) {
        return bad_state(std::string("tensor '") + key + "' is " +
                         (t.defined() ? std::string(c10::toString(t.scalar_type())) + " of " +
                                            std::to_string(t.numel()) + " elements"
                                      : std::string("undefined")) +
                         ", expected " + c10::toString(dtype) +
                         (numel >= 0 ? " of " + std::to_string(numel) : std::string()));
      }
      return t.to(at::kCPU);
    };
    ASSIGN_OR_RETURN(at::Tensor shard, get("layout.shard", at::kLong, 4));
    const auto* s = shard.data_ptr<std::int64_t>();
    if (s[0] != numel_ || s[1] != shard_ || s[2] != spec_.rank || s[3] != spec_.world_size) {
      return bad_state("saved for P=" + std::to_string(s[0]) + " S=" + std::to_string(s[1]) +
                       " rank " + std::to_string(s[2]) + " of " + std::to_string(s[3]) +
                       "; this optimizer has P=" + std::to_string(numel_) +
                       " S=" + std::to_string(shard_) + " rank " + std::to_string(spec_.rank) +
                       " of " + std::to_string(spec_.world_size));
    }
    ASSIGN_OR_RETURN(at::Tensor params, get("layout.params", at::kByte, -1));
    const std::string saved(static_cast<const char*>(params.data_ptr()),
                            static_cast<std::size_t>(params.numel()));
    if (saved != layout_text()) {
      return bad_state("saved for other parameters (names, shapes or order differ)");
    }
    ASSIGN_OR_RETURN(at::Tensor step, get("step", at::kLong, 1));
    ASSIGN_OR_RETURN(at::Tensor master, get("master", at::kFloat, shard_));
    ASSIGN_OR_RETURN(at::Tensor m, get("exp_avg", at::kFloat, shard_));
    ASSIGN_OR_RETURN(at::Tensor v, get("exp_avg_sq", at::kFloat, shard_));
    torch::NoGradGuard no_grad;
    owned_master().copy_(master);
    exp_avg_.copy_(m);
    exp_avg_sq_.copy_(v);
    steps_ = step.data_ptr<std::int64_t>()[0];
    if (!spec_.sharded) publish();
    return Status::ok();
  } catch (const c10::Error& e) {
    return make_error(ErrorCategory::kInternal, "optimizer.torch",
                      std::string("optimizer state: ") + e.what_without_backtrace());
  }
}

}  // namespace cuda_agent
