// The policy network: a decoder-only transformer of the Llama / Qwen2 / Qwen3 family in libtorch,
// loaded from a Hugging Face checkpoint (config.json + safetensors), numerically the same
// computation as transformers' eager modules (RMSNorm in float32, RoPE tables in float32 cast to
// the model dtype, q/k/v biases for Qwen2, per-head QK RMSNorm for Qwen3, GQA, SwiGLU).
//
//   ASSIGN_OR_RETURN(Transformer m, Transformer::load(dir, {.device = at::kCUDA}));
//   KvCache cache = m.make_cache(/*slots=*/4, /*max_seq=*/2048);
//   at::Tensor logits = m.forward(tokens, &cache, {0}, {0});   // prefill slot 0
//
// Shapes: tokens [B, T] int64 on the model's device; logits [B, T, vocab] (or [B, 1, vocab] with
// last_only) in the model dtype; hidden [B, T, hidden_size].
//
// KV cache layout ("slot" cache): per layer K and V of [slots, kv_heads, max_seq, head_dim]; a
// sequence owns one slot; row b of a forward call reads and writes slot `slots[b]` and its tokens
// take positions starts[b] .. starts[b] + T - 1 (so starts[b] tokens of that slot are already
// cached). Rows of one call may have different starts; they share T. Without a cache the call
// is a plain causal forward from position 0 (the learner's path; right padding is harmless).
//
// Dynamic NTK RoPE (rope_type "dynamic") follows transformers' generate: the rotation of the
// tokens of a call is computed for that row's sequence length, max(starts[b] + T,
// rope_lengths[b]) (the largest position + 1, or more: the engine passes the prompt length while
// it prefills a prompt in chunks, as transformers prefills it in one call), and keys already in
// the cache keep the rotation they were written with. A full forward (no cache) rotates all T
// tokens for length T, as transformers' full forward does; so cached and full logits differ
// once a sequence is past max_position_embeddings, exactly as they do in transformers.
//
// Threading: a Transformer is immutable after load (except that the learner updates the tensors
// of parameters() in place between forwards, from its one thread); forward may run from several
// threads on distinct caches. A KvCache belongs to one caller.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model_config.h"
#include "model/torch_compat.h"

namespace cuda_agent {

// The q, k and v projections are stored stacked, one matrix per layer, and so are gate and up:
// a decode step is bound by kernel launches, and one matmul over the stacked rows gives every
// output column the same dot product as its own matmul. The per-projection tensors are views of
// the stacked ones (rows), so editing them in place edits what forward uses.
struct LayerWeights {
  at::Tensor input_norm;            // [hidden]
  at::Tensor qkv_w;                 // [(heads + 2 kv) * hd, hidden]: q rows, k rows, v rows
  at::Tensor qkv_b;                 // [(heads + 2 kv) * hd] or undefined (no attention bias)
  at::Tensor q_w, k_w, v_w, o_w;    // views of qkv_w: [heads*hd, hidden], [kv*hd, hidden] x2;
                                    // o_w [hidden, heads*hd]
  at::Tensor q_b, k_b, v_b;         // views of qkv_b, or undefined
  at::Tensor q_norm, k_norm;        // [head_dim] (Qwen3) or undefined
  at::Tensor post_norm;             // [hidden]
  at::Tensor gate_up_w;             // [2 * inter, hidden]: gate rows, then up rows
  at::Tensor gate_up_b;             // [2 * inter], mlp_bias only
  at::Tensor gate_w, up_w, down_w;  // views of gate_up_w: [inter, hidden] x2; [hidden, inter]
  at::Tensor gate_b, up_b, down_b;  // mlp_bias only (gate_b, up_b: views of gate_up_b)
};

struct TransformerWeights {
  at::Tensor embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  at::Tensor final_norm;  // [hidden]
  at::Tensor lm_head;     // [vocab, hidden]; the same storage as embed when tied
};

struct KvCache {
  std::vector<at::Tensor> k, v;  // per layer [slots, kv_heads, max_seq, head_dim], contiguous
  /// RoPE cos and sin of every position [max_seq, head_dim] in the model dtype on its device
  /// (attention factor applied), made once by make_cache: a forward looks its positions up
  /// instead of recomputing them. Dynamic NTK past max_position_embeddings computes its own.
  at::Tensor rope_cos, rope_sin;
  std::int64_t slots = 0;
  std::int64_t max_seq = 0;
  std::int64_t bytes() const;  ///< K and V only
};

struct LoadOptions {
  at::Device device = at::kCPU;
  /// Undefined: config.json's torch_dtype.
  std::optional<at::ScalarType> dtype;
};

/// "float32" / "fp32" -> kFloat, "bfloat16" / "bf16" -> kBFloat16, "float16" / "fp16" -> kHalf.
Expected<at::ScalarType> parse_dtype_name(const std::string& name);

class Transformer {
 public:
  /// Reads `dir`/config.json and the safetensors weights. Errors name the file and tensor
  /// (missing, unexpected dtype, shape other than the config implies).
  static Expected<Transformer> load(const std::string& dir, const LoadOptions& options = {});
  /// Random weights (normal, std 0.02; norms near 1) from `seed`: tests and `model init --tiny`.
  static Transformer random(const ModelConfig& config, std::uint64_t seed,
                            const LoadOptions& options = {});
  /// Writes `dir`/config.json and `dir`/model.safetensors in the current dtype.
  Status save(const std::string& dir) const;

  const ModelConfig& config() const { return config_; }
  /// The trainable tensors, each exactly once, in a fixed order: the stacked projections (not
  /// their views, which follow them) and lm_head only when it is not tied to embed. Names are
  /// internal ("layers.3.qkv_w"), stable for optimizer checkpoints; save() writes the Hugging
  /// Face names. The learner sets requires_grad on these and updates them in place.
  std::vector<std::pair<std::string, at::Tensor>> parameters() const;
  const TransformerWeights& weights() const { return w_; }
  at::Device device() const { return w_.embed.device(); }
  at::ScalarType dtype() const { return w_.embed.scalar_type(); }

  KvCache make_cache(std::int64_t slots, std::int64_t max_seq) const;

  /// Final-normed hidden states [B, T, hidden]. `cache` may be null (then slots/starts are
  /// ignored and positions start at 0).
  /// `rope_lengths`: empty, or per row the least sequence length dynamic RoPE assumes (see
  /// above); other RoPE types ignore it.
  at::Tensor hidden(const at::Tensor& tokens, KvCache* cache,
                    const std::vector<std::int64_t>& slots, const std::vector<std::int64_t>& starts,
                    const std::vector<std::int64_t>& rope_lengths = {}) const;
  /// hidden -> logits: [B, T, vocab] in the model dtype.
  at::Tensor logits(const at::Tensor& hidden) const;
  /// Both in one; `last_only` keeps the last position only ([B, 1, vocab]).
  at::Tensor forward(const at::Tensor& tokens, KvCache* cache,
                     const std::vector<std::int64_t>& slots,
                     const std::vector<std::int64_t>& starts, bool last_only = false,
                     const std::vector<std::int64_t>& rope_lengths = {}) const;
  at::Tensor forward(const at::Tensor& tokens) const { return forward(tokens, nullptr, {}, {}); }

  /// The decode step a CUDA graph captures (model/decode_graphs.h): row b is cache slot b; it
  /// takes token tokens[b] at position positions[b] and attends to the first `kv_keys` positions
  /// of its slot (those after positions[b] masked). tokens, positions: [B] int64 on the model's
  /// device, B <= cache->slots, every position < kv_keys <= cache->max_seq. The whole call stays
  /// on the device (no host copy, no synchronisation, no shape read back), so it can be captured.
  /// Uses the cache's RoPE table: not for dynamic NTK past max_position_embeddings. The same
  /// arithmetic as forward(..., last_only = true) over those rows. Returns logits [B, vocab].
  at::Tensor decode_slots(const at::Tensor& tokens, const at::Tensor& positions,
                          std::int64_t kv_keys, KvCache* cache) const;

  /// RoPE inverse frequencies [head_dim / 2] (float32) for a sequence reaching `seq_len`
  /// positions, and the factor cos/sin are scaled by (YaRN's attention factor; 1 otherwise).
  std::pair<at::Tensor, double> rope_inv_freq(std::int64_t seq_len) const;

 private:
  Transformer(ModelConfig config, TransformerWeights w)
      : config_(std::move(config)), w_(std::move(w)) {}
  struct StepInputs;  // what every layer of one forward shares (transformer.cpp)
  StepInputs step_inputs(std::int64_t B, std::int64_t T, KvCache* cache,
                         const std::vector<std::int64_t>& slots,
                         const std::vector<std::int64_t>& starts,
                         const std::vector<std::int64_t>& rope_lengths) const;
  at::Tensor attention(const LayerWeights& lw, std::size_t layer, const at::Tensor& x,
                       const StepInputs& in, KvCache* cache) const;
  at::Tensor run_layers(at::Tensor x, const StepInputs& in, KvCache* cache) const;

  ModelConfig config_;
  TransformerWeights w_;
};

/// Weighted RMSNorm as transformers computes it: float32 statistics, cast back, then the weight.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
/// Applies RoPE in the rotate-half convention. x: [B, T, heads, hd]; cos, sin: [B, T, 1, hd].
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
/// RoPE cos and sin [B, T, 1, hd] in `dtype` as transformers computes them (float32 angles
/// position x inverse frequency, scaled by `scale`, then cast). positions: [B, T] int64;
/// inv_freq: [B or 1, hd / 2] float32, on the positions' device.
std::pair<at::Tensor, at::Tensor> rope_cos_sin(const at::Tensor& positions,
                                               const at::Tensor& inv_freq, double scale,
                                               at::ScalarType dtype);
/// `values` as an int64 tensor on `device`. To a GPU through pinned memory without blocking the
/// host (the copy is ordered on the current stream like the kernels that read it).
at::Tensor upload_longs(const std::vector<std::int64_t>& values, at::Device device);
/// The same for floats.
at::Tensor upload_floats(const std::vector<float>& values, at::Device device);

/// The critic's scalar head on the same backbone: value = hidden . weight + bias.
/// Saved as `value_head.safetensors` with tensors "score.weight" [1, hidden], "score.bias" [1].
struct ValueHead {
  at::Tensor weight;  // [1, hidden]
  at::Tensor bias;    // [1]

  static ValueHead zeros(std::int64_t hidden, const at::TensorOptions& options);
  static Expected<ValueHead> load(const std::string& path, const at::TensorOptions& options);
  Status save(const std::string& path) const;
  /// hidden [B, T, H] -> values [B, T] (float32).
  at::Tensor forward(const at::Tensor& hidden) const;
};

}  // namespace cuda_agent
