#include "learner/token_logprobs.h"

#include <algorithm>

namespace cuda_agent {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// float32 for the half types and float32, float64 for a float64 model.
at::ScalarType compute_dtype(at::ScalarType model_dtype) {
  return model_dtype == at::kDouble ? at::kDouble : at::kFloat;
}

/// The engine's logits of rows `h` [c, H]: model-dtype matmul, cast, scale. [c, V].
at::Tensor scaled_logits(const at::Tensor& h, const at::Tensor& weight, double inv_t) {
  auto z = at::linear(h, weight).to(compute_dtype(weight.scalar_type()));
  if (inv_t != 1.0) z.mul_(inv_t);  // z is a fresh tensor (linear's output or its cast)
  return z;
}

class ChunkedLogprobsFunction : public torch::autograd::Function<ChunkedLogprobsFunction> {
 public:
  // Outputs: {logprobs} or {logprobs, entropy}.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden,
                               const at::Tensor& weight, const at::Tensor& targets,
                               std::int64_t chunk_rows, bool with_entropy, double inv_t) {
    const std::int64_t N = hidden.size(0);
    const auto dtype = compute_dtype(weight.scalar_type());
    auto logprobs = at::empty({N}, hidden.options().dtype(dtype));
    at::Tensor entropy = with_entropy ? at::empty({N}, logprobs.options()) : at::Tensor();
    for (std::int64_t start = 0; start < N; start += chunk_rows) {
      const std::int64_t rows = std::min(chunk_rows, N - start);
      auto logp = at::log_softmax(scaled_logits(hidden.narrow(0, start, rows), weight, inv_t), -1);
      logprobs.narrow(0, start, rows)
          .copy_(logp.gather(1, targets.narrow(0, start, rows).unsqueeze(1)).squeeze(1));
      if (with_entropy) {
        // H = -sum p log p, p = exp(log p); logp's buffer is reused for p log p.
        entropy.narrow(0, start, rows).copy_(logp.exp().mul_(logp).sum(-1)).neg_();
      }
    }
    ctx->save_for_backward(with_entropy ? variable_list{hidden, weight, targets, entropy}
                                        : variable_list{hidden, weight, targets});
    ctx->saved_data["chunk_rows"] = chunk_rows;
    ctx->saved_data["inv_t"] = inv_t;
    ctx->set_materialize_grads(false);  // an unused entropy costs nothing in the backward
    if (with_entropy) return {logprobs, entropy};
    return {logprobs};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const bool with_entropy = saved.size() > 3;
    const std::int64_t chunk_rows = ctx->saved_data["chunk_rows"].toInt();
    const double inv_t = ctx->saved_data["inv_t"].toDouble();
    const at::Tensor g_logp = grads[0];                               // [N] or undefined
    const at::Tensor g_ent = with_entropy ? grads[1] : at::Tensor();  // [N] or undefined
    const bool want_hidden = ctx->needs_input_grad(0);
    const bool want_weight = ctx->needs_input_grad(1);
    variable_list out(6);  // one per forward argument; the non-tensor ones stay undefined
    if ((!g_logp.defined() && !g_ent.defined()) || (!want_hidden && !want_weight)) return out;

    const std::int64_t N = hidden.size(0);
    const auto model_dtype = weight.scalar_type();
    const auto acc_dtype = compute_dtype(model_dtype);
    at::Tensor grad_hidden =
        want_hidden ? at::empty(hidden.sizes(), weight.options()) : at::Tensor();
    // dL/dW accumulates in place when W is already float32/float64; else in a float32 buffer.
    at::Tensor grad_weight;
    for (std::int64_t start = 0; start < N; start += chunk_rows) {
      const std::int64_t rows = std::min(chunk_rows, N - start);
      auto h = hidden.narrow(0, start, rows);
      auto logp = at::log_softmax(scaled_logits(h, weight, inv_t), -1);  // [rows, V]
      auto p = logp.exp();
      at::Tensor grad_z;  // dL/dz, [rows, V], built in logp's or p's buffer
      if (g_ent.defined()) {
        // -p * (g_logp + g_ent * (log p + H)), then + g_logp at the target.
        auto coef = logp.add_(saved[3].narrow(0, start, rows).unsqueeze(1))
                        .mul_(g_ent.narrow(0, start, rows).unsqueeze(1));
        if (g_logp.defined()) coef.add_(g_logp.narrow(0, start, rows).unsqueeze(1));
        grad_z = coef.mul_(p).neg_();
      } else {
        grad_z = p.mul_(g_logp.narrow(0, start, rows).neg().unsqueeze(1));
      }
      if (g_logp.defined()) {
        grad_z.scatter_add_(1, targets.narrow(0, start, rows).unsqueeze(1),
                            g_logp.narrow(0, start, rows).unsqueeze(1).to(grad_z.scalar_type()));
      }
      if (inv_t != 1.0) grad_z.mul_(inv_t);
      auto grad_logits = grad_z.to(model_dtype);  // [rows, V], as autograd casts back
      if (want_hidden) {
        auto rows_out = grad_hidden.narrow(0, start, rows);
        at::mm_out(rows_out, grad_logits, weight);
      }
      if (want_weight) {
        if (!grad_weight.defined()) {
          grad_weight = at::mm(grad_logits.t(), h).to(acc_dtype);
        } else if (model_dtype == acc_dtype) {
          grad_weight.addmm_(grad_logits.t(), h);
        } else {
          grad_weight.add_(at::mm(grad_logits.t(), h));
        }
      }
    }
    if (want_hidden) out[0] = grad_hidden;
    if (want_weight) {
      out[1] = grad_weight.defined() ? grad_weight.to(model_dtype) : at::zeros_like(weight);
    }
    return out;
  }
};

}  // namespace

TokenLogprobs chunked_token_logprobs(const at::Tensor& hidden, const at::Tensor& weight,
                                     const at::Tensor& targets, std::int64_t chunk_rows,
                                     bool with_entropy, double inv_temperature) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "chunked_token_logprobs: hidden [N, H] and weight [V, H] expected, got ",
              hidden.sizes(), " and ", weight.sizes());
  TORCH_CHECK(
      targets.dim() == 1 && targets.size(0) == hidden.size(0) && targets.scalar_type() == at::kLong,
      "chunked_token_logprobs: targets must be [N] int64, got ", targets.sizes(), " ",
      targets.scalar_type());
  TORCH_CHECK(
      hidden.scalar_type() == weight.scalar_type() && at::isFloatingType(weight.scalar_type()),
      "chunked_token_logprobs: hidden and weight must share a floating dtype, got ",
      hidden.scalar_type(), " and ", weight.scalar_type());
  TORCH_CHECK(hidden.device() == weight.device() && targets.device() == weight.device(),
              "chunked_token_logprobs: hidden, weight and targets must be on one device");
  TORCH_CHECK(chunk_rows >= 1, "chunked_token_logprobs: chunk_rows must be >= 1, got ", chunk_rows);
  const std::int64_t rows = std::max<std::int64_t>(1, std::min(chunk_rows, hidden.size(0)));
  auto outs =
      ChunkedLogprobsFunction::apply(hidden, weight, targets, rows, with_entropy, inv_temperature);
  TokenLogprobs result;
  result.logprobs = outs[0];
  if (with_entropy) result.entropy = outs[1];
  return result;
}

}  // namespace cuda_agent
