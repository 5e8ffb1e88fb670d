// config.json of a Hugging Face decoder-only checkpoint of the Llama / Qwen2 / Qwen3 family,
// parsed into the fields the network needs. Torch-free.
//
// Accepted: model_type "llama", "qwen2", "qwen3" (and "mistral" without sliding window, which is
// a Llama); RoPE scaling "default", "linear", "dynamic", "yarn", "llama3", read from
// `rope_scaling` (transformers 4.x) or `rope_parameters` (transformers 5.x, which also moves
// rope_theta there); `torch_dtype` or `dtype`. Anything the network would silently get wrong
// (a sliding window in use, another RoPE type, a hidden_act other than silu, sizes that do not
// divide) is an Error naming the file and the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/error.h"

namespace cuda_agent {

enum class RopeType : std::uint8_t { kDefault, kLinear, kDynamic, kYarn, kLlama3 };

struct RopeScaling {
  RopeType type = RopeType::kDefault;
  double factor = 1.0;
  /// llama3, yarn: the context length the model was trained at (0: max_position_embeddings).
  std::int64_t original_max_position_embeddings = 0;
  double low_freq_factor = 1.0;            ///< llama3
  double high_freq_factor = 4.0;           ///< llama3
  double beta_fast = 32.0;                 ///< yarn
  double beta_slow = 1.0;                  ///< yarn
  std::optional<double> attention_factor;  ///< yarn (computed from factor when absent)
  std::optional<double> mscale;            ///< yarn
  std::optional<double> mscale_all_dim;    ///< yarn
  bool truncate = true;                    ///< yarn
};

struct ModelConfig {
  std::string model_type;  ///< "llama", "qwen2", "qwen3"
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;  ///< hidden_size / num_attention_heads when the file has none
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  std::int64_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  bool attention_bias = false;          ///< q/k/v projections have biases (always for qwen2)
  bool mlp_bias = false;                ///< llama's mlp_bias
  bool qk_norm = false;                 ///< RMSNorm on each head's q and k before RoPE (qwen3)
  std::string torch_dtype = "float32";  ///< "float32", "bfloat16", "float16"
  std::optional<std::int64_t> bos_token_id;
  std::optional<std::int64_t> eos_token_id;  ///< the first one when config.json lists several

  /// Bytes of K and V per token over all layers for `dtype_bytes`-sized elements.
  std::int64_t kv_bytes_per_token(std::int64_t dtype_bytes) const {
    return 2 * num_hidden_layers * num_key_value_heads * head_dim * dtype_bytes;
  }
};

/// Parses config.json text; `origin` (a path) prefixes every error. Errors: kInvalidInput with
/// code "model.bad_config" (missing or wrong-typed key, sizes that do not divide) or
/// "model.unsupported_config" (a feature this implementation does not have), naming the key.
Expected<ModelConfig> parse_model_config(const std::string& json_text, const std::string& origin);

/// Reads `dir`/config.json (or the file itself).
Expected<ModelConfig> load_model_config(const std::string& dir_or_file);

/// A tiny config of `model_type` ("qwen2", "llama", "qwen3") for tests and `model init --tiny`:
/// 2 layers, 4 query heads over 2 KV heads (GQA) of `head_dim`, hidden 4 x head_dim, SwiGLU of
/// 5 x head_dim; qwen2 ties its embeddings and has q/k/v biases, qwen3 has QK-norm.
ModelConfig tiny_model_config(const std::string& model_type, std::int64_t vocab_size,
                              std::int64_t head_dim);

/// config.json text for `config` in the layout transformers writes (used by `model init --tiny`).
std::string model_config_json(const ModelConfig& config);

}  // namespace cuda_agent
