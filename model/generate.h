// The generation engine: batched requests, each with its own KV-cache slot, decoded together one
// token per step (continuous batching: requests join between steps when a slot is free, and
// leave when they finish, freeing it).
//
//   ASSIGN_OR_RETURN(GenerationEngine engine, GenerationEngine::create(model, /*version=*/0, {}));
//   RETURN_IF_ERROR(engine.submit({.id = 1, .prompt = ids, .params = {.temperature = 0}}));
//   ASSIGN_OR_RETURN(std::vector<GenerationResult> done, engine.run());
//
// A step: (1) admits waiting requests, in order, into free slots (or their session's kept one:
// see "Sessions"), prefilling each prompt in chunks of `prefill_chunk_tokens` and sampling its
// first token from the last chunk's logits; (2) runs one batched decode over every other running
// request (one forward of [B, 1] tokens) and samples each row; (3) returns the requests that
// finished in this step.
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
// Sessions (prefix reuse across the turns of an episode): a request with a non-empty `session`
// leaves its KV cache behind when it finishes: its slot, holding the K/V of the prompt and of
// every generated token but the last (the last sampled token is never fed back), is kept under
// the session instead of freed. The session's next request takes that slot and prefills only the
// tokens after the longest common prefix of its prompt and the kept tokens; in the usual case
// (previous prompt + completion + new tool output) that is the completion's last token and the
// tool output. A prompt that diverges reuses the common prefix, and the positions after it are
// overwritten (until then they are masked, as past-the-end keys always are); one that matches
// the kept tokens entirely, or is a prefix of them, still prefills its last token (whose logits
// give the first sampled one). Results are what the same requests give without sessions, token
// for token with the same seeds: the logits differ by rounding only (a prefix computed in other
// chunks, as in GreedyIsDeterministicAndIndependentOfChunkingAndBatching).
// No reuse (a full prefill into the kept slot) where it would change results:
//  - dynamic NTK RoPE ("dynamic") with a prompt longer than max_position_embeddings: a prompt's
//    keys are rotated for its whole length (transformers' one-call prefill), the kept keys
//    carry the rotation of an earlier, shorter length; up to that length both rotations are the
//    unscaled one and reuse is exact;
//  - K/V computed under another policy version: swap_weights drops every kept cache, and a
//    request that ran across a swap is not kept, unless keep_sessions_across_swaps.
// Room: a kept cache lives in a slot no request is using, so it costs no memory (the cache is
// allocated at create) and never delays a request: a request that finds no free slot reclaims
// the least recently kept one (one whose session has no waiting request, if there is such).
// At most `session_slots` are kept; a session has at most one (its latest finished request's).
// Two requests of one session that run together: the second finds the slot taken and prefills
// in full; the one that finishes last is kept. stats() counts tokens prefilled and reused.
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
  /// The episode this request continues (e.g. its id): the engine keeps the KV cache of a
  /// finished request under it and the session's next request reuses its common prefix (see
  /// "Sessions" above). Empty: no reuse, the slot is freed at the end. Default: empty.
  std::string session;
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
  /// Prompt tokens whose K/V came from the session's kept cache instead of a prefill (0 without
  /// a session or a match).
  std::int64_t reused_tokens = 0;
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
  /// Finished sessions whose KV caches are kept, at most (least recently kept dropped first).
  /// Kept caches occupy idle slots only and are reclaimed as soon as a request needs the slot, so
  /// a larger bound costs neither memory nor latency; a smaller one only reuses less. 0: no
  /// session is kept (every request prefills in full). -1: as many as the cache has slots.
  /// Default: -1.
  std::int64_t session_slots = -1;
  /// Keeps session caches across swap_weights: the next turn then attends to K/V computed by
  /// older weights (as a request in flight during a swap does), which the learner's recomputed
  /// logprobs will not match. false (the default): a swap drops every kept cache and a request
  /// that ran across one is not kept, so results never depend on whether a cache was reused.
  bool keep_sessions_across_swaps = false;
};

/// Counters since create (stats()).
struct EngineStats {
  std::int64_t prefilled_tokens = 0;  ///< prompt tokens run through prefill forwards
  std::int64_t reused_tokens = 0;     ///< prompt tokens whose K/V a kept session cache gave
  std::int64_t session_hits = 0;      ///< requests that reused at least one kept token
  std::int64_t session_misses = 0;    ///< requests with a session that reused nothing
  std::int64_t sessions_kept = 0;     ///< finished requests whose cache was kept
  /// Kept caches reclaimed for another request's slot or dropped by the session_slots bound.
  std::int64_t sessions_evicted = 0;
  /// Kept caches dropped by drop_session, by a weight swap, or replaced by a newer one of the
  /// same session.
  std::int64_t sessions_dropped = 0;
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

  /// Drops the kept cache of `session` (e.g. when its episode ends) and frees its slot. Returns
  /// whether one was kept.
  bool drop_session(const std::string& session);

  std::size_t running() const;
  /// Session caches kept now.
  std::size_t kept_sessions() const;
  EngineStats stats() const { return stats_; }
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
    // The oldest policy version whose K/V the slot holds (a reused prefix may be older).
    std::int64_t cache_version = 0;
  };
  // A finished session's cache, kept in an idle slot.
  struct Kept {
    std::string session;
    std::vector<std::int64_t> tokens;  // the ids at positions 0.. of the slot's cache
    std::int64_t cache_version = 0;    // as Active::cache_version
    std::uint64_t kept_at = 0;         // clock_ when kept: the LRU order
  };
  GenerationEngine() = default;
  // Prefills a's prompt into `slot`, reusing `kept` (the slot's kept cache, or null) where it
  // applies; true when the request already finished.
  Expected<bool> admit(Active& a, std::int64_t slot, const Kept* kept);
  bool record(Active& a, std::int64_t token, float logprob);  // true when finished
  // The slot for `r`: its session's kept one, a free one, or a reclaimed kept one; -1 if none.
  std::int64_t pick_slot(const GenerationRequest& r);
  // `a`, which ran in `slot`, finished: keeps its cache under its session or leaves the slot
  // free. Returns its result.
  GenerationResult finish(std::unique_ptr<Active> a, std::int64_t slot);
  // Whether a prompt of n tokens may start from a kept cache (see "Sessions" above).
  bool reuse_allowed(std::int64_t n) const;

  bool hit_stop_string(const Active& a) const;

  std::shared_ptr<const Transformer> model_;
  Detokenizer detokenize_;
  std::int64_t version_ = 0;
  EngineOptions options_;
  KvCache cache_;
  std::deque<GenerationRequest> waiting_;
  std::vector<std::unique_ptr<Active>> slots_;  // index = slot; null when free
  std::vector<std::unique_ptr<Kept>> kept_;     // index = slot; set only where slots_ is null
  std::int64_t session_limit_ = 0;              // session_slots resolved at create
  std::uint64_t clock_ = 0;
  EngineStats stats_;
  EnginePhaseTimes times_;
  std::unique_ptr<DecodeGraphs> graphs_;  // null when CUDA graphs do not apply
};

}  // namespace cuda_agent
