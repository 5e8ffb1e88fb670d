#include "model/transformer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
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

std::pair<at::Tensor, at::Tensor> rope_cos_sin(const at::Tensor& positions,
                                               const at::Tensor& inv_freq, double scale,
                                               at::ScalarType dtype) {
  auto freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq.unsqueeze(1);  // [B, T, hd/2]
  auto emb = at::cat({freqs, freqs}, -1);
  return {(emb.cos() * scale).to(dtype).unsqueeze(2), (emb.sin() * scale).to(dtype).unsqueeze(2)};
}

namespace {
// Additive attention mask [B, 1, rep * T, kv_attn] in `dtype` for queries at `positions` [B, T]
// (device): key j is hidden after position p. Queries are folded per key head (see StepInputs).
at::Tensor causal_cache_mask(const at::Tensor& positions, std::int64_t kv_attn, std::int64_t rep,
                             at::ScalarType dtype) {
  const std::int64_t B = positions.size(0), T = positions.size(1);
  auto j = at::arange(kv_attn, positions.options()).view({1, 1, kv_attn});
  auto hidden_keys = j > positions.unsqueeze(-1);  // [B, T, kv_attn]: key j after position p
  auto m = at::zeros({B, T, kv_attn}, positions.options().dtype(dtype))
               .masked_fill(hidden_keys, -INFINITY);
  return m.unsqueeze(1)
      .unsqueeze(1)
      .expand({B, 1, rep, T, kv_attn})
      .reshape({B, 1, rep * T, kv_attn});
}

template <class T>
at::Tensor upload(const std::vector<T>& values, at::ScalarType type, at::Device device) {
  auto opts = at::TensorOptions().dtype(type);
  const auto n = static_cast<std::int64_t>(values.size());
  if (!device.is_cuda()) {
    auto t = at::empty({n}, opts);
    std::copy(values.begin(), values.end(), t.template data_ptr<T>());
    return t.to(device);
  }
  auto host = at::empty({n}, opts.pinned_memory(true));
  std::copy(values.begin(), values.end(), host.template data_ptr<T>());
  return host.to(device, /*non_blocking=*/true);
}
}  // namespace

at::Tensor upload_longs(const std::vector<std::int64_t>& values, at::Device device) {
  return upload(values, at::kLong, device);
}

at::Tensor upload_floats(const std::vector<float>& values, at::Device device) {
  return upload(values, at::kFloat, device);
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
  // Dynamic NTK inside max_position_embeddings is the default table.
  auto [inv, scale] = rope_inv_freq(std::min(max_seq, config_.max_position_embeddings));
  auto positions = at::arange(max_seq, opts.dtype(at::kLong)).view({1, max_seq});
  auto [cos, sin] = rope_cos_sin(positions, inv.to(device()).view({1, -1}), scale, dtype());
  cache.rope_cos = cos.view({max_seq, config_.head_dim});
  cache.rope_sin = sin.view({max_seq, config_.head_dim});
  return cache;
}

// Built once per forward on the host and the device, shared by every layer.
struct Transformer::StepInputs {
  std::int64_t B = 0, T = 0;
  at::Tensor cos, sin;  // [B or 1, T, 1, hd] model dtype
  // No cache, or every row starts at 0: causal attention over this call's own keys.
  bool fresh = true;
  // With a cache:
  at::Tensor write_rows;    // [B * kv_heads * T] int64: rows of the layer cache viewed [-1, hd]
  bool consecutive = true;  // slots[b] == first_slot + b: read the cache through a view
  std::int64_t first_slot = 0;
  at::Tensor read_slots;     // [B] int64 (device): the rows' slots, when not consecutive
  std::int64_t kv_attn = 0;  // keys attended: the longest row, rounded up to 16 within max_seq
  // Additive [B, 1, rep * T, kv_attn] in the model dtype (queries folded per key head: query
  // head g * rep + r at time t is row r * T + t of key head g); unset when fresh.
  at::Tensor mask;
};

Transformer::StepInputs Transformer::step_inputs(
    std::int64_t B, std::int64_t T, KvCache* cache, const std::vector<std::int64_t>& slots,
    const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& rope_lengths) const {
  const ModelConfig& c = config_;
  const auto dev = device();
  const std::int64_t kvh = c.num_key_value_heads, hd = c.head_dim,
                     rep = c.num_attention_heads / kvh;
  StepInputs in;
  in.B = B;
  in.T = T;
  if (cache == nullptr) {
    auto [inv, scale] = rope_inv_freq(T);
    auto positions = at::arange(T, at::TensorOptions().dtype(at::kLong).device(dev)).view({1, T});
    std::tie(in.cos, in.sin) = rope_cos_sin(positions, inv.to(dev).view({1, -1}), scale, dtype());
    return in;
  }
  TORCH_CHECK(std::int64_t(starts.size()) == B, "starts must have one entry per row");
  TORCH_CHECK(std::int64_t(slots.size()) == B, "slots must have one entry per row");
  TORCH_CHECK(rope_lengths.empty() || std::int64_t(rope_lengths.size()) == B,
              "rope_lengths must be empty or have one entry per row");
  std::int64_t kv_len = 0;
  bool dynamic = false;
  std::vector<std::int64_t> rope_len(B);
  for (std::int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(slots[b] >= 0 && slots[b] < cache->slots, "slot ", slots[b], " outside the cache");
    TORCH_CHECK(starts[b] >= 0, "negative start");
    kv_len = std::max(kv_len, starts[b] + T);
    in.fresh &= starts[b] == 0;
    in.consecutive &= slots[b] == slots[0] + b;
    rope_len[b] = std::max(starts[b] + T, rope_lengths.empty() ? 0 : rope_lengths[b]);
    dynamic |= c.rope_scaling.type == RopeType::kDynamic && rope_len[b] > c.max_position_embeddings;
  }
  TORCH_CHECK(kv_len <= cache->max_seq, "sequence of ", kv_len, " tokens exceeds the cache's ",
              cache->max_seq);
  in.first_slot = slots[0];
  // One host -> device copy: positions [B * T], cache rows to write [B * kvh * T], slots [B].
  std::vector<std::int64_t> host;
  host.reserve(B * T * (1 + kvh) + B);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) host.push_back(starts[b] + t);
  }
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < kvh; ++h) {
      for (std::int64_t t = 0; t < T; ++t)
        host.push_back((slots[b] * kvh + h) * cache->max_seq + starts[b] + t);
    }
  }
  for (std::int64_t b = 0; b < B; ++b) host.push_back(slots[b]);
  auto idx = upload_longs(host, dev);
  auto positions = idx.narrow(0, 0, B * T).view({B, T});
  in.write_rows = idx.narrow(0, B * T, B * kvh * T);
  in.read_slots = idx.narrow(0, B * T * (1 + kvh), B);
  if (dynamic || !cache->rope_cos.defined()) {
    std::vector<at::Tensor> invs;
    double scale = 1.0;
    for (std::int64_t b = 0; b < B; ++b) {
      auto [inv, s] = rope_inv_freq(rope_len[b]);
      invs.push_back(inv);
      scale = s;
    }
    std::tie(in.cos, in.sin) = rope_cos_sin(positions, at::stack(invs).to(dev), scale, dtype());
  } else {
    auto flat = positions.reshape({-1});
    in.cos = cache->rope_cos.index_select(0, flat).view({B, T, 1, hd});
    in.sin = cache->rope_sin.index_select(0, flat).view({B, T, 1, hd});
  }
  if (!in.fresh) {
    // A multiple of 16 keys keeps the fused kernels' mask aligned; keys past a row's length are
    // masked (the cache holds finite values there: zeros or an earlier sequence's).
    in.kv_attn = std::min(cache->max_seq, (kv_len + 15) / 16 * 16);
    in.mask = causal_cache_mask(positions, in.kv_attn, rep, dtype());
  }
  return in;
}

at::Tensor Transformer::attention(const LayerWeights& lw, std::size_t layer, const at::Tensor& x,
                                  const StepInputs& in, KvCache* cache) const {
  const ModelConfig& c = config_;
  const std::int64_t B = in.B, T = in.T, nh = c.num_attention_heads, kvh = c.num_key_value_heads,
                     hd = c.head_dim;
  // One matmul for q, k and v; one rotation for the q and k heads together.
  auto qkv = at::linear(x, lw.qkv_w, lw.qkv_b);  // [B, T, (nh + 2 kvh) * hd]
  auto qk = qkv.narrow(-1, 0, (nh + kvh) * hd).view({B, T, nh + kvh, hd});
  if (c.qk_norm) {
    qk = at::cat({rms_norm(qk.narrow(2, 0, nh), lw.q_norm, c.rms_norm_eps),
                  rms_norm(qk.narrow(2, nh, kvh), lw.k_norm, c.rms_norm_eps)},
                 2);
  }
  qk = apply_rope(qk, in.cos, in.sin);             // [B, T, nh + kvh, hd]
  auto q = qk.narrow(2, 0, nh).transpose(1, 2);    // [B, nh, T, hd]
  auto k = qk.narrow(2, nh, kvh).transpose(1, 2);  // [B, kvh, T, hd]
  auto v = qkv.narrow(-1, (nh + kvh) * hd, kvh * hd).view({B, T, kvh, hd}).transpose(1, 2);
  at::Tensor out;
  if (cache != nullptr) {
    // Row (b, h, t) of k goes to the cache row in.write_rows[(b * kvh + h) * T + t]; k and v
    // are strided views of qkv, written without a contiguous copy.
    const auto rows = in.write_rows.view({B, kvh, T});
    cache->k[layer].view({-1, hd}).index_put_({at::indexing::TensorIndex(rows)}, k);
    cache->v[layer].view({-1, hd}).index_put_({at::indexing::TensorIndex(rows)}, v);
  }
  if (in.fresh) {
    out = torch_compat::causal_attention_gqa(q, k, v);
  } else {
    auto read = [&](const at::Tensor& layer_cache) {
      auto rows = in.consecutive ? layer_cache.narrow(0, in.first_slot, B)
                                 : layer_cache.index_select(0, in.read_slots);
      return rows.narrow(2, 0, in.kv_attn);  // [B, kvh, kv_attn, hd], a view when consecutive
    };
    // Grouped-query heads without repeating the keys: the rep query heads of key head g become
    // rep * T query rows of one head.
    const std::int64_t rep = nh / kvh;
    auto qf = q.reshape({B, kvh, rep * T, hd});
    out = torch_compat::scaled_dot_product_attention(qf, read(cache->k[layer]),
                                                     read(cache->v[layer]), in.mask,
                                                     /*causal=*/false)
              .reshape({B, nh, T, hd});
  }
  return at::linear(out.transpose(1, 2).reshape({B, T, nh * hd}), lw.o_w);
}

at::Tensor Transformer::hidden(const at::Tensor& tokens, KvCache* cache,
                               const std::vector<std::int64_t>& slots,
                               const std::vector<std::int64_t>& starts,
                               const std::vector<std::int64_t>& rope_lengths) const {
  const ModelConfig& c = config_;
  const StepInputs in =
      step_inputs(tokens.size(0), tokens.size(1), cache, slots, starts, rope_lengths);
  return run_layers(at::embedding(w_.embed, tokens), in, cache);
}

at::Tensor Transformer::run_layers(at::Tensor x, const StepInputs& in, KvCache* cache) const {
  const ModelConfig& c = config_;
  const std::int64_t I = c.intermediate_size;
  for (std::size_t l = 0; l < w_.layers.size(); ++l) {
    const LayerWeights& lw = w_.layers[l];
    x = x + attention(lw, l, rms_norm(x, lw.input_norm, c.rms_norm_eps), in, cache);
    auto h = rms_norm(x, lw.post_norm, c.rms_norm_eps);
    auto gate_up = at::linear(h, lw.gate_up_w, lw.gate_up_b);  // [B, T, 2 * inter]
    auto mlp = at::silu(gate_up.narrow(-1, 0, I)) * gate_up.narrow(-1, I, I);
    x = x + at::linear(mlp, lw.down_w, lw.down_b);
  }
  return rms_norm(x, w_.final_norm, c.rms_norm_eps);
}

at::Tensor Transformer::decode_slots(const at::Tensor& tokens, const at::Tensor& positions,
                                     std::int64_t kv_keys, KvCache* cache) const {
  const ModelConfig& c = config_;
  const std::int64_t B = tokens.size(0), kvh = c.num_key_value_heads, hd = c.head_dim;
  TORCH_CHECK(cache != nullptr && B <= cache->slots && kv_keys <= cache->max_seq,
              "decode_slots: rows must be cache slots, kv_keys within the cache");
  StepInputs in;
  in.B = B;
  in.T = 1;
  in.fresh = false;
  in.consecutive = true;
  in.first_slot = 0;
  in.kv_attn = kv_keys;
  // Row (b, h) writes cache row (b * kvh + h) * max_seq + positions[b], as step_inputs' rows.
  in.write_rows = (at::arange(B * kvh, positions.options()).view({B, kvh}) * cache->max_seq +
                   positions.view({B, 1}))
                      .reshape({-1});
  in.cos = cache->rope_cos.index_select(0, positions).view({B, 1, 1, hd});
  in.sin = cache->rope_sin.index_select(0, positions).view({B, 1, 1, hd});
  in.mask =
      causal_cache_mask(positions.view({B, 1}), kv_keys, c.num_attention_heads / kvh, dtype());
  auto h = run_layers(at::embedding(w_.embed, tokens.view({B, 1})), in, cache);
  return logits(h).view({B, -1});
}

at::Tensor Transformer::logits(const at::Tensor& hidden) const {
  return at::linear(hidden, w_.lm_head);
}

at::Tensor Transformer::forward(const at::Tensor& tokens, KvCache* cache,
                                const std::vector<std::int64_t>& slots,
                                const std::vector<std::int64_t>& starts, bool last_only,
                                const std::vector<std::int64_t>& rope_lengths) const {
  auto h = hidden(tokens, cache, slots, starts, rope_lengths);
  if (last_only) h = h.narrow(1, h.size(1) - 1, 1);
  return logits(h);
}

std::vector<std::pair<std::string, at::Tensor>> Transformer::parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  auto add = [&](std::string name, const at::Tensor& t) {
    if (t.defined()) out.emplace_back(std::move(name), t);
  };
  add("embed", w_.embed);
  for (std::size_t i = 0; i < w_.layers.size(); ++i) {
    const LayerWeights& l = w_.layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    add(p + "input_norm", l.input_norm);
    add(p + "qkv_w", l.qkv_w);
    add(p + "qkv_b", l.qkv_b);
    add(p + "q_norm", l.q_norm);
    add(p + "k_norm", l.k_norm);
    add(p + "o_w", l.o_w);
    add(p + "post_norm", l.post_norm);
    add(p + "gate_up_w", l.gate_up_w);
    add(p + "gate_up_b", l.gate_up_b);
    add(p + "down_w", l.down_w);
    add(p + "down_b", l.down_b);
  }
  add("final_norm", w_.final_norm);
  if (!config_.tie_word_embeddings) add("lm_head", w_.lm_head);
  return out;
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

// Stacks each layer's q/k/v and gate/up weights (and biases) into one tensor and makes the
// per-projection tensors views of it (see LayerWeights).
void stack_projections(TransformerWeights& w) {
  auto stack = [](std::initializer_list<at::Tensor*> parts, at::Tensor& stacked) {
    if (!(*parts.begin())->defined()) return;
    std::vector<at::Tensor> all;
    for (at::Tensor* p : parts) all.push_back(*p);
    stacked = at::cat(all, 0);
    std::int64_t row = 0;
    for (at::Tensor* p : parts) {
      const std::int64_t n = p->size(0);
      *p = stacked.narrow(0, row, n);
      row += n;
    }
  };
  for (LayerWeights& l : w.layers) {
    stack({&l.q_w, &l.k_w, &l.v_w}, l.qkv_w);
    stack({&l.q_b, &l.k_b, &l.v_b}, l.qkv_b);
    stack({&l.gate_w, &l.up_w}, l.gate_up_w);
    stack({&l.gate_b, &l.up_b}, l.gate_up_b);
  }
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
  stack_projections(w);
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
  stack_projections(w);
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
