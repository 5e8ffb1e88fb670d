// Options of the policy model (manifest section [model]). See core/option_fields.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct ModelOptions {
  static constexpr std::string_view kSection = "model";
  static constexpr std::string_view kDoc =
      "The policy network: a Hugging Face checkpoint of the Llama / Qwen2 / Qwen3 family.";

  std::string path;
  std::string dtype = "bf16";
  std::string init_size = "tiny";
  std::int64_t kv_cache_bytes = 0;
  std::int64_t prefill_chunk_tokens = 4096;

  template <class V>
  void visit(V& v) {
    v({.key = "path",
       .doc = "Directory holding config.json, *.safetensors and tokenizer.json; empty means a "
              "tiny random model made by `cuda-agent model init --tiny` (tests, smoke runs)."},
      path);
    v({.key = "init_size",
       .doc = "Shape of the random model made when path is empty: 'tiny' (2 layers, hidden 64), "
              "'1M' or '10M' parameters (with [corpus], its tokenizer is trained on the corpus).",
       .choices = {"tiny", "1M", "10M"}},
      init_size);
    v({.key = "dtype",
       .doc = "Parameter and activation dtype.",
       .choices = {"fp32", "bf16", "fp16"}},
      dtype);
    v({.key = "kv_cache_bytes",
       .unit = "bytes",
       .doc = "GPU memory reserved for KV caches; 0 means what is left after weights, minus a "
              "margin. Requests that do not fit are refused with a clear error.",
       .min = 0},
      kv_cache_bytes);
    v({.key = "prefill_chunk_tokens",
       .unit = "tokens",
       .doc = "Long prompts are prefilled in chunks of this many tokens.",
       .min = 16},
      prefill_chunk_tokens);
  }
};

}  // namespace cuda_agent
