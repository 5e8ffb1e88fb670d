// The network against a naive float64 reference (loops over heads, positions and rotary pairs),
// the KV-cache path against the full forward, RoPE scaling tables, load/save and bad weights.
#include "model/transformer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "model/model_test_util.h"
#include "model/safetensors.h"

namespace cuda_agent {
namespace {

using testing::sharp_dynamic_rope_llama;
using testing::TempDir;
using testing::tiny_config;

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Naive reference: float64, per-token rotary pairs, explicit causal loops.
at::Tensor naive_logits(const Transformer& m, const std::vector<std::int64_t>& ids) {
  const ModelConfig& c = m.config();
  const auto& w = m.weights();
  auto d = [](const at::Tensor& t) { return t.defined() ? t.to(at::kDouble) : t; };
  const std::int64_t T = ids.size(), nh = c.num_attention_heads, kvh = c.num_key_value_heads,
                     hd = c.head_dim, rep = nh / kvh;
  auto norm = [&](const at::Tensor& x, const at::Tensor& wt) {
    return x / at::sqrt(x.pow(2).mean(-1, true) + c.rms_norm_eps) * d(wt);
  };
  auto lin = [&](const at::Tensor& x, const at::Tensor& wt, const at::Tensor& b) {
    auto y = at::matmul(x, d(wt).t());
    return b.defined() ? y + d(b) : y;
  };
  auto inv = m.rope_inv_freq(T).first.to(at::kDouble);
  auto rope = [&](at::Tensor x /*[T, heads, hd]*/) {
    auto out = x.clone();
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t i = 0; i < hd / 2; ++i) {
        const double a = double(t) * inv[i].item<double>();
        auto x1 = x.select(0, t).select(-1, i), x2 = x.select(0, t).select(-1, i + hd / 2);
        out.select(0, t).select(-1, i).copy_(x1 * std::cos(a) - x2 * std::sin(a));
        out.select(0, t).select(-1, i + hd / 2).copy_(x2 * std::cos(a) + x1 * std::sin(a));
      }
    }
    return out;
  };
  auto x = d(w.embed).index_select(0, at::tensor(ids, at::kLong));  // [T, H]
  for (const auto& l : w.layers) {
    auto h = norm(x, l.input_norm);
    auto q = lin(h, l.q_w, l.q_b).view({T, nh, hd});
    auto k = lin(h, l.k_w, l.k_b).view({T, kvh, hd});
    auto v = lin(h, l.v_w, l.v_b).view({T, kvh, hd});
    if (c.qk_norm) {
      q = norm(q, l.q_norm);
      k = norm(k, l.k_norm);
    }
    q = rope(q);
    k = rope(k);
    auto out = at::zeros({T, nh, hd}, at::kDouble);
    for (std::int64_t head = 0; head < nh; ++head) {
      for (std::int64_t t = 0; t < T; ++t) {
        auto qv = q.select(0, t).select(0, head);
        auto keys = k.narrow(0, 0, t + 1).select(1, head / rep);  // [t+1, hd]
        auto scores = at::matmul(keys, qv) / std::sqrt(double(hd));
        auto p = at::softmax(scores, 0);
        out.select(0, t).select(0, head).copy_(
            at::matmul(p, v.narrow(0, 0, t + 1).select(1, head / rep)));
      }
    }
    x = x + lin(out.view({T, nh * hd}), l.o_w, at::Tensor());
    h = norm(x, l.post_norm);
    auto g = lin(h, l.gate_w, l.gate_b);
    x = x + lin(g * at::sigmoid(g) * lin(h, l.up_w, l.up_b), l.down_w, l.down_b);
  }
  return at::matmul(norm(x, w.final_norm), d(w.lm_head).t());
}

std::vector<std::int64_t> some_ids(std::int64_t n, std::int64_t vocab, std::int64_t salt = 0) {
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < n; ++i) ids.push_back((i * 7 + 3 + salt * 13) % vocab);
  return ids;
}

class Family : public ::testing::TestWithParam<std::string> {};

TEST_P(Family, ForwardMatchesNaiveFloat64Reference) {
  auto m = Transformer::random(tiny_config(GetParam()), 11);
  auto ids = some_ids(9, m.config().vocab_size);
  auto got = m.forward(at::tensor(ids, at::kLong).view({1, -1})).squeeze(0);
  auto want = naive_logits(m, ids);
  EXPECT_LT(max_diff(got, want), 1e-5) << GetParam();
}

TEST_P(Family, KvCacheDecodingEqualsFullForward) {
  auto m = Transformer::random(tiny_config(GetParam()), 12);
  const std::int64_t T = 14, V = m.config().vocab_size;
  auto ids_a = some_ids(T, V, 1), ids_b = some_ids(T, V, 2);
  auto full_a = m.forward(at::tensor(ids_a, at::kLong).view({1, T})).squeeze(0);
  auto full_b = m.forward(at::tensor(ids_b, at::kLong).view({1, T})).squeeze(0);
  // Two sequences in non-adjacent slots 3 and 1, at different lengths: a prefills 5 tokens,
  // b prefills 3, then both decode one token per call in one batch.
  KvCache cache = m.make_cache(4, 32);
  auto ta = at::tensor(ids_a, at::kLong), tb = at::tensor(ids_b, at::kLong);
  auto la = m.forward(ta.narrow(0, 0, 5).view({1, 5}), &cache, {3}, {0}).squeeze(0);
  auto lb = m.forward(tb.narrow(0, 0, 3).view({1, 3}), &cache, {1}, {0}).squeeze(0);
  EXPECT_LT(max_diff(la, full_a.narrow(0, 0, 5)), 1e-5);
  EXPECT_LT(max_diff(lb, full_b.narrow(0, 0, 3)), 1e-5);
  for (std::int64_t step = 0; step < 9; ++step) {
    const std::int64_t pa = 5 + step, pb = 3 + step;
    auto tokens = at::stack({ta.narrow(0, pa, 1), tb.narrow(0, pb, 1)});  // [2, 1]
    auto l = m.forward(tokens, &cache, {3, 1}, {pa, pb});
    EXPECT_LT(max_diff(l[0][0], full_a[pa]), 1e-5) << "step " << step;
    EXPECT_LT(max_diff(l[1][0], full_b[pb]), 1e-5) << "step " << step;
  }
}

// The graph body (decode_slots: rows are slots 0 .. B-1, inputs on the device) is the cached
// forward's arithmetic: the same logits and cache writes; a slot that is not decoded (a padding
// row at max_seq - 1) leaves the running slots' rows alone.
TEST_P(Family, DecodeSlotsEqualsTheCachedForward) {
  auto m = Transformer::random(tiny_config(GetParam()), 13);
  const std::int64_t V = m.config().vocab_size;
  auto ids = at::tensor(some_ids(20, V, 3), at::kLong);
  KvCache eager = m.make_cache(3, 32), slots = m.make_cache(3, 32);
  for (KvCache* c : {&eager, &slots}) {
    m.forward(ids.narrow(0, 0, 6).view({1, 6}), c, {0}, {0});
    m.forward(ids.narrow(0, 6, 9).view({1, 9}), c, {2}, {0});
  }
  for (std::int64_t step = 0; step < 3; ++step) {
    auto tokens = at::stack({ids.narrow(0, 15 + step, 1), ids.narrow(0, 16 - step, 1)});
    auto want = m.forward(tokens, &eager, {0, 2}, {6 + step, 9 + step}, true).view({2, V});
    // Row 1 pads: token 0 at the last position of slot 1.
    auto all_tokens = at::stack({tokens[0][0], at::zeros({}, at::kLong), tokens[1][0]});
    auto got = m.decode_slots(
        all_tokens, at::tensor(std::vector<std::int64_t>{6 + step, 31, 9 + step}, at::kLong),
        /*kv_keys=*/32, &slots);
    EXPECT_LT(max_diff(got[0], want[0]), 1e-5) << "step " << step;
    EXPECT_LT(max_diff(got[2], want[1]), 1e-5) << "step " << step;
  }
  for (std::size_t l = 0; l < eager.k.size(); ++l) {
    for (std::int64_t s : {0, 2}) {
      EXPECT_LT(max_diff(slots.k[l][s].narrow(1, 0, 12), eager.k[l][s].narrow(1, 0, 12)), 1e-5);
      EXPECT_LT(max_diff(slots.v[l][s].narrow(1, 0, 12), eager.v[l][s].narrow(1, 0, 12)), 1e-5);
    }
  }
}

// q/k/v and gate/up are stored stacked; the per-projection tensors are views of those rows.
TEST(TransformerWeightsLayout, ProjectionsAreViewsOfTheStackedWeights) {
  auto m = Transformer::random(tiny_config("qwen2"), 14);
  const LayerWeights& l = m.weights().layers[1];
  const ModelConfig& c = m.config();
  const std::int64_t q = c.num_attention_heads * c.head_dim,
                     kv = c.num_key_value_heads * c.head_dim;
  EXPECT_EQ(l.qkv_w.size(0), q + 2 * kv);
  EXPECT_EQ(max_diff(l.qkv_w.narrow(0, q + kv, kv), l.v_w), 0.0);
  EXPECT_EQ(max_diff(l.qkv_b.narrow(0, q, kv), l.k_b), 0.0);
  EXPECT_EQ(l.v_w.data_ptr(), l.qkv_w.narrow(0, q + kv, kv).data_ptr());
  EXPECT_EQ(l.up_w.data_ptr(),
            l.gate_up_w.narrow(0, c.intermediate_size, c.intermediate_size).data_ptr());
}

INSTANTIATE_TEST_SUITE_P(Model, Family, ::testing::Values("qwen2", "llama", "qwen3"));

// Runs where libtorch sees a GPU (the GPU node's build); skips elsewhere.
TEST(TransformerCuda, MatchesCpuAndItsOwnKvCache) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU visible to libtorch";
  for (const char* type : {"qwen2", "llama", "qwen3"}) {
    auto cpu = Transformer::random(tiny_config(type), 17);
    auto gpu = Transformer::random(tiny_config(type), 17, {.device = at::kCUDA});
    const std::int64_t T = 12;
    auto ids = at::tensor(some_ids(T, 50, 3), at::kLong);
    auto want = cpu.forward(ids.view({1, T})).squeeze(0);
    auto full = gpu.forward(ids.to(at::kCUDA).view({1, T})).squeeze(0);
    EXPECT_LT(max_diff(full.cpu(), want), 1e-4) << type;
    KvCache cache = gpu.make_cache(2, 16);
    auto ids_gpu = ids.to(at::kCUDA);
    auto pre = gpu.forward(ids_gpu.narrow(0, 0, 4).view({1, 4}), &cache, {1}, {0}).squeeze(0);
    EXPECT_LT(max_diff(pre.cpu(), want.narrow(0, 0, 4)), 1e-4) << type;
    for (std::int64_t p = 4; p < T; ++p) {
      auto l = gpu.forward(ids_gpu.narrow(0, p, 1).view({1, 1}), &cache, {1}, {p});
      EXPECT_LT(max_diff(l[0][0].cpu(), want[p]), 1e-4) << type << " position " << p;
    }
  }
}

TEST(Rope, ScalingTablesFollowTheirFormulas) {
  ModelConfig c = tiny_config("llama");
  c.head_dim = 16;
  c.hidden_size = 64;
  auto inv_default = Transformer::random(c, 1).rope_inv_freq(8).first;
  EXPECT_NEAR(inv_default[1].item<double>(), std::pow(10000.0, -2.0 / 16), 1e-7);
  c.rope_scaling = {.type = RopeType::kLinear, .factor = 4};
  auto lin = Transformer::random(c, 1).rope_inv_freq(8);
  EXPECT_LT(max_diff(lin.first, inv_default / 4), 1e-9);
  EXPECT_EQ(lin.second, 1.0);
  // llama3: high frequencies (short wavelengths) are kept, low ones divided by the factor.
  c.rope_scaling = {.type = RopeType::kLlama3,
                    .factor = 8,
                    .original_max_position_embeddings = 64,
                    .low_freq_factor = 1,
                    .high_freq_factor = 4};
  auto l3 = Transformer::random(c, 1).rope_inv_freq(8).first;
  EXPECT_NEAR(l3[0].item<double>(), inv_default[0].item<double>(), 1e-9);
  EXPECT_NEAR(l3[7].item<double>(), inv_default[7].item<double>() / 8, 1e-9);
  // dynamic: no change inside max_position_embeddings, a larger base beyond it.
  c.rope_scaling = {.type = RopeType::kDynamic, .factor = 2};
  auto dyn = Transformer::random(c, 1);
  EXPECT_LT(max_diff(dyn.rope_inv_freq(100).first, inv_default), 1e-9);
  EXPECT_LT(dyn.rope_inv_freq(1000).first[7].item<double>(), inv_default[7].item<double>());
  // yarn: attention factor 0.1 ln(s) + 1 by default.
  c.rope_scaling = {.type = RopeType::kYarn, .factor = 4, .original_max_position_embeddings = 64};
  EXPECT_NEAR(Transformer::random(c, 1).rope_inv_freq(8).second, 0.1 * std::log(4.0) + 1, 1e-12);
}

// Dynamic NTK through the cache, as transformers' generate: each row of a batched call rotates
// its tokens for its own length (not the batch's longest), one call over a whole sequence equals
// the full forward, and a chunked prefill told the prompt length (rope_lengths) writes the keys
// that one call writes.
TEST(Rope, DynamicNtkCachedRowsUseTheirOwnLength) {
  auto m = sharp_dynamic_rope_llama(8);
  auto a = at::tensor(some_ids(19, 50, 1), at::kLong),
       b = at::tensor(some_ids(7, 50, 2), at::kLong);
  auto decode_alone = [&](const at::Tensor& ids, std::int64_t n,
                          std::vector<std::int64_t> rope_lengths = {}) {
    KvCache cache = m.make_cache(1, 32);
    m.forward(ids.narrow(0, 0, n).view({1, n}), &cache, {0}, {0});
    return m.forward(ids.narrow(0, n, 1).view({1, 1}), &cache, {0}, {n}, false, rope_lengths)
        .reshape({-1});
  };
  // The case is sensitive: b's token rotated for a's length gives other logits.
  EXPECT_GT(max_diff(decode_alone(b, 6, {19}), decode_alone(b, 6)), 1e-3);
  KvCache cache = m.make_cache(2, 32);
  auto pre_a = m.forward(a.narrow(0, 0, 18).view({1, 18}), &cache, {0}, {0});
  EXPECT_LT(max_diff(pre_a, m.forward(a.narrow(0, 0, 18).view({1, 18}))), 1e-5);
  m.forward(b.narrow(0, 0, 6).view({1, 6}), &cache, {1}, {0});
  auto both =
      m.forward(at::stack({a.narrow(0, 18, 1), b.narrow(0, 6, 1)}), &cache, {0, 1}, {18, 6});
  EXPECT_LT(max_diff(both[0][0], decode_alone(a, 18)), 1e-5);
  EXPECT_LT(max_diff(both[1][0], decode_alone(b, 6)), 1e-5);
  // Chunks of 5 told the prompt is 18 long write the keys of the one-call prefill (and decode
  // the same); without it the first chunks are rotated for their own shorter lengths.
  KvCache one = m.make_cache(1, 32);
  m.forward(a.narrow(0, 0, 18).view({1, 18}), &one, {0}, {0});
  auto chunked = [&](std::vector<std::int64_t> rope_lengths) {
    KvCache c2 = m.make_cache(1, 32);
    for (std::int64_t s = 0; s < 18; s += 5) {
      const std::int64_t len = std::min<std::int64_t>(5, 18 - s);
      m.forward(a.narrow(0, s, len).view({1, len}), &c2, {0}, {s}, false, rope_lengths);
    }
    auto logits = m.forward(a.narrow(0, 18, 1).view({1, 1}), &c2, {0}, {18}).reshape({-1});
    return std::make_pair(max_diff(c2.k[0].narrow(2, 0, 18), one.k[0].narrow(2, 0, 18)),
                          max_diff(logits, decode_alone(a, 18)));
  };
  auto [hinted_keys, hinted_logits] = chunked({18});
  EXPECT_LT(hinted_keys, 1e-5);
  EXPECT_LT(hinted_logits, 1e-5);
  EXPECT_GT(chunked({}).first, 1e-3);
}

TEST(TransformerFiles, SaveLoadRoundTripAndBf16) {
  TempDir d;
  auto m = Transformer::random(tiny_config("qwen3"), 5);
  ASSERT_TRUE(m.save(d.str()));
  auto loaded = Transformer::load(d.str());
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  auto ids = at::tensor(some_ids(6, 50), at::kLong).view({1, 6});
  EXPECT_EQ(max_diff(m.forward(ids), loaded->forward(ids)), 0.0);
  auto bf = Transformer::load(d.str(), {.dtype = at::kBFloat16});
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->dtype(), at::kBFloat16);
  EXPECT_LT(max_diff(m.forward(ids), bf->forward(ids)), 0.1);
}

TEST(TransformerFiles, MissingAndMisshapenWeightsAreNamed) {
  TempDir d;
  auto m = Transformer::random(tiny_config("llama"), 5);
  ASSERT_TRUE(m.save(d.str()));
  // Rewrite the file without one tensor and with another one reshaped.
  auto set = SafetensorsSet::open(d.str());
  ASSERT_TRUE(set);
  std::vector<SafetensorsWriteTensor> out;
  for (const auto& name : set->names()) {
    const auto* t = set->find(name);
    if (name == "model.layers.1.mlp.up_proj.weight") continue;
    auto shape = t->shape;
    if (name == "model.norm.weight") shape = {2, shape[0] / 2};
    out.push_back(
        {.name = name, .dtype = t->dtype, .shape = shape, .data = t->data, .bytes = t->bytes});
  }
  TempDir d2;
  ASSERT_TRUE(write_safetensors(d2.str("model.safetensors"), out));
  std::filesystem::copy_file(d.str("config.json"), d2.str("config.json"));
  auto r = Transformer::load(d2.str());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "safetensors.missing_tensor");
  EXPECT_NE(r.error().message.find("model.layers.1.mlp.up_proj.weight"), std::string::npos);
  out.erase(
      std::remove_if(out.begin(), out.end(), [](auto& t) { return t.name != "model.norm.weight"; }),
      out.end());
  for (const auto& name : set->names()) {
    const auto* t = set->find(name);
    if (name != "model.norm.weight") {
      out.push_back(
          {.name = name, .dtype = t->dtype, .shape = t->shape, .data = t->data, .bytes = t->bytes});
    }
  }
  ASSERT_TRUE(write_safetensors(d2.str("model.safetensors"), out));
  r = Transformer::load(d2.str());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "model.bad_weight_shape");
  EXPECT_NE(r.error().message.find(
                "tensor 'model.norm.weight' has shape [2, 16], config.json implies [32]"),
            std::string::npos)
      << r.error().message;
}

TEST(ValueHead, SavesLoadsAndScoresEveryPosition) {
  TempDir d;
  auto m = Transformer::random(tiny_config("qwen2"), 3);
  auto head = ValueHead::zeros(32, at::TensorOptions().dtype(at::kFloat));
  head.weight.normal_();
  head.bias.fill_(0.5);
  ASSERT_TRUE(head.save(d.str("value_head.safetensors")));
  auto loaded =
      ValueHead::load(d.str("value_head.safetensors"), at::TensorOptions().dtype(at::kFloat));
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  auto h = m.hidden(at::tensor(some_ids(5, 50), at::kLong).view({1, 5}), nullptr, {}, {});
  auto v = loaded->forward(h);
  EXPECT_EQ(v.sizes(), (std::vector<std::int64_t>{1, 5}));
  EXPECT_LT(max_diff(v, at::matmul(h, head.weight.t()).squeeze(-1) + 0.5), 1e-6);
}

}  // namespace
}  // namespace cuda_agent
