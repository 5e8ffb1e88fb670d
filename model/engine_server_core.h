// The policy engine service's core: one engine thread that owns the model (and its GPU) and one
// GenerationEngine, fed by any number of caller threads (the HTTP handlers of
// model/engine_server.h). Torch-free header: the torch side lives in engine_server_core.cpp.
//
//   ASSIGN_OR_RETURN(auto core, EngineCore::create({.model_dir = dir, .max_batch = 16}));
//   ASSIGN_OR_RETURN(EngineJobPtr job, core->submit(prompt_ids, params));   // any thread
//   if (!job->wait_until(deadline)) core->cancel(job);                      // frees its slot
//   const EngineJobOutcome& out = job->outcome();  // tokens, logprobs, versions, or an error
//
// Continuous batching: the engine thread loops "take new jobs into free slots, apply a pending
// weight swap, one GenerationEngine step, hand out finished jobs". Jobs wait in the core's own
// FIFO until a slot is free (queue depth), so a cancelled queued job never reaches the engine.
//
// Cancellation (a client that went away): GenerationEngine has no cancel call yet, so a running
// job is stopped through the engine's stop strings. Every job carries one private stop string (a
// sentinel of bytes that no UTF-8 text holds: 0xC0, its id in octal as 0xF8..0xFF, 0xC1), and the
// engine's detokenizer appends the sentinels of cancelled jobs to the text it returns for the
// newest tail of each request (not to the "before" text), so a cancelled job ends at its next
// token with kStopString and frees its slot. The user's own stop strings match as before (the
// sentinels are not UTF-8, and the "before" text is unchanged). This depends on how
// GenerationEngine::hit_stop_string calls the detokenizer (the full tail, then the tail without
// its newest token); engine_server_test checks cancellation and stop strings together, and the
// whole mechanism goes once GenerationEngine::cancel(id) exists.
//
// Weights: load_weights() reads a Hugging Face directory into a second Transformer on the
// calling thread (the engine keeps generating meanwhile), then the engine thread installs it
// between two steps (GenerationEngine::swap_weights); the pause is measured and returned.
//
// Threading: every public method is safe from any thread. The GenerationEngine, the model and the
// running jobs belong to the engine thread only; callers and the engine thread share the job
// queue, the pending swap and the counters under one mutex (or atomics for the counters).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/tokenizer.h"

namespace cuda_agent {

struct EngineCoreOptions {
  /// Hugging Face directory: config.json, *.safetensors, tokenizer.json. Required.
  std::string model_dir;
  /// "cpu", "cuda" or "cuda:N". Default: cpu.
  std::string device = "cpu";
  /// "fp32", "bf16", "fp16"; empty: config.json's torch_dtype.
  std::string dtype;
  /// KV-cache slots: requests decoded together. Default: 16.
  std::int64_t max_batch = 16;
  /// Tokens per slot (prompt + generated): the context limit. Default: 4096.
  std::int64_t max_seq_len = 4096;
  /// Prompts are prefilled in chunks of this many tokens. Default: 512.
  std::int64_t prefill_chunk_tokens = 512;
  /// Decode steps replayed from CUDA graphs where they apply (EngineOptions::cuda_graphs).
  bool cuda_graphs = true;
  /// The policy version of the weights in model_dir. Default: 0.
  std::int64_t policy_version = 0;
};

/// Sampling for one job; the fields mean what SamplingParams' do (model/generate.h).
struct EngineSampling {
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t top_k = 0;
  std::uint64_t seed = 0;
  std::int64_t max_new_tokens = 256;
  std::vector<std::int64_t> stop_tokens;
  std::vector<std::string> stop_strings;
};

/// What a job ended with: its tokens, or an error (engine failure, drain deadline, shutdown).
struct EngineJobOutcome {
  std::optional<Error> error;
  std::vector<std::int64_t> tokens;  ///< sampled ids verbatim, the stop token included
  std::vector<float> logprobs;       ///< one per token (model/generate.h's definition)
  /// "stop_token", "stop_string" or "max_new_tokens" (model/generate.h's to_string).
  std::string finish;
  std::int64_t first_policy_version = 0;
  std::int64_t last_policy_version = 0;
  bool cancelled = false;  ///< ended by cancel(): the outcome is not the model's whole answer
};

/// One request in flight. Made by EngineCore::submit; the caller waits on it.
class EngineJob {
 public:
  EngineJob(std::uint64_t id, std::vector<std::int64_t> prompt, EngineSampling params)
      : id_(id), prompt_(std::move(prompt)), params_(std::move(params)) {}
  std::uint64_t id() const { return id_; }
  const std::vector<std::int64_t>& prompt() const { return prompt_; }
  const EngineSampling& params() const { return params_; }
  /// True once the outcome is there; false when `deadline` passed first.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  bool done() const;
  /// Valid once done.
  const EngineJobOutcome& outcome() const { return outcome_; }
  bool cancel_requested() const { return cancel_.load(); }

 private:
  friend class EngineCore;
  bool finish(EngineJobOutcome outcome);  // false when it had finished already
  const std::uint64_t id_;
  const std::vector<std::int64_t> prompt_;
  const EngineSampling params_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  EngineJobOutcome outcome_;
};
using EngineJobPtr = std::shared_ptr<EngineJob>;

/// A snapshot of the engine for /health.
struct EngineHealth {
  std::string status;  ///< "ok", "draining" or "failed" (an engine step failed)
  std::int64_t policy_version = 0;
  std::int64_t queue_depth = 0;  ///< jobs waiting for a slot
  std::int64_t running = 0;      ///< jobs in the engine's slots
  std::int64_t slots = 0;
  std::int64_t max_seq_len = 0;
  std::int64_t steps = 0;        ///< engine steps taken
  std::int64_t max_running = 0;  ///< the most jobs one step has held
  std::int64_t tokens_generated = 0;
  std::int64_t jobs_done = 0;
  std::int64_t jobs_cancelled = 0;
  std::int64_t swaps = 0;
  double last_swap_pause_ms = 0;
};

/// What one weight load did.
struct WeightSwapReport {
  std::int64_t previous_version = 0;
  std::int64_t version = 0;
  double load_ms = 0;  ///< reading the checkpoint into the staged model (generation goes on)
  /// The generation pause: from the end of the last step under the old weights to the end of
  /// the first step under the new ones (swap_ms + that step, which recaptures CUDA graphs); just
  /// swap_ms when nothing was running. Compare with step_before_ms (issue 23: pause <= one
  /// decode step + 20 ms).
  double pause_ms = 0;
  double swap_ms = 0;         ///< GenerationEngine::swap_weights alone
  double step_before_ms = 0;  ///< the last engine step before the swap
};

/// "\xC0" + octal digits (0xF8 + d) + "\xC1": the private stop string of job `id`.
std::string engine_cancel_sentinel(std::uint64_t id);
/// Text of `ids` as the engine's stop strings see it: the tokenizer's bytes; an id the tokenizer
/// does not know becomes U+FFFD. Concatenative, as GenerationEngine::Detokenizer must be.
std::string engine_detokenize(const Tokenizer& tokenizer, std::span<const std::int64_t> ids);
/// The detokenizer the service gives its GenerationEngine: engine_detokenize, then `marker` (the
/// sentinels of cancelled jobs) after the text of a newest tail, not after the "before" text that
/// follows it (see "Cancellation" above). The engine thread's own.
class EngineStopText {
 public:
  explicit EngineStopText(std::shared_ptr<const Tokenizer> tokenizer)
      : tokenizer_(std::move(tokenizer)) {}
  std::string operator()(std::span<const std::int64_t> ids);
  std::string marker;

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;
  const std::int64_t* last_data_ = nullptr;
  std::size_t last_size_ = 0;
};

/// The ids generation stops at unless a request says otherwise: config.json's eos_token_id and
/// the tokenizer's <|im_end|> and <|endoftext|>, each once.
std::vector<std::int64_t> engine_default_stop_tokens(const Tokenizer& tokenizer,
                                                     std::optional<std::int64_t> eos_token_id);

class EngineCore {
 public:
  /// Loads the model and tokenizer, makes the KV cache and starts the engine thread. Errors:
  /// those of Transformer::load, Tokenizer::load and GenerationEngine::create; kUnavailable
  /// "model.no_gpu" for a cuda device without one.
  static Expected<std::unique_ptr<EngineCore>> create(const EngineCoreOptions& options);
  /// Stops the engine thread; unfinished jobs end with "engine.stopped".
  ~EngineCore();

  /// Queues a job. Errors (kInvalidInput unless said): "engine.empty_prompt",
  /// "engine.bad_token" (an id outside the vocabulary), "engine.bad_sampling",
  /// "engine.context_limit" (prompt + max_new_tokens over max_seq_len; the message names both
  /// and the limit), kUnavailable "engine.draining" after drain(), kUnavailable "engine.failed"
  /// after an engine step failed.
  Expected<EngineJobPtr> submit(std::vector<std::int64_t> prompt, EngineSampling params);
  /// Asks the engine to drop `job`: a queued job ends at once, a running one at its next token
  /// (its slot is then free). Either way the outcome says cancelled. Idempotent.
  void cancel(const EngineJobPtr& job);

  /// Loads `dir` (the running model's architecture, device and dtype) and installs it as
  /// `version` between two engine steps; returns once it is in. Errors: kInvalidInput
  /// "engine.stale_version" when `version` is not newer than the current or a loading one (the
  /// HTTP layer answers 409); Transformer::load's errors; "model.weight_swap_mismatch".
  Expected<WeightSwapReport> load_weights(const std::string& dir, std::int64_t version);

  /// Refuses new jobs from now on; queued and running ones go on.
  void drain();
  /// Waits until no job is queued or running, or `deadline`; true when idle.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  /// Ends every unfinished job with `error` (drain deadline, shutdown).
  void abort_all(const Error& error);

  EngineHealth health() const;
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  std::shared_ptr<const Tokenizer> shared_tokenizer() const { return tokenizer_; }
  std::int64_t max_seq_len() const { return max_seq_len_; }
  std::int64_t vocab_size() const { return vocab_size_; }
  const std::vector<std::int64_t>& default_stop_tokens() const { return default_stop_; }

 private:
  struct Impl;  // the torch side (engine_server_core.cpp)
  EngineCore() = default;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::int64_t max_seq_len_ = 0;
  std::int64_t vocab_size_ = 0;
  std::vector<std::int64_t> default_stop_;
};

}  // namespace cuda_agent
