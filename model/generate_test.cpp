// The generation engine: greedy equals step-by-step argmax of the full forward, logprobs are the
// full forward's, seeded sampling is reproducible and independent of batch company and prefill
// chunking, requests join and leave, refusals, weight swaps.
#include "model/generate.h"

#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "model/model_test_util.h"

namespace cuda_agent {
namespace {

using testing::sharp_dynamic_rope_llama;
using testing::tiny_config;

std::shared_ptr<const Transformer> tiny(const std::string& type = "qwen2",
                                        std::uint64_t seed = 21) {
  return std::make_shared<const Transformer>(Transformer::random(tiny_config(type), seed));
}

std::vector<std::int64_t> prompt(std::int64_t n, std::int64_t salt) {
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < n; ++i) ids.push_back((i * 11 + salt * 5 + 1) % 50);
  return ids;
}

std::vector<GenerationResult> run_all(std::shared_ptr<const Transformer> m,
                                      std::vector<GenerationRequest> requests,
                                      EngineOptions options = {.max_batch = 4, .max_seq_len = 64}) {
  auto e = GenerationEngine::create(std::move(m), 0, options);
  EXPECT_TRUE(e) << e.error().to_string();
  for (auto& r : requests) EXPECT_TRUE(e->submit(r));
  auto out = e->run();
  EXPECT_TRUE(out) << out.error().to_string();
  std::sort(out->begin(), out->end(), [](auto& a, auto& b) { return a.id < b.id; });
  return *out;
}

// Buckets of the decode graphs: the smallest listed size that holds the step, capped by the
// cache. (The graphs themselves need a GPU: decode_graphs_test.cpp.)
TEST(DecodeGraphBuckets, SmallestListedSizeThatHolds) {
  EXPECT_EQ(DecodeGraphs::bucket_rows(1, 64), 1);
  EXPECT_EQ(DecodeGraphs::bucket_rows(3, 64), 4);
  EXPECT_EQ(DecodeGraphs::bucket_rows(9, 64), 16);
  EXPECT_EQ(DecodeGraphs::bucket_rows(16, 64), 16);
  EXPECT_EQ(DecodeGraphs::bucket_rows(17, 64), 24);
  EXPECT_EQ(DecodeGraphs::bucket_rows(65, 256), 96);
  EXPECT_EQ(DecodeGraphs::bucket_rows(5, 6), 6);
  EXPECT_EQ(DecodeGraphs::bucket_keys(1, 4096), 256);
  EXPECT_EQ(DecodeGraphs::bucket_keys(257, 4096), 512);
  EXPECT_EQ(DecodeGraphs::bucket_keys(257, 300), 300);
}

// Without CUDA (or with the option off) no graph is made and every step runs eagerly.
TEST(DecodeGraphBuckets, CpuEnginesRunEagerly) {
  auto e = GenerationEngine::create(tiny(), 0, {.max_batch = 2, .max_seq_len = 32});
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->submit({.id = 1, .prompt = prompt(4, 1), .params = {.max_new_tokens = 3}}));
  ASSERT_TRUE(e->run());
  EXPECT_EQ(e->cuda_graphs_captured(), 0u);
  EXPECT_EQ(e->phase_times().graph_steps, 0);
  DecodeGraphs graphs(2, 32);
  KvCache cache = tiny()->make_cache(2, 32);
  EXPECT_FALSE(graphs.decode(*tiny(), &cache, {0}, {1}, {3}).defined());
}

TEST(Generate, GreedyEqualsArgmaxOfFullForwardWithItsLogprobs) {
  for (const char* type : {"qwen2", "llama", "qwen3"}) {
    auto m = tiny(type);
    auto p = prompt(7, 1);
    auto out =
        run_all(m, {{.id = 1, .prompt = p, .params = {.temperature = 0, .max_new_tokens = 10}}});
    ASSERT_EQ(out.size(), 1u);
    std::vector<std::int64_t> seq = p;
    for (std::size_t i = 0; i < 10; ++i) {
      auto logits = m->forward(at::tensor(seq, at::kLong).view({1, -1}))[0][-1];
      auto lp = at::log_softmax(logits.to(at::kDouble), -1);
      const std::int64_t want = logits.argmax().item<std::int64_t>();
      ASSERT_EQ(out[0].tokens[i], want) << type << " token " << i;
      EXPECT_NEAR(out[0].logprobs[i], lp[want].item<double>(), 1e-4);
      seq.push_back(want);
    }
    EXPECT_EQ(out[0].finish, FinishReason::kMaxNewTokens);
  }
}

TEST(Generate, GreedyIsDeterministicAndIndependentOfChunkingAndBatching) {
  auto m = tiny();
  std::vector<GenerationRequest> reqs;
  for (std::uint64_t i = 0; i < 6; ++i) {
    reqs.push_back({.id = i,
                    .prompt = prompt(3 + 4 * i, i),
                    .params = {.temperature = 0, .max_new_tokens = 8}});
  }
  auto a = run_all(m, reqs, {.max_batch = 4, .max_seq_len = 64});
  auto b = run_all(m, reqs, {.max_batch = 2, .max_seq_len = 64, .prefill_chunk_tokens = 5});
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    auto solo =
        run_all(m, {reqs[i]}, {.max_batch = 1, .max_seq_len = 64, .prefill_chunk_tokens = 3});
    EXPECT_EQ(a[i].tokens, b[i].tokens) << i;
    EXPECT_EQ(a[i].tokens, solo[0].tokens) << i;
  }
}

TEST(Generate, SeededSamplingIsReproducibleWhateverTheBatch) {
  auto m = tiny("llama");
  SamplingParams p{.temperature = 1.3, .top_p = 0.9, .top_k = 20, .seed = 42, .max_new_tokens = 12};
  std::vector<GenerationRequest> reqs;
  for (std::uint64_t i = 0; i < 5; ++i) {
    SamplingParams pi = p;
    pi.seed = 42 + i;
    reqs.push_back({.id = i, .prompt = prompt(4 + i, i), .params = pi});
  }
  auto a = run_all(m, reqs);
  auto b = run_all(m, reqs, {.max_batch = 3, .max_seq_len = 64});
  auto solo = run_all(m, {reqs[2]}, {.max_batch = 1, .max_seq_len = 64});
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens);
    // Equal up to rounding: an optimised BLAS (OpenBLAS) blocks a matmul by its batch shape, so
    // the last bits of a row's logits may depend on what it was batched with.
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size());
    for (std::size_t k = 0; k < a[i].logprobs.size(); ++k)
      EXPECT_NEAR(a[i].logprobs[k], b[i].logprobs[k], 1e-5) << i << " " << k;
  }
  EXPECT_EQ(a[2].tokens, solo[0].tokens);
  reqs[0].params.seed = 7;
  auto c = run_all(m, {reqs[0]});
  EXPECT_NE(c[0].tokens, a[0].tokens) << "another seed gave the same 12 tokens";
}

TEST(Generate, TopKOneIsGreedy) {
  auto m = tiny("qwen3");
  auto g = run_all(
      m, {{.id = 1, .prompt = prompt(5, 3), .params = {.temperature = 0, .max_new_tokens = 8}}});
  auto k =
      run_all(m, {{.id = 1,
                   .prompt = prompt(5, 3),
                   .params = {.temperature = 0.7, .top_k = 1, .seed = 9, .max_new_tokens = 8}}});
  EXPECT_EQ(g[0].tokens, k[0].tokens);
}

TEST(Sampler, TopPKeepsTheNucleusAndLogprobIsBeforeTruncation) {
  // Probabilities 0.5, 0.3, 0.2: top_p 0.6 keeps the first two only.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  TokenSampler s(1);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 2000; ++i) {
    auto [tok, lp] = s.sample(logits.data(), 3, {.temperature = 1, .top_p = 0.6});
    ++counts[tok];
    EXPECT_NEAR(lp, logits[tok], 1e-5);
  }
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[0] / 2000.0, 0.5 / 0.8, 0.05);
}

TEST(Sampler, NucleusLargerThanTheFirstSortedBlock) {
  // 200 equally likely tokens hold 97.4% of the mass: top_p 0.9 keeps ids 0..184 (ties by id),
  // more than the 64 the sampler sorts first.
  std::vector<float> logits(1000, 0.f);
  for (int i = 0; i < 200; ++i) logits[i] = 5.f;
  TokenSampler s(3);
  std::int64_t highest = 0;
  for (int i = 0; i < 500; ++i) {
    auto [tok, lp] = s.sample(logits.data(), 1000, {.temperature = 1, .top_p = 0.9});
    ASSERT_LE(tok, 184);
    highest = std::max(highest, tok);
  }
  EXPECT_GE(highest, 64);
}

TEST(Sampler, RowsOnTheDeviceMatchTheHostReferenceWhateverTheBatch) {
  // Every row of one sample_rows call against TokenSampler::sample on the same uniform draws.
  const std::int64_t V = 1000;
  auto logits = 3 * at::randn({5, V}, at::detail::createCPUGenerator(5));
  logits[4].narrow(0, 0, 40).fill_(2.5);  // ties: lower ids first
  std::vector<SamplingParams> params = {{.temperature = 0},
                                        {.temperature = 1},
                                        {.temperature = 0.7, .top_k = 20},
                                        {.temperature = 1.3, .top_p = 0.8, .top_k = 100},
                                        {.temperature = 1, .top_p = 0.5}};
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    std::vector<const SamplingParams*> ps;
    std::vector<double> uniforms;
    std::vector<std::pair<std::int64_t, float>> want;
    for (std::int64_t b = 0; b < 5; ++b) {
      TokenSampler ref(seed * 10 + b), draws(seed * 10 + b);
      auto row = logits[b].contiguous();
      want.push_back(ref.sample(row.data_ptr<float>(), V, params[b]));
      ps.push_back(&params[b]);
      uniforms.push_back(params[b].temperature > 0 ? draws.uniform() : 0.0);
    }
    auto got = sample_rows(logits, ps, uniforms);
    auto alone = sample_rows(logits.narrow(0, 3, 1), {ps[3]}, {uniforms[3]});
    for (std::int64_t b = 0; b < 5; ++b) {
      EXPECT_EQ(got[b].token, want[b].first) << "seed " << seed << " row " << b;
      EXPECT_NEAR(got[b].logprob, want[b].second, 1e-4) << "seed " << seed << " row " << b;
    }
    EXPECT_EQ(alone[0].token, got[3].token);
    EXPECT_EQ(alone[0].logprob, got[3].logprob);
  }
}

// transformers' generate with dynamic NTK RoPE: the prompt in one call rotated for its length,
// then each new token for the length it makes; cached keys keep their rotation. The engine, with
// prompts crossing max_position_embeddings, prefilled in chunks and decoded in one batch, gives
// the same tokens as that computation done one request at a time through the model.
TEST(Generate, DynamicRopeFollowsTransformersGenerateWhateverTheChunksAndBatch) {
  auto m = std::make_shared<const Transformer>(sharp_dynamic_rope_llama(31));
  std::vector<GenerationRequest> reqs;
  for (std::uint64_t i = 0; i < 5; ++i) {
    reqs.push_back({.id = i,
                    .prompt = prompt(4 + 4 * i, i),
                    .params = {.temperature = 0, .max_new_tokens = 10}});
  }
  auto got = run_all(m, reqs, {.max_batch = 5, .max_seq_len = 64, .prefill_chunk_tokens = 5});
  ASSERT_EQ(got.size(), reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto& p = reqs[i].prompt;
    const std::int64_t P = std::int64_t(p.size());
    KvCache cache = m->make_cache(1, 64);
    auto logits = m->forward(at::tensor(p, at::kLong).view({1, P}), &cache, {0}, {0}, true);
    std::vector<std::int64_t> want;
    for (std::int64_t j = 0; j < 10; ++j) {
      want.push_back(logits.reshape({-1}).argmax().item<std::int64_t>());
      const double lp =
          at::log_softmax(logits.reshape({-1}).to(at::kDouble), -1)[want.back()].item<double>();
      if (j < std::int64_t(got[i].logprobs.size()))
        EXPECT_NEAR(got[i].logprobs[j], lp, 1e-5) << "request " << i << " token " << j;
      logits =
          m->forward(at::tensor({want.back()}, at::kLong).view({1, 1}), &cache, {0}, {P + j}, true);
    }
    EXPECT_EQ(got[i].tokens, want) << "request " << i << " (prompt " << P << ")";
  }
}

TEST(Generate, StopTokenEndsARequestAndFreesItsSlot) {
  auto m = tiny();
  auto p = prompt(6, 2);
  auto free_run =
      run_all(m, {{.id = 1, .prompt = p, .params = {.temperature = 0, .max_new_tokens = 6}}});
  const std::int64_t stop = free_run[0].tokens[2];
  auto e = GenerationEngine::create(m, 0, {.max_batch = 1, .max_seq_len = 32});
  ASSERT_TRUE(e);
  ASSERT_TRUE(
      e->submit({.id = 1,
                 .prompt = p,
                 .params = {.temperature = 0, .max_new_tokens = 6, .stop_tokens = {stop}}}));
  ASSERT_TRUE(e->submit({.id = 2, .prompt = p, .params = {.temperature = 0, .max_new_tokens = 2}}));
  EXPECT_EQ(e->waiting(), 2u);
  auto out = e->run();
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].id, 1u);
  EXPECT_EQ((*out)[0].finish, FinishReason::kStopToken);
  EXPECT_EQ((*out)[0].tokens.size(),
            static_cast<std::size_t>(
                std::find(free_run[0].tokens.begin(), free_run[0].tokens.end(), stop) -
                free_run[0].tokens.begin() + 1));
  EXPECT_EQ((*out)[1].tokens.size(), 2u);
}

TEST(Generate, StopStringEndsARequestThroughTheDetokenizer) {
  auto m = tiny();
  auto p = prompt(5, 4);
  auto free_run =
      run_all(m, {{.id = 1, .prompt = p, .params = {.temperature = 0, .max_new_tokens = 8}}});
  // Each id reads as "<id>," so a stop string can straddle two tokens.
  auto detok = [](std::span<const std::int64_t> ids) {
    std::string s;
    for (auto id : ids) s += std::to_string(id) + ",";
    return s;
  };
  const auto& t = free_run[0].tokens;
  const std::string stop = "," + std::to_string(t[3]) + ",";  // end of token 2, all of token 3
  auto e = GenerationEngine::create(m, 0, {.max_batch = 1, .max_seq_len = 32});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->submit({.id = 1,
                       .prompt = p,
                       .params = {.temperature = 0, .max_new_tokens = 8, .stop_strings = {stop}}})
                .error()
                .code,
            "model.bad_sampling");  // no detokenizer yet
  e->set_detokenizer(detok);
  ASSERT_TRUE(
      e->submit({.id = 1,
                 .prompt = p,
                 .params = {.temperature = 0, .max_new_tokens = 8, .stop_strings = {stop}}}));
  auto out = e->run();
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].finish, FinishReason::kStopString);
  const std::string full = detok(t);
  const std::size_t end = full.find(stop) + stop.size();  // first completion in the text
  std::size_t want = 0;
  while (detok(std::span<const std::int64_t>(t.data(), want)).size() < end) ++want;
  EXPECT_EQ((*out)[0].tokens.size(), want);
}

TEST(Generate, RequestsThatCannotFitAreRefusedClearly) {
  auto m = tiny();
  auto e = GenerationEngine::create(m, 0, {.max_batch = 2, .max_seq_len = 16});
  ASSERT_TRUE(e);
  Status s = e->submit({.id = 1, .prompt = prompt(10, 0), .params = {.max_new_tokens = 7}});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "model.request_too_long");
  EXPECT_NE(s.error().message.find("= 17 tokens exceeds max_seq_len 16"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(e->submit({.id = 2, .prompt = {}, .params = {}}).error().code, "model.empty_prompt");
  EXPECT_EQ(e->submit({.id = 3, .prompt = {99}, .params = {.max_new_tokens = 1}}).error().code,
            "model.bad_token");
  ASSERT_TRUE(e->submit({.id = 4, .prompt = {1}, .params = {.max_new_tokens = 1}}));
  EXPECT_EQ(e->submit({.id = 4, .prompt = {1}, .params = {.max_new_tokens = 1}}).error().code,
            "model.duplicate_request");
  // A KV budget smaller than one slot is refused at create; a larger one bounds the slots.
  const std::int64_t per_slot = m->config().kv_bytes_per_token(4) * 16;
  auto small = GenerationEngine::create(
      m, 0, {.max_batch = 4, .max_seq_len = 16, .kv_cache_bytes = per_slot - 1});
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().code, "model.kv_budget");
  auto two = GenerationEngine::create(
      m, 0, {.max_batch = 4, .max_seq_len = 16, .kv_cache_bytes = 2 * per_slot + 5});
  ASSERT_TRUE(two);
  EXPECT_EQ(two->slots(), 2);
  EXPECT_EQ(two->kv_cache_bytes(), 2 * per_slot);
}

TEST(Generate, WeightSwapBetweenStepsIsRecordedPerRequest) {
  auto m1 = tiny("qwen2", 1), m2 = tiny("qwen2", 2);
  auto e = GenerationEngine::create(m1, 5, {.max_batch = 2, .max_seq_len = 32});
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->submit(
      {.id = 1, .prompt = prompt(4, 1), .params = {.temperature = 0, .max_new_tokens = 4}}));
  ASSERT_TRUE(e->step());  // prefill: first token under version 5
  ASSERT_TRUE(e->swap_weights(m2, 6));
  EXPECT_FALSE(e->swap_weights(tiny("llama"), 7));  // another architecture
  auto out = e->run();
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].first_policy_version, 5);
  EXPECT_EQ((*out)[0].last_policy_version, 6);
}

}  // namespace
}  // namespace cuda_agent
