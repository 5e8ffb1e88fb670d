#include "model/transformer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "model/safetensors.h"

namespace cuda_agent {
namespace {

using at::indexing::Slice;

Expected<at::ScalarType> to_scalar_type(StDtype d) {
  switch (d) {
    case StDtype::kF32: return at::kFloat;
    case StDtype::kF16: return at::kHalf;
    case StDtype::kBF16: return at::kBFloat16;
    default:
      return make_error(ErrorCategory::kInvalidInput, "model.bad_weight_dtype",
                        std::string("dtype ") + st_dtype_name(d) + " (F32, F16, BF16 are read)");
  }
}

Expected<StDtype> to_st_dtype(at::ScalarType t) {
  if (t == at::kFloat) return StDtype::kF32;
  if (t == at::kHalf) return StDtype::kF16;
  if (t == at::kBFloat16) return StDtype::kBF16;
  return make_error(ErrorCategory::kInternal, "model.bad_weight_dtype",
                    std::string("cannot save dtype ") + c10::toString(t));
}

std::string shape_str(at::IntArrayRef s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Copies a mapped tensor onto `device` as `dtype`, checking its shape.
Expected<at::Tensor> read_tensor(const SafetensorsSet& set, const std::string& name,
                                 std::vector<std::int64_t> want, at::ScalarType dtype,
                                 at::Device device) {
  ASSIGN_OR_RETURN(const SafetensorsTensor* t, set.get(name));
  auto st = to_scalar_type(t->dtype);
  if (!st) return st.error().with_context(t->file + ": tensor '" + name + "'");
  if (t->shape != want) {
    return make_error(ErrorCategory::kInvalidInput, "model.bad_weight_shape",
                      t->file + ": tensor '" + name + "' has shape " + shape_str(t->shape) +
                          ", config.json implies " + shape_str(want));
  }
  auto view =
      at::from_blob(const_cast<std::byte*>(t->data), t->shape, at::TensorOptions().dtype(*st));
  return view.to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
}

double yarn_get_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

Expected<at::ScalarType> parse_dtype_name(const std::string& name) {
  if (name == "float32" || name == "fp32") return at::kFloat;
  if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
  if (name == "float16" || name == "fp16") return at::kHalf;
  return make_error(ErrorCategory::kInvalidInput, "model.bad_dtype",
                    "dtype '" + name + "' (fp32, bf16, fp16)");
}

std::int64_t KvCache::bytes() const {
  std::int64_t n = 0;
  for (const auto& t : k) n += t.numel() * t.element_size();
  for (const auto& t : v) n += t.numel() * t.element_size();
  return n;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto xf = x.to(at::kFloat);
  auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (xf * at::rsqrt(var + eps)).to(x.scalar_type());
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const std::int64_t half = x.size(-1) / 2;
  auto rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

std::pair<at::Tensor, double> Transformer::rope_inv_freq(std::int64_t seq_len) const {
  const ModelConfig& c = config_;
  const RopeScaling& s = c.rope_scaling;
  const std::int64_t dim = c.head_dim;
  double base = c.rope_theta;
  if (s.type == RopeType::kDynamic && seq_len > c.max_position_embeddings) {
    base *=
        std::pow(s.factor * double(seq_len) / double(c.max_position_embeddings) - (s.factor - 1),
                 double(dim) / double(dim - 2));
  }
  auto exps =
      at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / double(dim);
  auto pos_freqs = at::pow(base, exps);
  at::Tensor inv = 1.0 / pos_freqs;
  double attention_scale = 1.0;
  switch (s.type) {
    case RopeType::kDefault:
    case RopeType::kDynamic: break;
    case RopeType::kLinear: inv = inv / s.factor; break;
    case RopeType::kLlama3: {
      const double old_ctx = double(s.original_max_position_embeddings);
      const double low_wavelen = old_ctx / s.low_freq_factor;
      const double high_wavelen = old_ctx / s.high_freq_factor;
      auto wavelen = 2 * M_PI / inv;
      auto scaled = at::where(wavelen > low_wavelen, inv / s.factor, inv);
      auto smooth =
          (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      auto smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
      auto medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
      inv = at::where(medium, smoothed, scaled);
      break;
    }
    case RopeType::kYarn: {
      const double factor = s.factor;
      const double orig = double(s.original_max_position_embeddings);
      if (s.attention_factor) {
        attention_scale = *s.attention_factor;
      } else if (s.mscale && s.mscale_all_dim) {
        attention_scale =
            yarn_get_mscale(factor, *s.mscale) / yarn_get_mscale(factor, *s.mscale_all_dim);
      } else {
        attention_scale = yarn_get_mscale(factor, 1.0);
      }
      auto correction_dim = [&](double rotations) {
        return (double(dim) * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
      };
      double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
      if (s.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, double(dim - 1));
      if (low == high) high += 0.001;
      auto ramp =
          ((at::arange(dim / 2, at::TensorOptions().dtype(at::kFloat)) - low) / (high - low))
              .clamp(0, 1);
      auto extrapolation_factor = 1 - ramp;
      auto interpolation = 1.0 / (factor * pos_freqs);
      inv = interpolation * (1 - extrapolation_factor) + inv * extrapolation_factor;
      break;
    }
  }
  return {inv, attention_scale};
}

KvCache Transformer::make_cache(std::int64_t slots, std::int64_t max_seq) const {
  KvCache cache;
  cache.slots = slots;
  cache.max_seq = max_seq;
  auto opts = at::TensorOptions().dtype(dtype()).device(device());
  for (std::int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    cache.k.push_back(
        at::zeros({slots, config_.num_key_value_heads, max_seq, config_.head_dim}, opts));
    cache.v.push_back(
        at::zeros({slots, config_.num_key_value_heads, max_seq, config_.head_dim}, opts));
  }
  return cache;
}

at::Tensor Transformer::attention(const LayerWeights& lw, std::size_t layer, const at::Tensor& x,
                                  const at::Tensor& cos, const at::Tensor& sin, KvCache* cache,
                                  const std::vector<std::int64_t>& slots, const at::Tensor& slot_t,
                                  const at::Tensor& positions, const at::Tensor& bias,
                                  std::int64_t kv_len) const {
  const ModelConfig& c = config_;
  const std::int64_t B = x.size(0), T = x.size(1), nh = c.num_attention_heads,
                     kvh = c.num_key_value_heads, hd = c.head_dim;
  auto q = at::linear(x, lw.q_w, lw.q_b).view({B, T, nh, hd});
  auto k = at::linear(x, lw.k_w, lw.k_b).view({B, T, kvh, hd});
  auto v = at::linear(x, lw.v_w, lw.v_b).view({B, T, kvh, hd});
  if (c.qk_norm) {
    q = rms_norm(q, lw.q_norm, c.rms_norm_eps);
    k = rms_norm(k, lw.k_norm, c.rms_norm_eps);
  }
  q = apply_rope(q.transpose(1, 2), cos, sin);  // [B, nh, T, hd]
  k = apply_rope(k.transpose(1, 2), cos, sin);  // [B, kvh, T, hd]
  v = v.transpose(1, 2);
  at::Tensor keys = k, values = v, out;
  const std::int64_t rep = nh / kvh;
  if (cache != nullptr) {
    auto slot_bt = slot_t.unsqueeze(1).expand({B, T});
    cache->k[layer].index_put_({slot_bt, Slice(), positions}, k.transpose(1, 2));
    cache->v[layer].index_put_({slot_bt, Slice(), positions}, v.transpose(1, 2));
    bool consecutive = true;
    for (std::size_t i = 1; i < slots.size(); ++i)
      consecutive &= slots[i] == slots[0] + std::int64_t(i);
    keys = consecutive ? cache->k[layer].narrow(0, slots[0], B)
                       : cache->k[layer].index_select(0, slot_t);
    values = consecutive ? cache->v[layer].narrow(0, slots[0], B)
                         : cache->v[layer].index_select(0, slot_t);
    keys = keys.narrow(2, 0, kv_len);
    values = values.narrow(2, 0, kv_len);
    if (rep > 1) {
      keys = keys.repeat_interleave(rep, 1);
      values = values.repeat_interleave(rep, 1);
    }
    out = torch_compat::scaled_dot_product_attention(q, keys, values, bias, /*causal=*/false);
  } else {
    if (rep > 1) {
      keys = keys.repeat_interleave(rep, 1);
      values = values.repeat_interleave(rep, 1);
    }
    out =
        torch_compat::scaled_dot_product_attention(q, keys, values, std::nullopt, /*causal=*/true);
  }
  return at::linear(out.transpose(1, 2).reshape({B, T, nh * hd}), lw.o_w);
}

at::Tensor Transformer::hidden(const at::Tensor& tokens, KvCache* cache,
                               const std::vector<std::int64_t>& slots,
                               const std::vector<std::int64_t>& starts) const {
  const ModelConfig& c = config_;
  const std::int64_t B = tokens.size(0), T = tokens.size(1);
  const auto dev = device();
  std::vector<std::int64_t> st = cache != nullptr ? starts : std::vector<std::int64_t>(B, 0);
  TORCH_CHECK(std::int64_t(st.size()) == B, "starts must have one entry per row");
  TORCH_CHECK(cache == nullptr || std::int64_t(slots.size()) == B,
              "slots must have one entry per row");
  std::int64_t kv_len = 0;
  for (auto s : st) kv_len = std::max(kv_len, s + T);
  if (cache != nullptr) {
    TORCH_CHECK(kv_len <= cache->max_seq, "sequence of ", kv_len, " tokens exceeds the cache's ",
                cache->max_seq);
  }
  auto long_opts = at::TensorOptions().dtype(at::kLong).device(dev);
  auto start_t = at::tensor(st, at::TensorOptions().dtype(at::kLong)).to(dev);
  auto positions = start_t.unsqueeze(1) + at::arange(T, long_opts).unsqueeze(0);  // [B, T]
  // With a cache: the slots [B] on the device and the additive mask [B, 1, T, kv_len] (key j is
  // visible to the query at position p when j <= p), built once for all layers.
  at::Tensor slot_t, bias;
  if (cache != nullptr) {
    slot_t = at::tensor(slots, at::TensorOptions().dtype(at::kLong)).to(dev);
    auto j = at::arange(kv_len, long_opts).view({1, 1, kv_len});
    auto hidden_keys = (j > positions.unsqueeze(-1)).unsqueeze(1);
    bias = at::zeros({B, 1, T, kv_len}, at::TensorOptions().dtype(dtype()).device(dev))
               .masked_fill(hidden_keys, -INFINITY);
  }
  auto [inv, scale] = rope_inv_freq(kv_len);
  auto freqs = positions.to(at::kFloat).unsqueeze(-1) * inv.to(dev).view({1, 1, -1});
  auto emb = at::cat({freqs, freqs}, -1);
  auto cos = (emb.cos() * scale).to(dtype()).unsqueeze(1);  // [B, 1, T, hd]
  auto sin = (emb.sin() * scale).to(dtype()).unsqueeze(1);
  auto x = at::embedding(w_.embed, tokens);
  for (std::size_t l = 0; l < w_.layers.size(); ++l) {
    const LayerWeights& lw = w_.layers[l];
    x = x + attention(lw, l, rms_norm(x, lw.input_norm, c.rms_norm_eps), cos, sin, cache, slots,
                      slot_t, positions, bias, kv_len);
    auto h = rms_norm(x, lw.post_norm, c.rms_norm_eps);
    auto mlp = at::silu(at::linear(h, lw.gate_w, lw.gate_b)) * at::linear(h, lw.up_w, lw.up_b);
    x = x + at::linear(mlp, lw.down_w, lw.down_b);
  }
  return rms_norm(x, w_.final_norm, c.rms_norm_eps);
}

at::Tensor Transformer::logits(const at::Tensor& hidden) const {
  return at::linear(hidden, w_.lm_head);
}

at::Tensor Transformer::forward(const at::Tensor& tokens, KvCache* cache,
                                const std::vector<std::int64_t>& slots,
                                const std::vector<std::int64_t>& starts, bool last_only) const {
  auto h = hidden(tokens, cache, slots, starts);
  if (last_only) h = h.narrow(1, h.size(1) - 1, 1);
  return logits(h);
}

// ---- loading, saving, random init ----

namespace {

// Calls f(name, shape, is_norm, optional) for every parameter the config implies, in a fixed
// order, with a pointer to where it lives in TransformerWeights.
template <class F>
void for_each_param(const ModelConfig& c, TransformerWeights& w, F&& f) {
  const std::int64_t H = c.hidden_size, I = c.intermediate_size, nh = c.num_attention_heads,
                     kvh = c.num_key_value_heads, hd = c.head_dim, V = c.vocab_size;
  f("model.embed_tokens.weight", std::vector<std::int64_t>{V, H}, false, &w.embed);
  w.layers.resize(c.num_hidden_layers);
  for (std::int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    f(p + "input_layernorm.weight", std::vector<std::int64_t>{H}, true, &l.input_norm);
    f(p + "self_attn.q_proj.weight", std::vector<std::int64_t>{nh * hd, H}, false, &l.q_w);
    f(p + "self_attn.k_proj.weight", std::vector<std::int64_t>{kvh * hd, H}, false, &l.k_w);
    f(p + "self_attn.v_proj.weight", std::vector<std::int64_t>{kvh * hd, H}, false, &l.v_w);
    f(p + "self_attn.o_proj.weight", std::vector<std::int64_t>{H, nh * hd}, false, &l.o_w);
    if (c.attention_bias) {
      f(p + "self_attn.q_proj.bias", std::vector<std::int64_t>{nh * hd}, false, &l.q_b);
      f(p + "self_attn.k_proj.bias", std::vector<std::int64_t>{kvh * hd}, false, &l.k_b);
      f(p + "self_attn.v_proj.bias", std::vector<std::int64_t>{kvh * hd}, false, &l.v_b);
    }
    if (c.qk_norm) {
      f(p + "self_attn.q_norm.weight", std::vector<std::int64_t>{hd}, true, &l.q_norm);
      f(p + "self_attn.k_norm.weight", std::vector<std::int64_t>{hd}, true, &l.k_norm);
    }
    f(p + "post_attention_layernorm.weight", std::vector<std::int64_t>{H}, true, &l.post_norm);
    f(p + "mlp.gate_proj.weight", std::vector<std::int64_t>{I, H}, false, &l.gate_w);
    f(p + "mlp.up_proj.weight", std::vector<std::int64_t>{I, H}, false, &l.up_w);
    f(p + "mlp.down_proj.weight", std::vector<std::int64_t>{H, I}, false, &l.down_w);
    if (c.mlp_bias) {
      f(p + "mlp.gate_proj.bias", std::vector<std::int64_t>{I}, false, &l.gate_b);
      f(p + "mlp.up_proj.bias", std::vector<std::int64_t>{I}, false, &l.up_b);
      f(p + "mlp.down_proj.bias", std::vector<std::int64_t>{H}, false, &l.down_b);
    }
  }
  f("model.norm.weight", std::vector<std::int64_t>{H}, true, &w.final_norm);
  if (!c.tie_word_embeddings)
    f("lm_head.weight", std::vector<std::int64_t>{V, H}, false, &w.lm_head);
}

}  // namespace

Expected<Transformer> Transformer::load(const std::string& dir, const LoadOptions& options) {
  ASSIGN_OR_RETURN(ModelConfig c, load_model_config(dir));
  at::ScalarType dtype = at::kFloat;
  if (options.dtype) {
    dtype = *options.dtype;
  } else {
    ASSIGN_OR_RETURN(dtype, parse_dtype_name(c.torch_dtype));
  }
  ASSIGN_OR_RETURN(SafetensorsSet set, SafetensorsSet::open(dir));
  TransformerWeights w;
  Status status;
  for_each_param(
      c, w, [&](const std::string& name, std::vector<std::int64_t> shape, bool, at::Tensor* out) {
        if (!status) return;
        auto t = read_tensor(set, name, std::move(shape), dtype, options.device);
        if (!t) {
          status = t.error();
          return;
        }
        *out = std::move(*t);
      });
  if (!status) return status.error();
  if (c.tie_word_embeddings) w.lm_head = w.embed;
  return Transformer(std::move(c), std::move(w));
}

Transformer Transformer::random(const ModelConfig& config, std::uint64_t seed,
                                const LoadOptions& options) {
  auto gen = at::detail::createCPUGenerator(seed);
  const at::ScalarType dtype = options.dtype.value_or(at::kFloat);
  TransformerWeights w;
  for_each_param(config, w,
                 [&](const std::string&, const std::vector<std::int64_t>& shape, bool is_norm,
                     at::Tensor* out) {
                   auto r = at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat));
                   auto t = is_norm ? 1.0 + 0.1 * r : 0.02 * r;
                   *out = t.to(options.device, dtype);
                 });
  if (config.tie_word_embeddings) w.lm_head = w.embed;
  ModelConfig c = config;
  c.torch_dtype = dtype == at::kFloat ? "float32" : dtype == at::kBFloat16 ? "bfloat16" : "float16";
  return Transformer(std::move(c), std::move(w));
}

Status Transformer::save(const std::string& dir) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCategory::kIo, "model.save", dir + ": " + ec.message());
  ModelConfig c = config_;
  TransformerWeights copy = w_;
  std::vector<at::Tensor> keep;
  std::vector<SafetensorsWriteTensor> out;
  Status status;
  for_each_param(
      c, copy,
      [&](const std::string& name, const std::vector<std::int64_t>& shape, bool, at::Tensor* t) {
        auto cpu = t->to(at::kCPU).contiguous();
        keep.push_back(cpu);
        auto st = to_st_dtype(cpu.scalar_type());
        if (!st) {
          status = st.error();
          return;
        }
        out.push_back({.name = name,
                       .dtype = *st,
                       .shape = shape,
                       .data = cpu.data_ptr(),
                       .bytes = std::size_t(cpu.numel() * cpu.element_size())});
      });
  if (!status) return status;
  RETURN_IF_ERROR(
      write_safetensors((fs::path(dir) / "model.safetensors").string(), out, {{"format", "pt"}}));
  std::ofstream cfg(fs::path(dir) / "config.json");
  cfg << model_config_json(c);
  if (!cfg) return make_error(ErrorCategory::kIo, "model.save", dir + "/config.json: write failed");
  return Status::ok();
}

// ---- value head ----

ValueHead ValueHead::zeros(std::int64_t hidden, const at::TensorOptions& options) {
  return {at::zeros({1, hidden}, options), at::zeros({1}, options)};
}

Expected<ValueHead> ValueHead::load(const std::string& path, const at::TensorOptions& options) {
  ASSIGN_OR_RETURN(SafetensorsSet set, SafetensorsSet::open(path));
  ASSIGN_OR_RETURN(const SafetensorsTensor* w, set.get("score.weight"));
  if (w->shape.size() != 2 || w->shape[0] != 1) {
    return make_error(ErrorCategory::kInvalidInput, "model.bad_weight_shape",
                      path + ": tensor 'score.weight' has shape " + shape_str(w->shape) +
                          ", expected [1, hidden]");
  }
  ValueHead head;
  ASSIGN_OR_RETURN(head.weight, read_tensor(set, "score.weight", w->shape,
                                            options.dtype().toScalarType(), options.device()));
  ASSIGN_OR_RETURN(head.bias, read_tensor(set, "score.bias", {1}, options.dtype().toScalarType(),
                                          options.device()));
  return head;
}

Status ValueHead::save(const std::string& path) const {
  auto w = weight.to(at::kCPU).contiguous(), b = bias.to(at::kCPU).contiguous();
  ASSIGN_OR_RETURN(StDtype d, to_st_dtype(w.scalar_type()));
  return write_safetensors(path, {{.name = "score.weight",
                                   .dtype = d,
                                   .shape = {w.size(0), w.size(1)},
                                   .data = w.data_ptr(),
                                   .bytes = std::size_t(w.numel() * w.element_size())},
                                  {.name = "score.bias",
                                   .dtype = d,
                                   .shape = {1},
                                   .data = b.data_ptr(),
                                   .bytes = std::size_t(b.element_size())}});
}

at::Tensor ValueHead::forward(const at::Tensor& hidden) const {
  return at::linear(hidden.to(weight.scalar_type()), weight, bias).squeeze(-1).to(at::kFloat);
}

}  // namespace cuda_agent
