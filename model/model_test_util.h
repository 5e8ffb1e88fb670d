// Tiny configurations for the torch tests of model/.
#pragma once

#include <filesystem>
#include <string>

#include "model/model_config.h"
#include "model/transformer.h"

namespace cuda_agent::testing {

/// A tiny config of the family: GQA (4 heads, 2 KV heads), head_dim 8, hidden 32, vocab 50.
inline ModelConfig tiny_config(const std::string& type) {
  ModelConfig c = tiny_model_config(type, /*vocab_size=*/50, /*head_dim=*/8);
  c.max_position_embeddings = 256;
  return c;
}

/// A random tiny Llama with dynamic NTK RoPE past 12 positions (factor 2) and q/k weights x10:
/// with the default random weights a wrong rotation moves the logits by only ~1e-5.
inline Transformer sharp_dynamic_rope_llama(std::uint64_t seed) {
  ModelConfig c = tiny_config("llama");
  c.max_position_embeddings = 12;
  c.rope_scaling = {.type = RopeType::kDynamic, .factor = 2};
  Transformer m = Transformer::random(c, seed);
  for (const auto& l : m.weights().layers) {  // sharper attention: rotations matter more
    l.q_w.mul_(10);
    l.k_w.mul_(10);
  }
  return m;
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("ca_model_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string str(const std::string& name = "") const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace cuda_agent::testing
