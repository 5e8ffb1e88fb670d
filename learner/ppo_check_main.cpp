// learner_ppo_check: the learner's PPO loss and its gradients for a batch given in full, written
// out so an independent implementation can compare (scripts/gpu/check_ppo.py: transformers'
// Qwen2ForCausalLM on the same safetensors weights, plain full-vocabulary log_softmax).
//
//   learner_ppo_check MODEL_DIR BATCH.json OUT.safetensors [--device cpu|cuda] [--chunk-rows N]
//
// BATCH.json: {"clip_low", "clip_high", "importance_cap", "temperature",
//              "sequences": [{"ids": [...], "mask": [0/1 per token], "proximal": [...],
//                             "behaviour": [...], "advantages": [...]}]}  (per-token arrays;
// proximal, behaviour and advantages are read at mask-1 tokens). The loss is the trainer's:
// sum over model tokens of the decoupled PPO loss / number of model tokens, the log-prob of token
// t read from the hidden state at t - 1 through the chunked output projection. OUT holds "loss"
// [1] and "grad.<name>" for every parameter (the learner's names: layers.N.qkv_w is q, k and v
// stacked by rows), all float32. Exit codes: 0 written, 1 failed, 2 bad input.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

#include "learner/losses.h"
#include "learner/token_logprobs.h"
#include "model/safetensors.h"
#include "model/transformer.h"

using namespace cuda_agent;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: learner_ppo_check MODEL_DIR BATCH.json OUT.safetensors "
                 "[--device cpu|cuda] [--chunk-rows N]\n");
    return 2;
  }
  std::string device_name = "cpu";
  std::int64_t chunk_rows = 256;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--device") device_name = argv[i + 1];
    if (std::string(argv[i]) == "--chunk-rows") chunk_rows = std::stoll(argv[i + 1]);
  }
  try {
    auto model =
        Transformer::load(argv[1], {.device = at::Device(device_name), .dtype = at::kFloat});
    if (!model) {
      std::fprintf(stderr, "learner_ppo_check: %s\n", model.error().to_string().c_str());
      return 2;
    }
    std::ifstream in(argv[2]);
    nlohmann::json batch = nlohmann::json::parse(in);
    const at::Device dev = model->device();
    for (auto& [name, t] : model->parameters()) t.requires_grad_(true);
    PpoOptions po{.clip_low = batch.value("clip_low", 0.2),
                  .clip_high = batch.value("clip_high", 0.28),
                  .importance_cap = batch.value("importance_cap", 5.0)};
    const double inv_t = 1.0 / batch.value("temperature", 1.0);
    double tokens = 0;
    for (const auto& s : batch["sequences"])
      for (int m : s["mask"].get<std::vector<int>>()) tokens += m;
    double loss_total = 0;
    for (const auto& s : batch["sequences"]) {
      auto ids = s["ids"].get<std::vector<std::int64_t>>();
      auto mask = s["mask"].get<std::vector<int>>();
      auto prox = s["proximal"].get<std::vector<float>>();
      auto beh = s["behaviour"].get<std::vector<float>>();
      auto adv = s["advantages"].get<std::vector<float>>();
      std::vector<std::int64_t> index, targets;
      std::vector<float> p, b, a;
      for (std::size_t t = 1; t < ids.size(); ++t) {
        if (!mask[t]) continue;
        index.push_back(std::int64_t(t) - 1);
        targets.push_back(ids[t]);
        p.push_back(prox[t]);
        b.push_back(beh[t]);
        a.push_back(adv[t]);
      }
      at::Tensor tok = upload_longs(ids, dev).view({1, -1});
      at::Tensor h =
          model->hidden(tok, nullptr, {}, {})[0].index_select(0, upload_longs(index, dev));
      TokenLogprobs lp = chunked_token_logprobs(
          h, model->weights().lm_head, upload_longs(targets, dev), chunk_rows, false, inv_t);
      at::Tensor ones = at::ones({std::int64_t(index.size())}, lp.logprobs.options());
      PolicyLossResult r =
          ppo_policy_loss(lp.logprobs, upload_floats(p, dev), upload_floats(b, dev),
                          upload_floats(a, dev), ones, po, tokens);
      r.loss.backward();
      loss_total += r.loss.item<double>();
    }
    std::vector<at::Tensor> keep;
    std::vector<SafetensorsWriteTensor> out;
    auto add = [&](const std::string& name, at::Tensor t) {
      t = t.detach().to(at::kCPU, at::kFloat).contiguous();
      keep.push_back(t);
      std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
      out.push_back({.name = name,
                     .dtype = StDtype::kF32,
                     .shape = shape,
                     .data = t.data_ptr(),
                     .bytes = std::size_t(t.numel()) * 4});
    };
    add("loss", at::tensor({float(loss_total)}));
    for (auto& [name, t] : model->parameters())
      add("grad." + name, t.grad().defined() ? t.grad() : at::zeros_like(t));
    if (Status s = write_safetensors(argv[3], out, {}); !s) {
      std::fprintf(stderr, "learner_ppo_check: %s\n", s.error().to_string().c_str());
      return 1;
    }
    std::printf("learner_ppo_check: loss %.9g over %.0f model tokens -> %s\n", loss_total, tokens,
                argv[3]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "learner_ppo_check: %s\n", e.what());
    return 1;
  }
}
