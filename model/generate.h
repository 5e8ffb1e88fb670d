// The generation engine: batched requests, each with its own KV-cache slot, decoded together one
// token per step (continuous batching: requests join between steps when a slot is free, and
// leave when they finish, freeing it).
//
//   ASSIGN_OR_RETURN(GenerationEngine engine, GenerationEngine::create(model, /*version=*/0, {}));
//   RETURN_IF_ERROR(engine.submit({.id = 1, .prompt = ids, .params = {.temperature = 0}}));
//   ASSIGN_OR_RETURN(std::vector<GenerationResult> done, engine.run());
//
// A step: (1) admits waiting requests into free slots, prefilling each prompt in chunks of
// `prefill_chunk_tokens` and sampling its first token from the last chunk's logits; (2) runs one
// batched decode over every other running request (one forward of [B, 1] tokens) and samples
// each row; (3) returns the requests that finished in this step.
//
// Sampling is per request and reproducible: each request owns a generator seeded from its
// `seed` that gives one uniform number per sampled token; the choice itself is made on the
// model's device from float32 logits (sample_rows), row by row, so a request gives the same
// tokens whatever else shares its batch, and on every run (on the same device and dtype). Only
// the chosen ids and their logprobs come back to the host.
// `logprobs[i]` is log softmax(logits / temperature)[token] before top-k / top-p truncation
// (temperature 0: of the raw logits), i.e. the quantity the learner recomputes.
//
// Memory: the KV cache is allocated once, at `create`: slots x max_seq_len tokens. A request
// whose prompt + max_new_tokens exceeds max_seq_len is refused at `submit` with a clear error
// (never an out-of-memory mid-run); one that fits waits for a free slot.
//
// Weight versions: `swap_weights` installs a new model between steps. Requests in flight keep
// their cached K/V (computed by the old weights) and continue with the new ones; each result
// says the versions its tokens were sampled under.
//
// Threading: not thread-safe; one owner (the rollout worker's engine actor) calls it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/decode_graphs.h"
#include "model/transformer.h"

namespace cuda_agent {

struct SamplingParams {
  /// 0 means greedy (argmax, lowest id on ties).
  double temperature = 1.0;
  /// Nucleus sampling: keep the most likely tokens whose probabilities sum to top_p. 1: off.
  double top_p = 1.0;
  /// Keep the k most likely tokens. 0: off.
  std::int64_t top_k = 0;
  std::uint64_t seed = 0;
  std::int64_t max_new_tokens = 256;
  /// Generation ends after sampling one of these (it is included in the output).
  std::vector<std::int64_t> stop_tokens;
  /// Generation ends once the generated text contains one of these (the tokens that complete it
  /// are kept; nothing is cut). Needs the engine's detokenizer (set_detokenizer).
  std::vector<std::string> stop_strings;
};

struct GenerationRequest {
  std::uint64_t id = 0;
  std::vector<std::int64_t> prompt;
  SamplingParams params;
};

enum class FinishReason : std::uint8_t { kStopToken, kMaxNewTokens, kStopString };
const char* to_string(FinishReason reason);

struct GenerationResult {
  std::uint64_t id = 0;
  std::vector<std::int64_t> tokens;  ///< sampled ids, the stop token included
  std::vector<float> logprobs;       ///< one per token (see the header comment)
  FinishReason finish = FinishReason::kMaxNewTokens;
  std::int64_t first_policy_version = 0;  ///< version the first token was sampled under
  std::int64_t last_policy_version = 0;   ///< and the last
};

struct EngineOptions {
  /// Requests decoded together (KV-cache slots), at most.
  std::int64_t max_batch = 16;
  /// Tokens per slot (prompt + generated).
  std::int64_t max_seq_len = 2048;
  /// Cap on the KV cache; fewer slots are made when max_batch x max_seq_len would exceed it.
  /// 0: no cap. A cap too small for one slot is an error at create.
  std::int64_t kv_cache_bytes = 0;
  /// Prompts longer than this are prefilled in chunks of this many tokens.
  std::int64_t prefill_chunk_tokens = 512;
  /// Waits for the device after each phase of a step and adds its time to phase_times(): for
  /// benchmarks only (it costs throughput). Default: false.
  bool time_phases = false;
  /// Replays decode steps from CUDA graphs (model/decode_graphs.h), captured lazily per bucket
  /// of rows and keys: removes the launch cost that bounds a small model's decode step, for a
  /// capture (tens of ms) the first time a bucket is used and the memory of its intermediates.
  /// Applies on CUDA devices in builds against a CUDA libtorch; elsewhere, or when false, every
  /// step runs eagerly. Logits then differ from the eager step's by rounding only (see there).
  /// Default: true.
  bool cuda_graphs = true;
};

/// Wall time per phase of the engine's steps (with EngineOptions::time_phases), seconds.
struct EnginePhaseTimes {
  double prefill_s = 0;         ///< prefill forwards and their first tokens
  double decode_forward_s = 0;  ///< batched decode forwards (host inputs to logits)
  double decode_sample_s = 0;   ///< sampling of those logits, ids and logprobs on the host
  double decode_host_s = 0;     ///< the rest of decode steps: bookkeeping, stop checks
  std::int64_t decode_steps = 0;
  std::int64_t graph_steps = 0;  ///< decode steps replayed from a CUDA graph (always counted)
};

/// A request's generator, and the reference sampler on the host. Owns its generator.
class TokenSampler {
 public:
  explicit TokenSampler(std::uint64_t seed) : rng_(seed) {}
  /// Picks a token from one row of float32 logits (`vocab` floats at `logits`) in double
  /// precision; draws one uniform() unless greedy. Returns {token, logprob}.
  std::pair<std::int64_t, float> sample(const float* logits, std::int64_t vocab,
                                        const SamplingParams& params);
  /// The next uniform number in [0, 1) (53 bits of the generator).
  double uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 rng_;
};

struct SampledToken {
  std::int64_t token = 0;
  float logprob = 0;
};

/// One token per row of `logits` [B, vocab] (float32, bf16 or fp16; any device), chosen on the
/// logits' device; one copy of B ids and logprobs to the host. Row b follows params[b] and, unless
/// greedy (temperature 0: argmax, lowest id on ties), the uniform u = uniforms[b] in [0, 1): the
/// same rule as TokenSampler::sample, in float32: candidates by probability (ties: lower id
/// first), the top_k first, then the shortest prefix whose mass (renormalised over those) reaches
/// top_p; the first candidate whose running mass exceeds u times the kept mass. logprob: log
/// softmax(logits / temperature)[token] before truncation (raw logits when greedy).
std::vector<SampledToken> sample_rows(const at::Tensor& logits,
                                      const std::vector<const SamplingParams*>& params,
                                      const std::vector<double>& uniforms);

class GenerationEngine {
 public:
  static Expected<GenerationEngine> create(std::shared_ptr<const Transformer> model,
                                           std::int64_t policy_version,
                                           const EngineOptions& options);

  /// Queues a request. Errors (kInvalidInput): empty prompt, max_new_tokens < 1, a duplicate
  /// id, bad sampling values, stop strings without a detokenizer, or "model.request_too_long" when
  /// prompt + max_new_tokens exceeds max_seq_len (the message gives both numbers and the KV bytes
  /// it would need).
  Status submit(GenerationRequest request);
  /// One engine step (see above); the requests that finished in it.
  Expected<std::vector<GenerationResult>> step();
  /// Steps until nothing is waiting or running; every result, in finishing order.
  Expected<std::vector<GenerationResult>> run();
  /// Token ids -> bytes (e.g. Tokenizer::decode), concatenative: the text of a sequence is the
  /// text of its pieces joined. Only stop strings use it; the engine itself stays tokenizer-free.
  using Detokenizer = std::function<std::string(std::span<const std::int64_t>)>;
  void set_detokenizer(Detokenizer detokenize) { detokenize_ = std::move(detokenize); }

  /// Installs new weights (same architecture) before the next step.
  Status swap_weights(std::shared_ptr<const Transformer> model, std::int64_t policy_version);

  std::size_t running() const;
  std::size_t waiting() const { return waiting_.size(); }
  std::int64_t slots() const { return cache_.slots; }
  std::int64_t kv_cache_bytes() const { return cache_.bytes(); }
  std::int64_t policy_version() const { return version_; }
  /// Zero unless EngineOptions::time_phases (graph_steps always counts).
  const EnginePhaseTimes& phase_times() const { return times_; }
  /// CUDA graphs captured so far (0 when they do not apply; see EngineOptions::cuda_graphs).
  std::size_t cuda_graphs_captured() const { return graphs_ ? graphs_->captured() : 0; }

 private:
  struct Active {
    GenerationRequest request;
    TokenSampler sampler;
    GenerationResult result;
    std::int64_t cached = 0;  // tokens in the slot's cache
  };
  GenerationEngine() = default;
  Expected<bool> admit(Active& a, std::int64_t slot);         // prefill; true when already finished
  bool record(Active& a, std::int64_t token, float logprob);  // true when finished

  bool hit_stop_string(const Active& a) const;

  std::shared_ptr<const Transformer> model_;
  Detokenizer detokenize_;
  std::int64_t version_ = 0;
  EngineOptions options_;
  KvCache cache_;
  std::deque<GenerationRequest> waiting_;
  std::vector<std::unique_ptr<Active>> slots_;  // index = slot; null when free
  EnginePhaseTimes times_;
  std::unique_ptr<DecodeGraphs> graphs_;  // null when CUDA graphs do not apply
};

}  // namespace cuda_agent
