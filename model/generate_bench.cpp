// generate_bench: throughput of the generation engine (model/generate.h).
// Model: random weights in the shape of Qwen2.5-0.5B (24 layers, hidden 896, 14 heads over 2 KV
// heads of 64, SwiGLU 4864, vocab 151936), bf16 on CUDA; without a GPU a 4-layer cut of it in
// fp32 on the CPU with vocab 32000 (figures then only show that the path runs).
// Check first (fp32, tiny model): greedy tokens of 6 requests decoded together equal each one
// decoded alone and the argmax of a full forward over the growing sequence; else exit 1.
// Figures:
//  - prefill tokens/s: one 2048-token prompt, chunks of 512, time of the engine step that
//    prefills it and samples the first token (median of 3, after a warm-up);
//  - decode tokens/s at batch 1, 16, 64: B requests of 128-token prompts, 128 greedy new tokens;
//    time of the decode steps only (after every request's prefill), tokens = B x 127, in the
//    second of two such rounds on one engine (the first warms up, as transformers' side does
//    a warm-up generate, and captures the CUDA graphs); each step
//    ends with the sampled ids copied to the host, so every timed step is complete on the device;
//    once with EngineOptions::cuda_graphs (the default; "graphs on", with the number of graphs
//    captured) and once without ("graphs off");
//    on the CPU graphs never apply and both lines are eager;
//  - the same decode again with graphs on and EngineOptions::time_phases (the device
//    synchronised after each phase, so slightly slower): ms per step in the forward (host inputs
//    to logits on the device), in sampling (ids and logprobs back on the host) and in the
//    engine's host work, and how many steps replayed a graph;
//  - KV-cache bytes per token: 2 x layers x kv_heads x head_dim x dtype bytes.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "model/generate.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool check_batched_equals_solo() {
  ModelConfig c = tiny_model_config("qwen2", 64, 8);
  auto m = std::make_shared<const Transformer>(Transformer::random(c, 3));
  auto run = [&](std::vector<std::uint64_t> ids) {
    auto e = GenerationEngine::create(m, 0, {.max_batch = 8, .max_seq_len = 64});
    for (auto id : ids) {
      std::vector<std::int64_t> p;
      for (std::uint64_t i = 0; i < 3 + id * 2; ++i) p.push_back((i * 5 + id) % 64);
      (void)e->submit({.id = id, .prompt = p, .params = {.temperature = 0, .max_new_tokens = 12}});
    }
    auto out = e->run();
    std::sort(out->begin(), out->end(), [](auto& a, auto& b) { return a.id < b.id; });
    return *out;
  };
  auto together = run({0, 1, 2, 3, 4, 5});
  for (std::uint64_t id = 0; id < 6; ++id) {
    auto solo = run({id});
    if (solo[0].tokens != together[id].tokens) return false;
    std::vector<std::int64_t> seq;
    for (std::uint64_t i = 0; i < 3 + id * 2; ++i) seq.push_back((i * 5 + id) % 64);
    for (auto tok : solo[0].tokens) {
      auto logits = m->forward(at::tensor(seq, at::kLong).view({1, -1}))[0][-1];
      if (logits.argmax().item<std::int64_t>() != tok) return false;
      seq.push_back(tok);
    }
  }
  return true;
}

}  // namespace
}  // namespace cuda_agent

int main() {
  using namespace cuda_agent;
  torch::NoGradGuard no_grad;
  if (!check_batched_equals_solo()) {
    std::fprintf(stderr,
                 "generate_bench: batched greedy decoding differs from solo / full forward\n");
    return 1;
  }
  const bool cuda = torch::cuda::is_available();
  ModelConfig c;
  c.model_type = "qwen2";
  c.vocab_size = cuda ? 151936 : 32000;
  c.hidden_size = 896;
  c.intermediate_size = 4864;
  c.num_hidden_layers = cuda ? 24 : 4;
  c.num_attention_heads = 14;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.rope_theta = 1e6;
  c.max_position_embeddings = 32768;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  const at::ScalarType dtype = cuda ? at::kBFloat16 : at::kFloat;
  auto model = std::make_shared<const Transformer>(Transformer::random(
      c, 1, {.device = cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU), .dtype = dtype}));
  std::printf("generate_bench: %s, Qwen2.5-0.5B shape (%lld layers), random weights, %s\n",
              cuda ? "CUDA" : "CPU (no GPU: shape cut to 4 layers)",
              static_cast<long long>(c.num_hidden_layers), cuda ? "bf16" : "fp32");
  std::printf("check passed: batched greedy == solo == argmax of the full forward (fp32, tiny)\n");
  std::printf("KV-cache bytes per token: %lld\n",
              static_cast<long long>(c.kv_bytes_per_token(c10::elementSize(dtype))));

  auto random_prompt = [&](std::int64_t n, std::uint64_t salt) {
    std::vector<std::int64_t> p;
    for (std::int64_t i = 0; i < n; ++i) p.push_back((i * 7919 + salt * 104729) % c.vocab_size);
    return p;
  };
  // Prefill.
  const std::int64_t prefill_len = cuda ? 2048 : 256;
  {
    auto e = GenerationEngine::create(
        model, 0, {.max_batch = 1, .max_seq_len = prefill_len + 1, .prefill_chunk_tokens = 512});
    if (!e) return std::fprintf(stderr, "%s\n", e.error().to_string().c_str()), 1;
    std::vector<double> times;
    for (int rep = 0; rep < 4; ++rep) {
      (void)e->submit({.id = std::uint64_t(rep),
                       .prompt = random_prompt(prefill_len, rep),
                       .params = {.temperature = 0, .max_new_tokens = 1}});
      auto t = Clock::now();
      auto done = e->step();
      if (!done || done->size() != 1) return std::fprintf(stderr, "prefill step failed\n"), 1;
      if (rep > 0) times.push_back(seconds_since(t));
    }
    std::sort(times.begin(), times.end());
    std::printf("prefill: %.0f tokens/s (%lld-token prompt, chunks of 512, median of 3)\n",
                prefill_len / times[1], static_cast<long long>(prefill_len));
  }
  // Decode.
  const std::int64_t prompt_len = 128, new_tokens = cuda ? 128 : 16;
  for (std::int64_t batch : {1, 16, 64}) {
    if (!cuda && batch == 64) break;
    struct Mode {
      bool graphs, phases;
    };
    for (Mode mode : {Mode{true, false}, Mode{false, false}, Mode{true, true}}) {
      const bool phases = mode.phases;
      auto e = GenerationEngine::create(model, 0,
                                        {.max_batch = batch,
                                         .max_seq_len = prompt_len + new_tokens,
                                         .time_phases = phases,
                                         .cuda_graphs = mode.graphs});
      if (!e) return std::fprintf(stderr, "%s\n", e.error().to_string().c_str()), 1;
      // Round 0 warms up (and captures the graphs); round 1 is timed.
      double s = 0;
      std::int64_t steps = 0;
      EnginePhaseTimes p;
      for (std::uint64_t round = 0; round < 2; ++round) {
        for (std::int64_t i = 0; i < batch; ++i) {
          (void)e->submit({.id = round * std::uint64_t(batch) + std::uint64_t(i),
                           .prompt = random_prompt(
                               prompt_len, std::uint64_t(i) + 7 + round * std::uint64_t(batch)),
                           .params = {.temperature = 0, .max_new_tokens = new_tokens}});
        }
        if (!e->step()) return std::fprintf(stderr, "prefill failed\n"), 1;  // all prefills
        const EnginePhaseTimes before = e->phase_times();
        auto t = Clock::now();
        steps = 0;
        while (e->running() > 0) {
          if (!e->step()) return std::fprintf(stderr, "decode failed\n"), 1;
          ++steps;
        }
        s = seconds_since(t);
        const EnginePhaseTimes& after = e->phase_times();
        p = {.decode_forward_s = after.decode_forward_s - before.decode_forward_s,
             .decode_sample_s = after.decode_sample_s - before.decode_sample_s,
             .decode_host_s = after.decode_host_s - before.decode_host_s,
             .decode_steps = after.decode_steps - before.decode_steps,
             .graph_steps = after.graph_steps - before.graph_steps};
      }
      if (!phases) {
        std::printf(
            "decode batch %3lld: %8.0f tokens/s (%lld steps, %.2f ms/step) graphs %s (%zu "
            "captured)\n",
            static_cast<long long>(batch), batch * (new_tokens - 1) / s,
            static_cast<long long>(steps), 1e3 * s / steps, mode.graphs ? "on" : "off",
            e->cuda_graphs_captured());
      } else {
        const double n = double(std::max<std::int64_t>(p.decode_steps, 1));
        std::printf(
            "  phases (graphs on, synchronised, %.2f ms/step): forward %.2f, sampling %.2f, host "
            "%.2f ms; %lld of %lld steps from a graph\n",
            1e3 * s / steps, 1e3 * p.decode_forward_s / n, 1e3 * p.decode_sample_s / n,
            1e3 * p.decode_host_s / n, static_cast<long long>(p.graph_steps),
            static_cast<long long>(p.decode_steps));
      }
    }
  }
  return 0;
}
