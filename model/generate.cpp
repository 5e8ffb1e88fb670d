#include "model/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace cuda_agent {
namespace {

Error invalid(const std::string& code, const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, code, message);
}

// c10::Error (a CUDA OOM included) becomes an Error here, once.
template <class F>
auto torch_call(const char* what, F&& f) -> Expected<decltype(f())> {
  try {
    return f();
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    const bool oom = msg.find("out of memory") != std::string::npos;
    return make_error(oom ? ErrorCategory::kUnavailable : ErrorCategory::kInternal,
                      oom ? "model.out_of_memory" : "model.torch_error",
                      std::string(what) + ": " + msg);
  }
}

}  // namespace

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStopToken: return "stop_token";
    case FinishReason::kStopString: return "stop_string";
    case FinishReason::kMaxNewTokens: break;
  }
  return "max_new_tokens";
}

std::pair<std::int64_t, float> TokenSampler::sample(const float* logits, std::int64_t vocab,
                                                    const SamplingParams& p) {
  const bool greedy = p.temperature <= 0;
  const double inv_t = greedy ? 1.0 : 1.0 / p.temperature;
  double max_v = -INFINITY;
  std::int64_t argmax = 0;
  for (std::int64_t i = 0; i < vocab; ++i) {
    if (logits[i] > max_v) {
      max_v = logits[i];
      argmax = i;
    }
  }
  double sum = 0;
  for (std::int64_t i = 0; i < vocab; ++i) sum += std::exp((double(logits[i]) - max_v) * inv_t);
  const double log_z = std::log(sum);
  auto logprob = [&](std::int64_t i) { return float((double(logits[i]) - max_v) * inv_t - log_z); };
  if (greedy) return {argmax, logprob(argmax)};

  // Candidates by probability, highest first (ties: lower id first).
  std::vector<std::int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  auto by_prob = [&](std::int64_t a, std::int64_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  std::int64_t keep = vocab;
  if (p.top_k > 0 && p.top_k < vocab) {
    keep = p.top_k;
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), by_prob);
  }
  if (p.top_p < 1.0) {
    // The smallest prefix (by probability, renormalised over the top-k survivors) reaching
    // top_p. Sorted lazily, 64 then x4 at a time: a nucleus is usually far smaller than the
    // vocabulary, and the order is total (ties by id), so the result equals a full sort's.
    double kept_mass = 1.0;
    if (keep < vocab) {
      kept_mass = 0;
      for (std::int64_t i = 0; i < keep; ++i) kept_mass += std::exp(double(logprob(order[i])));
    }
    std::int64_t sorted_n = keep < vocab ? keep : 0;
    double cum = 0;
    std::int64_t n = 0;
    while (n < keep) {
      if (n == sorted_n) {
        sorted_n = std::min(keep, std::max<std::int64_t>(64, sorted_n * 4));
        std::partial_sort(order.begin(), order.begin() + sorted_n, order.begin() + keep, by_prob);
      }
      cum += std::exp(double(logprob(order[n]))) / kept_mass;
      ++n;
      if (cum >= p.top_p) break;
    }
    keep = std::max<std::int64_t>(n, 1);
  }
  double total = 0;
  for (std::int64_t i = 0; i < keep; ++i) total += std::exp(double(logprob(order[i])));
  const double u = uniform() * total;
  double acc = 0;
  std::int64_t pick = order[keep - 1];
  for (std::int64_t i = 0; i < keep; ++i) {
    acc += std::exp(double(logprob(order[i])));
    if (u < acc) {
      pick = order[i];
      break;
    }
  }
  return {pick, logprob(pick)};
}

std::vector<SampledToken> sample_rows(const at::Tensor& logits,
                                      const std::vector<const SamplingParams*>& params,
                                      const std::vector<double>& uniforms) {
  const std::int64_t B = logits.size(0), V = logits.size(1);
  TORCH_CHECK(std::int64_t(params.size()) == B && std::int64_t(uniforms.size()) == B,
              "sample_rows: one params and one uniform per row");
  const auto dev = logits.device();
  auto lf = logits.to(at::kFloat);  // [B, V]
  std::vector<float> inv_t(B, 1.f);
  std::vector<std::int64_t> rows;  // the rows that sample (temperature > 0)
  std::vector<std::int64_t> top_k, truncates;
  std::int64_t truncating = 0;
  std::vector<float> top_p, u;
  for (std::int64_t b = 0; b < B; ++b) {
    const SamplingParams& p = *params[b];
    if (p.temperature <= 0) continue;
    inv_t[b] = float(1.0 / p.temperature);
    rows.push_back(b);
    top_k.push_back(p.top_k > 0 && p.top_k < V ? p.top_k : V);
    top_p.push_back(p.top_p < 1.0 ? float(p.top_p) : 2.f);  // 2: off (never reached)
    truncates.push_back(top_k.back() < V || p.top_p < 1.0);
    truncating += truncates.back();
    u.push_back(float(uniforms[b]));
  }
  auto scaled = rows.empty() ? lf : lf * upload_floats(inv_t, dev).unsqueeze(1);
  auto logp = at::log_softmax(scaled, -1);  // [B, V]
  auto token = lf.argmax(-1);               // [B]: the greedy rows' choice
  if (!rows.empty()) {
    const std::int64_t S = std::int64_t(rows.size());
    auto row_t = upload_longs(rows, dev);
    // Candidates in order: by probability where the row truncates (top-k or top-p), else by id
    // (as TokenSampler: no sort is needed to sample from the whole distribution).
    auto lp_rows = logp.index_select(0, row_t);  // [S, V]
    auto rank = at::arange(V, at::TensorOptions().dtype(at::kLong).device(dev)).view({1, V});
    at::Tensor sorted = lp_rows, order = rank.expand({S, V});
    if (truncating > 0) {
      auto by_prob = lp_rows.sort(/*stable=*/true, -1, /*descending=*/true);
      auto trunc = upload_longs(truncates, dev).view({S, 1}).to(at::kBool);
      sorted = at::where(trunc, std::get<0>(by_prob), lp_rows);
      order = at::where(trunc, std::get<1>(by_prob), order);
    }
    auto probs = sorted.exp();
    auto in_k = rank < upload_longs(top_k, dev).view({S, 1});
    auto pk = probs * in_k;
    // Rank i stays while the mass before it (over the top-k) is below top_p; rank 0 always.
    auto before = (pk.cumsum(-1) - pk) / pk.sum(-1, /*keepdim=*/true);
    auto keep =
        in_k.logical_and(before < upload_floats(top_p, dev).view({S, 1})).logical_or(rank == 0);
    auto kept = probs * keep;
    auto target = upload_floats(u, dev).view({S, 1}) * kept.sum(-1, /*keepdim=*/true);
    auto pick = (kept.cumsum(-1) <= target).sum(-1);  // first rank whose running mass > target
    pick = at::minimum(pick, keep.sum(-1) - 1);       // rounding: at most the last kept rank
    token.index_copy_(0, row_t, order.gather(1, pick.unsqueeze(1)).squeeze(1));
  }
  auto lp = logp.gather(1, token.unsqueeze(1)).squeeze(1);
  // One copy back: ids are exact in double (< 2^53).
  auto host = at::stack({token.to(at::kDouble), lp.to(at::kDouble)}).to(at::kCPU);
  const double* h = host.data_ptr<double>();
  std::vector<SampledToken> out(B);
  for (std::int64_t b = 0; b < B; ++b) out[b] = {std::int64_t(h[b]), float(h[B + b])};
  return out;
}

namespace {
void sync_device(at::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

Expected<GenerationEngine> GenerationEngine::create(std::shared_ptr<const Transformer> model,
                                                    std::int64_t policy_version,
                                                    const EngineOptions& options) {
  if (options.max_batch < 1 || options.max_seq_len < 1 || options.prefill_chunk_tokens < 1) {
    return invalid("model.bad_engine_options",
                   "max_batch, max_seq_len and prefill_chunk_tokens must be positive");
  }
  if (options.session_slots < -1) {
    return invalid("model.bad_engine_options", "session_slots must be -1 (every slot) or >= 0");
  }
  const std::int64_t elem = c10::elementSize(model->dtype());
  const std::int64_t per_slot = model->config().kv_bytes_per_token(elem) * options.max_seq_len;
  std::int64_t slots = options.max_batch;
  if (options.kv_cache_bytes > 0) {
    slots = std::min(slots, options.kv_cache_bytes / per_slot);
    if (slots < 1) {
      return invalid("model.kv_budget", "kv_cache_bytes " + std::to_string(options.kv_cache_bytes) +
                                            " is less than one slot of max_seq_len " +
                                            std::to_string(options.max_seq_len) + " tokens (" +
                                            std::to_string(per_slot) + " bytes)");
    }
  }
  GenerationEngine e;
  e.model_ = std::move(model);
  e.version_ = policy_version;
  e.options_ = options;
  ASSIGN_OR_RETURN(e.cache_, torch_call("allocating the KV cache", [&] {
                     return e.model_->make_cache(slots, options.max_seq_len);
                   }));
  e.slots_.resize(slots);
  e.kept_.resize(slots);
  e.session_limit_ =
      options.session_slots < 0 ? slots : std::min<std::int64_t>(options.session_slots, slots);
  if (options.cuda_graphs && decode_graphs_compiled() && e.model_->device().is_cuda()) {
    e.graphs_ = std::make_unique<DecodeGraphs>(e.cache_.slots, e.cache_.max_seq);
  }
  return e;
}

Status GenerationEngine::submit(GenerationRequest r) {
  const std::string who = "request " + std::to_string(r.id);
  if (r.prompt.empty()) return invalid("model.empty_prompt", who + ": empty prompt");
  if (r.params.max_new_tokens < 1) {
    return invalid("model.bad_sampling", who + ": max_new_tokens must be at least 1");
  }
  if (r.params.top_p <= 0 || r.params.top_p > 1 || r.params.top_k < 0) {
    return invalid("model.bad_sampling", who + ": top_p must be in (0, 1], top_k >= 0");
  }
  if (!r.params.stop_strings.empty() && !detokenize_) {
    return invalid("model.bad_sampling", who + ": stop strings need the engine's detokenizer");
  }
  for (const auto& stop : r.params.stop_strings) {
    if (stop.empty()) return invalid("model.bad_sampling", who + ": empty stop string");
  }
  const std::int64_t vocab = model_->config().vocab_size;
  for (auto t : r.prompt) {
    if (t < 0 || t >= vocab) {
      return invalid("model.bad_token", who + ": token " + std::to_string(t) +
                                            " outside the vocabulary of " + std::to_string(vocab));
    }
  }
  const std::int64_t need = std::int64_t(r.prompt.size()) + r.params.max_new_tokens;
  if (need > options_.max_seq_len) {
    const std::int64_t per_token =
        model_->config().kv_bytes_per_token(c10::elementSize(model_->dtype()));
    return invalid("model.request_too_long",
                   who + ": prompt " + std::to_string(r.prompt.size()) + " + max_new_tokens " +
                       std::to_string(r.params.max_new_tokens) + " = " + std::to_string(need) +
                       " tokens exceeds max_seq_len " + std::to_string(options_.max_seq_len) +
                       " (would need " + std::to_string(need * per_token) + " KV-cache bytes)");
  }
  auto same = [&](std::uint64_t id) { return id == r.id; };
  bool dup =
      std::any_of(waiting_.begin(), waiting_.end(), [&](auto& w) { return same(w.id); }) ||
      std::any_of(slots_.begin(), slots_.end(), [&](auto& a) { return a && same(a->request.id); });
  if (dup) return invalid("model.duplicate_request", who + ": already queued or running");
  waiting_.push_back(std::move(r));
  return Status::ok();
}

std::size_t GenerationEngine::running() const {
  return std::count_if(slots_.begin(), slots_.end(), [](auto& a) { return a != nullptr; });
}

std::size_t GenerationEngine::kept_sessions() const {
  return std::count_if(kept_.begin(), kept_.end(), [](auto& k) { return k != nullptr; });
}

bool GenerationEngine::drop_session(const std::string& session) {
  for (auto& k : kept_) {
    if (k && k->session == session) {
      k.reset();
      stats_.sessions_dropped += 1;
      return true;
    }
  }
  return false;
}

bool GenerationEngine::reuse_allowed(std::int64_t n) const {
  const ModelConfig& c = model_->config();
  return c.rope_scaling.type != RopeType::kDynamic || n <= c.max_position_embeddings;
}

std::int64_t GenerationEngine::pick_slot(const GenerationRequest& r) {
  const std::int64_t S = std::int64_t(slots_.size());
  if (!r.session.empty()) {
    for (std::int64_t s = 0; s < S; ++s) {
      if (kept_[s] && kept_[s]->session == r.session) return s;
    }
  }
  for (std::int64_t s = 0; s < S; ++s) {
    if (!slots_[s] && !kept_[s]) return s;
  }
  // Reclaim the least recently kept cache, sparing those whose session has a request waiting.
  auto waits = [&](const std::string& session) {
    return std::any_of(waiting_.begin(), waiting_.end(),
                       [&](const GenerationRequest& w) { return w.session == session; });
  };
  std::int64_t victim = -1;
  bool victim_waits = true;
  for (std::int64_t s = 0; s < S; ++s) {
    if (!kept_[s]) continue;
    const bool w = waits(kept_[s]->session);
    if (victim < 0 || (victim_waits && !w) ||
        (victim_waits == w && kept_[s]->kept_at < kept_[victim]->kept_at)) {
      victim = s;
      victim_waits = w;
    }
  }
  if (victim >= 0) {
    kept_[victim].reset();
    stats_.sessions_evicted += 1;
  }
  return victim;
}

GenerationResult GenerationEngine::finish(std::unique_ptr<Active> a, std::int64_t slot) {
  slots_[slot].reset();
  const std::string& session = a->request.session;
  if (!session.empty() && session_limit_ > 0 &&
      (options_.keep_sessions_across_swaps || a->cache_version == version_)) {
    // The slot holds the prompt and every sampled token but the last (never fed back).
    auto k = std::make_unique<Kept>();
    k->session = session;
    const auto& p = a->request.prompt;
    const std::int64_t fed_back = a->cached - std::int64_t(p.size());
    k->tokens.reserve(a->cached);
    k->tokens.assign(p.begin(), p.end());
    k->tokens.insert(k->tokens.end(), a->result.tokens.begin(),
                     a->result.tokens.begin() + fed_back);
    k->cache_version = a->cache_version;
    k->kept_at = ++clock_;
    drop_session(session);  // an older cache of the session (a request that ran alongside)
    if (std::int64_t(kept_sessions()) >= session_limit_) {
      std::int64_t lru = -1;
      for (std::int64_t s = 0; s < std::int64_t(kept_.size()); ++s) {
        if (kept_[s] && (lru < 0 || kept_[s]->kept_at < kept_[lru]->kept_at)) lru = s;
      }
      kept_[lru].reset();
      stats_.sessions_evicted += 1;
    }
    kept_[slot] = std::move(k);
    stats_.sessions_kept += 1;
  }
  return std::move(a->result);
}

bool GenerationEngine::record(Active& a, std::int64_t token, float logprob) {
  GenerationResult& r = a.result;
  if (r.tokens.empty()) r.first_policy_version = version_;
  r.last_policy_version = version_;
  r.tokens.push_back(token);
  r.logprobs.push_back(logprob);
  const auto& stops = a.request.params.stop_tokens;
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
    r.finish = FinishReason::kStopToken;
    return true;
  }
  if (hit_stop_string(a)) {
    r.finish = FinishReason::kStopString;
    return true;
  }
  if (std::int64_t(r.tokens.size()) >= a.request.params.max_new_tokens) {
    r.finish = FinishReason::kMaxNewTokens;
    return true;
  }
  return false;
}

// A stop string that completes with the newest token lies within the text of the last
// (its length + 1) tokens, since every token is at least one byte, and ends past the text of
// those tokens without the newest one.
bool GenerationEngine::hit_stop_string(const Active& a) const {
  const auto& stops = a.request.params.stop_strings;
  if (stops.empty()) return false;
  const auto& toks = a.result.tokens;
  std::size_t longest = 0;
  for (const auto& s : stops) longest = std::max(longest, s.size());
  const std::size_t n = std::min(toks.size(), longest + 1);
  std::span<const std::int64_t> tail(toks.data() + toks.size() - n, n);
  const std::string text = detokenize_(tail);
  const std::size_t before = detokenize_(tail.first(n - 1)).size();
  for (const auto& s : stops) {
    const std::size_t from = before >= s.size() ? before - s.size() + 1 : 0;
    if (text.find(s, from) != std::string::npos) return true;
  }
  return false;
}

Expected<bool> GenerationEngine::admit(Active& a, std::int64_t slot, const Kept* kept) {
  const auto t0 = Clock::now();
  const auto& prompt = a.request.prompt;
  const std::int64_t n = std::int64_t(prompt.size());
  const auto dev = model_->device();
  // Positions below `reuse` keep the kept K/V; the rest are (over)written below. The last prompt
  // token is always run: its logits give the first sampled token.
  std::int64_t reuse = 0;
  a.cache_version = version_;
  if (kept != nullptr && reuse_allowed(n)) {
    const std::int64_t m = std::min<std::int64_t>(n - 1, std::int64_t(kept->tokens.size()));
    while (reuse < m && kept->tokens[reuse] == prompt[reuse]) ++reuse;
    if (reuse > 0) a.cache_version = std::min(a.cache_version, kept->cache_version);
  }
  if (!a.request.session.empty()) (reuse > 0 ? stats_.session_hits : stats_.session_misses) += 1;
  stats_.reused_tokens += reuse;
  stats_.prefilled_tokens += n - reuse;
  a.result.reused_tokens = reuse;
  at::Tensor last;
  for (std::int64_t begin = reuse; begin < n; begin += options_.prefill_chunk_tokens) {
    const std::int64_t len = std::min(options_.prefill_chunk_tokens, n - begin);
    std::vector<std::int64_t> chunk(prompt.begin() + begin, prompt.begin() + begin + len);
    // Dynamic RoPE sees the whole prompt in every chunk, as in transformers' one-call prefill.
    ASSIGN_OR_RETURN(last, torch_call("prefill", [&] {
                       return model_->forward(upload_longs(chunk, dev).view({1, len}), &cache_,
                                              {slot}, {begin}, /*last_only=*/true, {n});
                     }));
  }
  a.cached = n;
  const double u = a.request.params.temperature > 0 ? a.sampler.uniform() : 0.0;
  ASSIGN_OR_RETURN(auto draw, torch_call("sampling", [&] {
                     return sample_rows(last.reshape({1, -1}), {&a.request.params}, {u});
                   }));
  if (options_.time_phases) times_.prefill_s += seconds_since(t0);
  return record(a, draw[0].token, draw[0].logprob);
}

Expected<std::vector<GenerationResult>> GenerationEngine::step() {
  std::vector<GenerationResult> finished;
  // Rows to decode: requests that were running before this step.
  std::vector<std::int64_t> rows;
  for (std::int64_t s = 0; s < std::int64_t(slots_.size()); ++s) {
    if (slots_[s]) rows.push_back(s);
  }
  // Admit, in order, while a slot can be found (free, the session's kept one, or reclaimed).
  // Kept caches are never padding-row victims of the decode graphs: those write position
  // max_seq - 1, and a kept cache holds at most max_seq - 1 tokens (prompt + max_new_tokens <=
  // max_seq, the last sampled token not fed back).
  while (!waiting_.empty()) {
    const std::int64_t s = pick_slot(waiting_.front());
    if (s < 0) break;
    GenerationRequest req = std::move(waiting_.front());
    waiting_.pop_front();
    std::unique_ptr<Kept> kept = std::move(kept_[s]);
    if (kept && kept->session != req.session) kept.reset();  // (pick_slot reclaims those)
    const std::uint64_t seed = req.params.seed;
    auto a = std::make_unique<Active>(Active{std::move(req), TokenSampler(seed), {}, 0, 0});
    a->result.id = a->request.id;
    ASSIGN_OR_RETURN(bool done, admit(*a, s, kept.get()));
    if (done) {
      finished.push_back(finish(std::move(a), s));
    } else {
      slots_[s] = std::move(a);
    }
  }
  if (!rows.empty()) {
    const auto t0 = Clock::now();
    const std::int64_t B = std::int64_t(rows.size());
    std::vector<std::int64_t> tokens, starts;
    std::vector<const SamplingParams*> params;
    std::vector<double> uniforms;
    for (auto s : rows) {
      Active& a = *slots_[s];
      tokens.push_back(a.result.tokens.back());
      starts.push_back(a.cached);
      params.push_back(&a.request.params);
      uniforms.push_back(a.request.params.temperature > 0 ? a.sampler.uniform() : 0.0);
    }
    ASSIGN_OR_RETURN(
        at::Tensor logits, torch_call("decode", [&] {
          if (graphs_) {
            at::Tensor l = graphs_->decode(*model_, &cache_, rows, tokens, starts);
            if (l.defined()) return l;
          }
          auto t = upload_longs(tokens, model_->device()).view({B, 1});
          return model_->forward(t, &cache_, rows, starts, /*last_only=*/true).reshape({B, -1});
        }));
    if (graphs_) times_.graph_steps = graphs_->replays();
    Clock::time_point t1;
    if (options_.time_phases) {
      sync_device(model_->device());
      t1 = Clock::now();
      times_.decode_forward_s += std::chrono::duration<double>(t1 - t0).count();
    }
    ASSIGN_OR_RETURN(auto draws,
                     torch_call("sampling", [&] { return sample_rows(logits, params, uniforms); }));
    Clock::time_point t2;
    if (options_.time_phases) {
      t2 = Clock::now();
      times_.decode_sample_s += std::chrono::duration<double>(t2 - t1).count();
    }
    for (std::int64_t i = 0; i < B; ++i) {
      Active& a = *slots_[rows[i]];
      a.cached += 1;
      if (record(a, draws[i].token, draws[i].logprob)) {
        finished.push_back(finish(std::move(slots_[rows[i]]), rows[i]));
      }
    }
    if (options_.time_phases) {
      times_.decode_host_s += seconds_since(t2);
      times_.decode_steps += 1;
    }
  }
  return finished;
}

Expected<std::vector<GenerationResult>> GenerationEngine::run() {
  std::vector<GenerationResult> all;
  while (!waiting_.empty() || running() > 0) {
    ASSIGN_OR_RETURN(auto done, step());
    for (auto& r : done) all.push_back(std::move(r));
  }
  return all;
}

Status GenerationEngine::swap_weights(std::shared_ptr<const Transformer> model,
                                      std::int64_t policy_version) {
  const ModelConfig &a = model_->config(), &b = model->config();
  if (a.model_type != b.model_type || a.attention_bias != b.attention_bias ||
      a.qk_norm != b.qk_norm || a.intermediate_size != b.intermediate_size ||
      a.num_attention_heads != b.num_attention_heads || a.hidden_size != b.hidden_size ||
      a.num_hidden_layers != b.num_hidden_layers ||
      a.num_key_value_heads != b.num_key_value_heads || a.head_dim != b.head_dim ||
      a.vocab_size != b.vocab_size || model->dtype() != model_->dtype() ||
      model->device() != model_->device()) {
    return invalid("model.weight_swap_mismatch",
                   "version " + std::to_string(policy_version) +
                       ": architecture, dtype or device differs from the running model");
  }
  model_ = std::move(model);
  version_ = policy_version;
  if (graphs_) graphs_->clear();  // they hold the old weights' addresses
  if (!options_.keep_sessions_across_swaps) {
    for (auto& k : kept_) {
      if (k) stats_.sessions_dropped += 1;
      k.reset();
    }
  }
  return Status::ok();
}

}  // namespace cuda_agent
