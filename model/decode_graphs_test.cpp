// CUDA graphs of the decode step against the eager step (model/decode_graphs.h): the same greedy
// (and seeded sampled) tokens and logprobs within rounding, through batches that shrink, leave
// holes below running slots and refill, and across a weight swap that must drop the captured
// graphs. Needs a GPU and a build against CUDA libtorch; skips with the reason otherwise.
#include "model/decode_graphs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/generate.h"

namespace cuda_agent {
namespace {

#define SKIP_WITHOUT_CUDA_GRAPHS()                                                        \
  do {                                                                                    \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU visible to libtorch";       \
    if (!decode_graphs_compiled()) GTEST_SKIP() << "built against libtorch without CUDA"; \
  } while (0)

std::shared_ptr<const Transformer> model(const std::string& type, at::ScalarType dtype,
                                         std::uint64_t seed) {
  ModelConfig c = tiny_model_config(type, /*vocab_size=*/512, /*head_dim=*/64);
  return std::make_shared<const Transformer>(
      Transformer::random(c, seed, {.device = at::Device(at::kCUDA), .dtype = dtype}));
}

struct Outcome {
  std::vector<GenerationResult> results;  // by id
  std::size_t graphs = 0;                 // captured at the end
  std::int64_t graph_steps = 0;
};

// 9 requests over 6 slots: prompts of 5 to 61 tokens and 8 to 24 new tokens, so requests finish
// at different steps (holes below running slots), waiting ones refill them, and the batch
// shrinks to one. `swap_to`: installed as version 1 before step 10.
Outcome run(std::shared_ptr<const Transformer> m, bool graphs, bool sampled,
            std::shared_ptr<const Transformer> swap_to = nullptr) {
  Outcome out;
  auto e =
      GenerationEngine::create(m, 0, {.max_batch = 6, .max_seq_len = 96, .cuda_graphs = graphs});
  EXPECT_TRUE(e) << e.error().to_string();
  for (std::uint64_t id = 0; id < 9; ++id) {
    std::vector<std::int64_t> p;
    for (std::uint64_t i = 0; i < 5 + 7 * id; ++i) p.push_back((i * 13 + id * 7 + 1) % 512);
    SamplingParams params{.temperature = 0, .max_new_tokens = std::int64_t(8 + (id * 5) % 17)};
    if (sampled && id % 2 == 1) {
      params.temperature = 0.8;
      params.top_p = 0.9;
      params.seed = 100 + id;
    }
    EXPECT_TRUE(e->submit({.id = id, .prompt = p, .params = params}));
  }
  for (int step = 0; e->waiting() > 0 || e->running() > 0; ++step) {
    if (swap_to && step == 10) EXPECT_TRUE(e->swap_weights(swap_to, 1));
    auto done = e->step();
    EXPECT_TRUE(done) << done.error().to_string();
    if (!done) break;
    for (auto& r : *done) out.results.push_back(std::move(r));
  }
  std::sort(out.results.begin(), out.results.end(), [](auto& a, auto& b) { return a.id < b.id; });
  out.graphs = e->cuda_graphs_captured();
  out.graph_steps = e->phase_times().graph_steps;
  return out;
}

void expect_same(const Outcome& graph, const Outcome& eager, double logprob_tol,
                 const std::string& what) {
  EXPECT_GT(graph.graphs, 0u) << what << ": no graph was captured";
  EXPECT_GT(graph.graph_steps, 0) << what << ": no step replayed a graph";
  EXPECT_EQ(eager.graph_steps, 0) << what;
  ASSERT_EQ(graph.results.size(), eager.results.size()) << what;
  for (std::size_t i = 0; i < graph.results.size(); ++i) {
    const auto &g = graph.results[i], &e = eager.results[i];
    ASSERT_EQ(g.id, e.id);
    EXPECT_EQ(g.tokens, e.tokens) << what << ": request " << g.id;
    ASSERT_EQ(g.logprobs.size(), e.logprobs.size());
    for (std::size_t t = 0; t < g.logprobs.size(); ++t) {
      EXPECT_NEAR(g.logprobs[t], e.logprobs[t], logprob_tol)
          << what << ": request " << g.id << " token " << t;
    }
    EXPECT_EQ(g.last_policy_version, e.last_policy_version) << what;
  }
}

TEST(DecodeGraphs, GraphAndEagerDecodeAgreeFp32) {
  SKIP_WITHOUT_CUDA_GRAPHS();
  torch::NoGradGuard no_grad;
  for (const char* type : {"qwen2", "llama", "qwen3"}) {
    auto m = model(type, at::kFloat, 5);
    auto graph = run(m, true, /*sampled=*/true), eager = run(m, false, /*sampled=*/true);
    expect_same(graph, eager, 1e-4, std::string(type) + " fp32");
  }
}

TEST(DecodeGraphs, GraphAndEagerGreedyTokensAgreeBf16) {
  SKIP_WITHOUT_CUDA_GRAPHS();
  torch::NoGradGuard no_grad;
  auto m = model("qwen2", at::kBFloat16, 6);
  expect_same(run(m, true, false), run(m, false, false), 5e-2, "qwen2 bf16");
}

TEST(DecodeGraphs, WeightSwapDropsCapturedGraphs) {
  SKIP_WITHOUT_CUDA_GRAPHS();
  torch::NoGradGuard no_grad;
  auto a = model("qwen2", at::kFloat, 7), b = model("qwen2", at::kFloat, 8);
  auto graph = run(a, true, false, b), eager = run(a, false, false, b);
  expect_same(graph, eager, 1e-4, "swap");
  // The swap changed some request's tokens (else this test shows nothing about stale graphs).
  auto unswapped = run(a, true, false);
  bool changed = false;
  for (std::size_t i = 0; i < graph.results.size(); ++i) {
    changed |= graph.results[i].tokens != unswapped.results[i].tokens;
  }
  EXPECT_TRUE(changed);
}

TEST(DecodeGraphs, DecodeSlotsOnTheGpuEqualsTheCachedForward) {
  SKIP_WITHOUT_CUDA_GRAPHS();
  torch::NoGradGuard no_grad;
  auto m = model("qwen3", at::kFloat, 9);
  // Slots 0 and 2 prefilled to 6 and 9 tokens; slot 1 empty (a padding row).
  KvCache eager = m->make_cache(3, 64), graphed = m->make_cache(3, 64);
  auto ids = at::arange(20, at::TensorOptions().dtype(at::kLong)).remainder(512).cuda();
  for (KvCache* c : {&eager, &graphed}) {
    m->forward(ids.narrow(0, 0, 6).view({1, 6}), c, {0}, {0});
    m->forward(ids.narrow(0, 6, 9).view({1, 9}), c, {2}, {0});
  }
  auto want = m->forward(ids.narrow(0, 15, 2).view({2, 1}), &eager, {0, 2}, {6, 9}, true);
  DecodeGraphs graphs(3, 64);
  auto got = graphs.decode(*m, &graphed, {0, 2}, {15, 16}, {6, 9});
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(graphs.captured(), 1u);
  EXPECT_LT((got - want.view({2, -1})).abs().max().item<double>(), 1e-4);
  // The cache rows the step wrote are the eager step's.
  for (std::size_t l = 0; l < eager.k.size(); ++l) {
    EXPECT_LT((graphed.k[l].narrow(2, 0, 10) - eager.k[l].narrow(2, 0, 10))
                  .index_select(0, at::tensor({0, 2}, at::kLong).cuda())
                  .abs()
                  .max()
                  .item<double>(),
              1e-5);
  }
}

}  // namespace
}  // namespace cuda_agent
