#include "model/engine_server_core.h"

#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <thread>
#include <unordered_map>

#include "model/generate.h"
#include "model/transformer.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Error invalid(const std::string& code, const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, code, message);
}

Expected<at::Device> parse_device(const std::string& name) {
  if (name != "cpu" && name != "cuda" && name.rfind("cuda:", 0) != 0)
    return invalid("cli.usage", "--device: cpu, cuda or cuda:N (got '" + name + "')");
  if (name != "cpu" && !torch::cuda::is_available())
    return make_error(ErrorCategory::kUnavailable, "model.no_gpu",
                      "--device " + name + ": no GPU visible to libtorch");
  try {
    return at::Device(name);
  } catch (const c10::Error& e) {
    return invalid("cli.usage", "--device " + name + ": " + e.what_without_backtrace());
  }
}

}  // namespace

std::string engine_cancel_sentinel(std::uint64_t id) {
  std::string digits;
  do {
    digits.push_back(char(0xF8 + (id & 7)));
    id >>= 3;
  } while (id != 0);
  std::reverse(digits.begin(), digits.end());
  return "\xC0" + digits + "\xC1";
}

std::string engine_detokenize(const Tokenizer& tokenizer, std::span<const std::int64_t> ids) {
  const std::int64_t vocab = std::int64_t(tokenizer.vocab_size());
  std::vector<TokenId> v;
  v.reserve(ids.size());
  bool in_range = true;
  for (auto id : ids) {
    in_range = in_range && id >= 0 && id < vocab;
    v.push_back(TokenId(id));
  }
  if (in_range) {
    if (auto text = tokenizer.decode(v)) return std::move(*text);
  }
  std::string out;  // one id at a time: an unknown id is U+FFFD
  for (auto id : ids) {
    const TokenId one = TokenId(id);
    auto t = id >= 0 && id < vocab ? tokenizer.decode(std::span<const TokenId>(&one, 1))
                                   : Expected<std::string>(Error{});
    out += t ? *t : std::string("\xEF\xBF\xBD");
  }
  return out;
}

std::vector<std::int64_t> engine_default_stop_tokens(const Tokenizer& tokenizer,
                                                     std::optional<std::int64_t> eos_token_id) {
  std::vector<std::int64_t> out;
  if (eos_token_id) out.push_back(*eos_token_id);
  for (const char* s : {"<|im_end|>", "<|endoftext|>"}) {
    auto id = tokenizer.token_to_id(s);
    if (id && std::find(out.begin(), out.end(), std::int64_t(*id)) == out.end()) out.push_back(*id);
  }
  return out;
}

std::string EngineStopText::operator()(std::span<const std::int64_t> ids) {
  std::string text = engine_detokenize(*tokenizer_, ids);
  // hit_stop_string asks for the newest tail, then the same tail without its newest token.
  const bool before_call = ids.data() == last_data_ && ids.size() + 1 == last_size_;
  last_data_ = ids.data();
  last_size_ = before_call ? 0 : ids.size();
  if (!before_call) text += marker;
  return text;
}

// --- EngineJob -----------------------------------------------------------------------------

bool EngineJob::wait_until(Clock::time_point deadline) {
  std::unique_lock lk(mu_);
  return cv_.wait_until(lk, deadline, [&] { return done_; });
}

bool EngineJob::done() const {
  std::lock_guard lk(mu_);
  return done_;
}

bool EngineJob::finish(EngineJobOutcome outcome) {
  {
    std::lock_guard lk(mu_);
    if (done_) return false;  // the first outcome stands (abort_all, then the engine's result)
    outcome_ = std::move(outcome);
    done_ = true;
  }
  cv_.notify_all();
  return true;
}

// --- EngineCore ----------------------------------------------------------------------------

struct EngineCore::Impl {
  struct PendingSwap {
    std::shared_ptr<const Transformer> model;
    std::int64_t version = 0;
    bool done = false;
    Status status;
    double swap_ms = 0;         // swap_weights itself
    double pause_ms = 0;        // swap_ms + the first step after it (graphs recaptured there)
    double step_before_ms = 0;  // the last step before it
    std::int64_t previous_version = 0;
  };

  EngineCoreOptions options;
  at::Device device = at::kCPU;
  at::ScalarType dtype = at::kFloat;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::optional<GenerationEngine> engine;  // the engine thread's after create
  std::thread thread;

  // Shared with callers, under mu.
  mutable std::mutex mu;
  std::condition_variable wake;  // the engine thread: new job, cancel, swap, stop
  std::condition_variable idle;  // wait_idle
  std::deque<EngineJobPtr> queue;
  std::shared_ptr<PendingSwap> swap;
  std::condition_variable swap_done;
  std::int64_t in_engine = 0;
  bool stop = false;
  bool draining = false;
  bool failed = false;

  // Jobs in the engine's slots: the engine thread changes it under `mu` and reads it without.
  std::unordered_map<std::uint64_t, EngineJobPtr> running;
  // The engine thread's own.
  std::unique_ptr<EngineStopText> stop_text;  // the engine's detokenizer; marker: cancelled jobs

  std::atomic<std::uint64_t> next_id{1};
  std::mutex load_mu;  // one weight load at a time
  std::atomic<std::int64_t> version{0};
  std::atomic<std::int64_t> steps{0}, max_running{0}, tokens{0}, jobs_done{0}, jobs_cancelled{0},
      swaps{0};
  std::atomic<double> last_pause_ms{0};

  void finish_job(const EngineJobPtr& job, EngineJobOutcome out) {
    out.cancelled = job->cancel_requested();
    if (!job->finish(std::move(out))) return;
    jobs_done.fetch_add(1);
    if (job->cancel_requested()) jobs_cancelled.fetch_add(1);
  }

  void fail_everything(const Error& e) {
    std::deque<EngineJobPtr> queued;
    {
      std::lock_guard lk(mu);
      failed = true;
      queued.swap(queue);
      in_engine = 0;
      if (swap) {  // a load waiting for the engine thread
        swap->status = e;
        swap->done = true;
        swap.reset();
      }
    }
    swap_done.notify_all();
    std::unordered_map<std::uint64_t, EngineJobPtr> was_running;
    {
      std::lock_guard lk(mu);
      was_running.swap(running);
    }
    for (auto& j : queued) finish_job(j, {.error = e});
    for (auto& [id, j] : was_running) finish_job(j, {.error = e});
    idle.notify_all();
  }

  void complete_swap(const std::shared_ptr<PendingSwap>& sp, double first_step_ms) {
    sp->pause_ms = sp->swap_ms + first_step_ms;
    if (sp->status) last_pause_ms.store(sp->pause_ms);
    {
      std::lock_guard lk(mu);
      sp->done = true;
    }
    swap_done.notify_all();
  }

  void loop();
};

void EngineCore::Impl::loop() {
  torch::NoGradGuard no_grad;  // per thread
  // The model's device current on this thread (cuda:N), for CUDA graph capture and streams.
  c10::DeviceGuard device_guard(device);
  const std::int64_t slots = engine->slots();
  double last_step_ms = 0;
  std::shared_ptr<PendingSwap> measuring;  // swapped in; its pause ends with the next step
  for (;;) {
    std::vector<EngineJobPtr> admitted;
    std::shared_ptr<PendingSwap> pending;
    {
      std::unique_lock lk(mu);
      wake.wait(lk, [&] {
        return stop || swap || !running.empty() ||
               (!queue.empty() && std::int64_t(running.size()) < slots);
      });
      if (stop) break;
      pending = std::move(swap);
      swap.reset();
      while (!queue.empty() && std::int64_t(running.size() + admitted.size()) < slots) {
        admitted.push_back(std::move(queue.front()));
        queue.pop_front();
      }
      in_engine = std::int64_t(running.size() + admitted.size());
    }
    if (pending) {  // between two steps
      const auto t0 = Clock::now();
      pending->previous_version = engine->policy_version();
      pending->status = engine->swap_weights(pending->model, pending->version);
      pending->swap_ms = ms_since(t0);
      pending->step_before_ms = last_step_ms;
      if (pending->status) {
        version.store(pending->version);
        swaps.fetch_add(1);
      }
      pending->model.reset();  // the engine holds it now (or it was refused)
      if (pending->status && (!running.empty() || !admitted.empty())) {
        measuring = std::move(pending);  // done after the next step
      } else {
        complete_swap(pending, 0);
      }
    }
    for (auto& job : admitted) {
      GenerationRequest r{.id = job->id(), .prompt = job->prompt()};
      const EngineSampling& p = job->params();
      r.params = {.temperature = p.temperature,
                  .top_p = p.top_p,
                  .top_k = p.top_k,
                  .seed = p.seed,
                  .max_new_tokens = p.max_new_tokens,
                  .stop_tokens = p.stop_tokens,
                  .stop_strings = p.stop_strings};
      r.params.stop_strings.push_back(engine_cancel_sentinel(job->id()));
      if (Status s = engine->submit(std::move(r)); !s) {
        finish_job(job, {.error = s.error()});
      } else {
        std::lock_guard lk(mu);
        running.emplace(job->id(), std::move(job));
      }
    }
    if (running.empty()) {
      if (measuring) complete_swap(measuring, 0);
      measuring.reset();
      std::lock_guard lk(mu);
      in_engine = 0;
      idle.notify_all();
      continue;
    }
    stop_text->marker.clear();
    for (auto& [id, job] : running) {
      if (job->cancel_requested()) stop_text->marker += engine_cancel_sentinel(id);
    }
    max_running.store(std::max<std::int64_t>(max_running.load(), std::int64_t(running.size())));
    const auto step_t0 = Clock::now();
    Expected<std::vector<GenerationResult>> done = engine->step();
    last_step_ms = ms_since(step_t0);
    steps.fetch_add(1);
    if (measuring) complete_swap(measuring, last_step_ms);
    measuring.reset();
    if (!done) {
      std::fprintf(stderr, "cuda-agent-engine: engine step failed: %s\n",
                   done.error().to_string().c_str());
      fail_everything(done.error());
      std::unique_lock lk(mu);  // serve nothing more; wait for the end
      wake.wait(lk, [&] { return stop; });
      break;
    }
    for (GenerationResult& r : *done) {
      auto it = running.find(r.id);
      if (it == running.end()) continue;
      EngineJobPtr job = std::move(it->second);
      {
        std::lock_guard lk(mu);
        running.erase(it);
      }
      tokens.fetch_add(std::int64_t(r.tokens.size()));
      finish_job(job, {.tokens = std::move(r.tokens),
                       .logprobs = std::move(r.logprobs),
                       .finish = to_string(r.finish),
                       .first_policy_version = r.first_policy_version,
                       .last_policy_version = r.last_policy_version});
    }
    std::lock_guard lk(mu);
    in_engine = std::int64_t(running.size());
    if (queue.empty() && running.empty()) idle.notify_all();
  }
  const Error stopped =
      make_error(ErrorCategory::kUnavailable, "engine.stopped", "the engine is shutting down");
  std::unordered_map<std::uint64_t, EngineJobPtr> was_running;
  {
    std::lock_guard lk(mu);
    was_running.swap(running);
  }
  for (auto& [id, j] : was_running) finish_job(j, {.error = stopped});
}

Expected<std::unique_ptr<EngineCore>> EngineCore::create(const EngineCoreOptions& o) {
  if (o.max_batch < 1 || o.max_seq_len < 2)
    return invalid("cli.usage", "--max-batch must be >= 1 and --max-seq-len >= 2");
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  ASSIGN_OR_RETURN(impl->device, parse_device(o.device));
  LoadOptions lo{.device = impl->device};
  if (!o.dtype.empty()) {
    ASSIGN_OR_RETURN(at::ScalarType t, parse_dtype_name(o.dtype));
    lo.dtype = t;
  }
  c10::DeviceGuard device_guard(impl->device);
  torch::NoGradGuard no_grad;
  ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::load(o.model_dir + "/tokenizer.json"));
  impl->tokenizer = std::make_shared<const Tokenizer>(std::move(tok));
  ASSIGN_OR_RETURN(Transformer model, Transformer::load(o.model_dir, lo));
  auto shared = std::make_shared<const Transformer>(std::move(model));
  impl->dtype = shared->dtype();
  ASSIGN_OR_RETURN(GenerationEngine engine,
                   GenerationEngine::create(shared, o.policy_version,
                                            {.max_batch = o.max_batch,
                                             .max_seq_len = o.max_seq_len,
                                             .prefill_chunk_tokens = o.prefill_chunk_tokens,
                                             .cuda_graphs = o.cuda_graphs}));
  impl->engine.emplace(std::move(engine));
  Impl* raw = impl.get();
  impl->stop_text = std::make_unique<EngineStopText>(impl->tokenizer);
  impl->engine->set_detokenizer(
      [raw](std::span<const std::int64_t> ids) { return (*raw->stop_text)(ids); });
  impl->version.store(o.policy_version);

  std::unique_ptr<EngineCore> core(new EngineCore());
  core->tokenizer_ = impl->tokenizer;
  core->max_seq_len_ = o.max_seq_len;
  core->vocab_size_ = shared->config().vocab_size;
  core->default_stop_ = engine_default_stop_tokens(*impl->tokenizer, shared->config().eos_token_id);
  shared.reset();  // the engine holds the model
  core->impl_ = std::move(impl);
  core->impl_->thread = std::thread([raw] { raw->loop(); });
  return core;
}

EngineCore::~EngineCore() {
  if (!impl_) return;
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  abort_all(make_error(ErrorCategory::kUnavailable, "engine.stopped", "the engine stopped"));
  std::lock_guard lk(impl_->mu);
  if (impl_->swap) {
    impl_->swap->status = make_error(ErrorCategory::kUnavailable, "engine.stopped", "stopped");
    impl_->swap->done = true;
    impl_->swap_done.notify_all();
  }
}

Expected<EngineJobPtr> EngineCore::submit(std::vector<std::int64_t> prompt, EngineSampling p) {
  if (prompt.empty()) return invalid("engine.empty_prompt", "the prompt has no tokens");
  for (auto t : prompt) {
    if (t < 0 || t >= vocab_size_)
      return invalid("engine.bad_token", "prompt token " + std::to_string(t) +
                                             " is outside the vocabulary of " +
                                             std::to_string(vocab_size_));
  }
  if (p.max_new_tokens < 1) return invalid("engine.bad_sampling", "max_tokens must be >= 1");
  if (!(p.temperature >= 0) || !(p.top_p > 0 && p.top_p <= 1) || p.top_k < 0)
    return invalid("engine.bad_sampling", "temperature >= 0, top_p in (0, 1], top_k >= 0");
  for (const auto& s : p.stop_strings)
    if (s.empty()) return invalid("engine.bad_sampling", "an empty stop string");
  for (auto t : p.stop_tokens)
    if (t < 0 || t >= vocab_size_)
      return invalid("engine.bad_token",
                     "stop token " + std::to_string(t) + " is outside the vocabulary");
  const std::int64_t need = std::int64_t(prompt.size()) + p.max_new_tokens;
  if (need > max_seq_len_) {
    return invalid("engine.context_limit",
                   "prompt " + std::to_string(prompt.size()) + " tokens + max_tokens " +
                       std::to_string(p.max_new_tokens) + " = " + std::to_string(need) +
                       " exceeds the context limit of " + std::to_string(max_seq_len_) + " tokens");
  }
  auto job =
      std::make_shared<EngineJob>(impl_->next_id.fetch_add(1), std::move(prompt), std::move(p));
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->failed)
      return make_error(ErrorCategory::kUnavailable, "engine.failed",
                        "an engine step failed; the engine serves nothing more");
    if (impl_->draining || impl_->stop)
      return make_error(ErrorCategory::kUnavailable, "engine.draining",
                        "the engine is draining: no new requests");
    impl_->queue.push_back(job);
  }
  impl_->wake.notify_one();
  return job;
}

void EngineCore::cancel(const EngineJobPtr& job) {
  if (job->cancel_.exchange(true)) return;
  bool was_queued = false;
  {
    std::lock_guard lk(impl_->mu);
    auto it = std::find(impl_->queue.begin(), impl_->queue.end(), job);
    if (it != impl_->queue.end()) {
      impl_->queue.erase(it);
      was_queued = true;
    }
  }
  if (was_queued) {
    impl_->finish_job(job, {});
    impl_->idle.notify_all();
  }
  impl_->wake.notify_one();
}

Expected<WeightSwapReport> EngineCore::load_weights(const std::string& dir, std::int64_t version) {
  std::lock_guard load_lock(impl_->load_mu);
  const std::int64_t current = impl_->version.load();
  if (version <= current) {
    return invalid("engine.stale_version", "weights version " + std::to_string(version) +
                                               " is not newer than the loaded version " +
                                               std::to_string(current));
  }
  const auto t0 = Clock::now();
  torch::NoGradGuard no_grad;
  c10::DeviceGuard device_guard(impl_->device);
  ASSIGN_OR_RETURN(Transformer staged,
                   Transformer::load(dir, {.device = impl_->device, .dtype = impl_->dtype}));
  auto swap = std::make_shared<Impl::PendingSwap>();
  swap->model = std::make_shared<const Transformer>(std::move(staged));
  swap->version = version;
  WeightSwapReport report{.version = version, .load_ms = ms_since(t0)};
  {
    std::unique_lock lk(impl_->mu);
    if (impl_->stop || impl_->failed)
      return make_error(ErrorCategory::kUnavailable, "engine.stopped", "the engine is not running");
    impl_->swap = swap;
    impl_->wake.notify_one();
    impl_->swap_done.wait(lk, [&] { return swap->done; });
  }
  if (!swap->status) return swap->status.error();
  report.previous_version = swap->previous_version;
  report.pause_ms = swap->pause_ms;
  report.swap_ms = swap->swap_ms;
  report.step_before_ms = swap->step_before_ms;
  std::printf(
      "cuda-agent-engine: weights version %lld (from %lld) loaded from %s in %.1f ms; "
      "generation paused %.3f ms (swap %.3f ms + the first step after it; a step before "
      "it took %.3f ms)\n",
      (long long)version, (long long)report.previous_version, dir.c_str(), report.load_ms,
      report.pause_ms, report.swap_ms, report.step_before_ms);
  std::fflush(stdout);
  return report;
}

void EngineCore::drain() {
  std::lock_guard lk(impl_->mu);
  impl_->draining = true;
}

bool EngineCore::wait_idle(Clock::time_point deadline) {
  std::unique_lock lk(impl_->mu);
  return impl_->idle.wait_until(lk, deadline, [&] {
    return impl_->failed || (impl_->queue.empty() && impl_->in_engine == 0);
  });
}

void EngineCore::abort_all(const Error& error) {
  std::deque<EngineJobPtr> queued;
  std::vector<EngineJobPtr> running;
  {
    std::lock_guard lk(impl_->mu);
    queued.swap(impl_->queue);
    for (auto& [id, j] : impl_->running) running.push_back(j);
  }
  // Running jobs end now for their callers; their slots free at their next token.
  for (auto& j : running) j->cancel_.store(true);
  for (auto& j : queued) impl_->finish_job(j, {.error = error});
  for (auto& j : running) impl_->finish_job(j, {.error = error});
  impl_->wake.notify_one();
  impl_->idle.notify_all();
}

EngineHealth EngineCore::health() const {
  EngineHealth h;
  {
    std::lock_guard lk(impl_->mu);
    h.status = impl_->failed ? "failed" : impl_->draining ? "draining" : "ok";
    h.queue_depth = std::int64_t(impl_->queue.size());
    h.running = impl_->in_engine;
  }
  h.policy_version = impl_->version.load();
  h.slots = impl_->engine->slots();
  h.max_seq_len = max_seq_len_;
  h.steps = impl_->steps.load();
  h.max_running = impl_->max_running.load();
  h.tokens_generated = impl_->tokens.load();
  h.jobs_done = impl_->jobs_done.load();
  h.jobs_cancelled = impl_->jobs_cancelled.load();
  h.swaps = impl_->swaps.load();
  h.last_swap_pause_ms = impl_->last_pause_ms.load();
  return h;
}

}  // namespace cuda_agent
