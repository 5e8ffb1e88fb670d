// learner_bench: the learner's training throughput on one GPU (issue 22), to be read against the
// PyTorch eager anchor measured in the same call (scripts/gpu/hf_train_bench.py).
//
// What it measures: SFT steps (the same forward/backward/optimizer work as a PPO epoch, without
// the no-grad proximal pass) of a random Qwen2.5-0.5B-shaped model in bf16 with fp32 master
// weights and AdamW moments, over --batch sequences of --seq tokens (16k tokens per step by
// default), every token but the first trained on. Correctness first: the first step's loss must be
// near log(vocab) (random weights) and every step's loss finite, or it prints FAILED and exits 1.
// Then the median step time over --steps steps after --warmup: tokens/s, peak GPU memory
// (the caching allocator's peak allocated bytes), and model FLOP utilisation against
// --peak-tflops (790: the bf16 matmul rate measured on the H200, RL_INFRA_NOTES.md):
// flops per token = 6 x matmul parameters (lm_head included) + 6 x layers x seq x heads x
// head_dim (causal attention, forward and backward).
//
//   learner_bench [--batch 8] [--seq 2048] [--steps 6] [--warmup 2] [--chunk-rows 2048]
//                 [--device cuda] [--json FILE]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "learner/trainer.h"

#ifdef CA_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace {

using namespace cuda_agent;

double peak_gib(const at::Device& d) {
#ifdef CA_TORCH_CUDA
  if (d.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d.has_index() ? d.index() : 0);
    return double(stats.allocated_bytes[0].peak) / double(1ULL << 30);
  }
#endif
  return 0;
}

void sync(const at::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"learner_bench: training tokens/s, peak memory and MFU of the learner"};
  std::int64_t batch = 8, seq = 2048, steps = 6, warmup = 2, chunk_rows = 2048;
  double peak_tflops = 790;
  std::string device_name = "cuda", json_path, shape = "0.5b";
  app.add_option("--batch", batch);
  app.add_option("--seq", seq);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--chunk-rows", chunk_rows);
  app.add_option("--peak-tflops", peak_tflops);
  app.add_option("--device", device_name);
  app.add_option("--shape", shape, "0.5b (Qwen2.5-0.5B) or tiny");
  app.add_option("--json", json_path);
  CLI11_PARSE(app, argc, argv);
  if (device_name != "cpu" && !torch::cuda::is_available()) {
    std::printf("SKIPPED: no GPU visible to libtorch (run with --device cpu --shape tiny)\n");
    return 0;
  }
  const at::Device device(device_name);
  ModelConfig c = tiny_model_config("qwen2", 151'936, 64);
  if (shape == "0.5b") {
    c.hidden_size = 896;
    c.intermediate_size = 4864;
    c.num_hidden_layers = 24;
    c.num_attention_heads = 14;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 32768;
    c.rope_theta = 1'000'000;
  } else {
    c = tiny_model_config("qwen2", 1000, 16);
  }
  const at::ScalarType dtype = device.is_cuda() ? at::kBFloat16 : at::kFloat;
  Transformer model = Transformer::random(c, 1, {.device = device, .dtype = dtype});
  std::mt19937_64 rng(3);
  std::vector<TrainSequence> data;
  for (std::int64_t b = 0; b < batch; ++b) {
    TrainSequence s;
    s.run = RunId{"bench"};
    s.episode = EpisodeId{"e" + std::to_string(b)};
    for (std::int64_t t = 0; t < seq; ++t) s.ids.push_back(std::int64_t(rng() % c.vocab_size));
    s.loss_mask.assign(std::size_t(seq), 1);
    s.loss_mask[0] = 0;
    s.behaviour_logprobs.assign(std::size_t(seq), 0.f);
    s.policy_versions.assign(std::size_t(seq), 0);
    s.last_model_token = seq - 1;
    data.push_back(std::move(s));
  }
  TrainerOptions o;
  o.micro_batch_tokens = batch * seq;
  o.logprob_chunk_rows = chunk_rows;
  o.actor_optimizer = {.lr = 1e-5};
  auto trainer = Trainer::create(std::move(model), std::nullopt, o, nullptr);
  if (!trainer) {
    std::printf("FAILED: %s\n", trainer.error().to_string().c_str());
    return 1;
  }
  std::vector<double> times;
  double first_loss = 0;
  for (std::int64_t i = 0; i < warmup + steps; ++i) {
    sync(device);
    auto t0 = std::chrono::steady_clock::now();
    auto m = (*trainer)->sft_step(data);
    sync(device);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!m || !std::isfinite(m->loss)) {
      std::printf("FAILED: step %lld: %s\n", static_cast<long long>(i),
                  m ? "non-finite loss" : m.error().to_string().c_str());
      return 1;
    }
    if (i == 0) first_loss = m->loss;
    if (i >= warmup) times.push_back(s);
  }
  if (std::fabs(first_loss - std::log(double(c.vocab_size))) > 0.5) {
    std::printf("FAILED: first loss %.4f, expected near log(vocab) = %.4f\n", first_loss,
                std::log(double(c.vocab_size)));
    return 1;
  }
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double tokens = double(batch * seq);
  const double H = double(c.hidden_size), I = double(c.intermediate_size),
               L = double(c.num_hidden_layers), nh = double(c.num_attention_heads),
               kv = double(c.num_key_value_heads), hd = double(c.head_dim),
               V = double(c.vocab_size);
  const double matmul_params = L * (H * (nh + 2 * kv) * hd + nh * hd * H + 3 * H * I) + H * V;
  const double flops_per_token = 6 * matmul_params + 6 * L * double(seq) * nh * hd;
  const double tps = tokens / med;
  const double mfu = flops_per_token * tps / (peak_tflops * 1e12);
  nlohmann::json j = {{"impl", "cuda-agent learner"}, {"shape", shape},
                      {"device", device_name},        {"tokens_per_step", tokens},
                      {"median_step_s", med},         {"tokens_per_s", tps},
                      {"peak_gib", peak_gib(device)}, {"mfu", mfu},
                      {"first_loss", first_loss},     {"torch", torch_compat::version_string()}};
  std::printf("learner_bench: %s\n", j.dump().c_str());
  std::printf(
      "method: SFT steps (bf16 compute, fp32 master + AdamW moments), %lld x %lld tokens, "
      "median of %lld steps after %lld warm-up; MFU vs %.0f TFLOP/s\n",
      static_cast<long long>(batch), static_cast<long long>(seq), static_cast<long long>(steps),
      static_cast<long long>(warmup), peak_tflops);
  if (!json_path.empty()) std::ofstream(json_path) << j.dump() << "\n";
  return 0;
}
