// generate_bench: throughput of the generation engine (model/generate.h).
// Model: random weights in the shape of Qwen2.5-0.5B (24 layers, hidden 896, 14 heads over 2 KV
// heads of 64, SwiGLU 4864, vocab 151936), bf16 on CUDA; without a GPU a 4-layer cut of it in
// fp32 on the CPU with vocab 32000 (figures then only show that the path runs).
// Check first (fp32, tiny model): greedy tokens of 6 requests decoded together equal each one
// decoded alone and the argmax of a full forward over the growing sequence; else exit 1.
// Figures:
//  - prefill tokens/s: one 2048-token prompt (256 on the CPU), time of the engine step that
//    prefills it and samples the first token (median of 3, after a warm-up), in chunks of 512
//    and in one chunk; and the last quarter of such a prompt after the first three quarters
//    were kept by a session (GenerationRequest::session: the cached-prefix attention path that
//    every later turn of an episode takes), new tokens/s;
//  - decode tokens/s at batch 1, 16, 64: B requests of 128-token prompts, 128 greedy new tokens;
//    time of the decode steps only (after every request's prefill), tokens = B x 127, in the
//    second of two such rounds on one engine (the first warms up, as transformers' side does
//    a warm-up generate, and captures the CUDA graphs); each step
//    ends with the sampled ids copied to the host, so every timed step is complete on the device;
//    once with EngineOptions::cuda_graphs (the default; "graphs on", with the number of graphs
//    captured) and once without ("graphs off");
//    on the CPU graphs never apply and both lines are eager;
//  - the same decode again with graphs on and EngineOptions::time_phases (the device
//    synchronised after each phase, so slightly slower): ms per step in the forward (host inputs
//    to logits on the device), in sampling (ids and logprobs back on the host) and in the
//    engine's host work, and how many steps replayed a graph;
//  - KV-cache bytes per token: 2 x layers x kv_heads x head_dim x dtype bytes;
//  - the multi-turn episode of issue 23 (also alone: `generate_bench episode [context_tokens]`):
//    20 turns, each prompt the previous prompt + its completion + a "tool output" of random
//    tokens; a first prompt of context/16 tokens, context/64 greedy tokens per turn (no stop
//    token, so both runs have the same lengths), tool outputs sized so that the final context
//    (last prompt + its completion) is context_tokens: by default 16384 on CUDA (1024, 256, 539),
//    4096 on the CPU, there with a small model (2 layers, hidden 128, vocab 4096, fp32): without
//    reuse the CPU needs ~10 minutes for 8192. Run once with GenerationRequest::session (prefix
//    reuse) and once without, on engines of 2 slots. Figures: tokens prefilled over the episode
//    (EngineStats::prefilled_tokens) against the final context (target with reuse: <= 1.2x), and
//    the latency of turn 20 (submit to result: its prefill and decode steps) against turn 1's
//    (target with reuse: <= 1.5x). On CUDA each engine runs the episode once untimed first
//    (CUDA graph captures). Checked first (fp32, tiny model): a sampled 6-turn episode gives the
//    same tokens with and without sessions; the bench model's two runs are compared too
//    (printed, not checked: bf16 rounding may legitimately part them).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/generate.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool check_batched_equals_solo() {
  ModelConfig c = tiny_model_config("qwen2", 64, 8);
  auto m = std::make_shared<const Transformer>(Transformer::random(c, 3));
  auto run = [&](std::vector<std::uint64_t> ids) {
    auto e = GenerationEngine::create(m, 0, {.max_batch = 8, .max_seq_len = 64});
    for (auto id : ids) {
      std::vector<std::int64_t> p;
      for (std::uint64_t i = 0; i < 3 + id * 2; ++i) p.push_back((i * 5 + id) % 64);
      (void)e->submit({.id = id, .prompt = p, .params = {.temperature = 0, .max_new_tokens = 12}});
    }
    auto out = e->run();
    std::sort(out->begin(), out->end(), [](auto& a, auto& b) { return a.id < b.id; });
    return *out;
  };
  auto together = run({0, 1, 2, 3, 4, 5});
  for (std::uint64_t id = 0; id < 6; ++id) {
    auto solo = run({id});
    if (solo[0].tokens != together[id].tokens) return false;
    std::vector<std::int64_t> seq;
    for (std::uint64_t i = 0; i < 3 + id * 2; ++i) seq.push_back((i * 5 + id) % 64);
    for (auto tok : solo[0].tokens) {
      auto logits = m->forward(at::tensor(seq, at::kLong).view({1, -1}))[0][-1];
      if (logits.argmax().item<std::int64_t>() != tok) return false;
      seq.push_back(tok);
    }
  }
  return true;
}

// One episode (see the header): per turn the latency and the tokens sampled; the engine's
// prefill and reuse counts.
struct EpisodeRun {
  std::vector<double> turn_s;
  std::vector<double> turn_prefill_s;  // of which in prefill (EnginePhaseTimes::prefill_s)
  std::vector<std::vector<std::int64_t>> completions;
  std::int64_t final_context = 0;
  EngineStats stats;  // of the timed pass
};

struct EpisodeShape {
  std::int64_t turns = 20, first_prompt = 1024, completion = 256, tool = 0;
  double temperature = 0;
};

Expected<EpisodeRun> run_episode(std::shared_ptr<const Transformer> m, const EpisodeShape& shape,
                                 bool sessions, int passes) {
  const std::int64_t vocab = m->config().vocab_size;
  const std::int64_t max_seq =
      shape.first_prompt + shape.turns * (shape.completion + shape.tool) + 16;
  ASSIGN_OR_RETURN(
      GenerationEngine e,
      GenerationEngine::create(std::move(m), 0,
                               {.max_batch = 2, .max_seq_len = max_seq, .time_phases = true}));
  EpisodeRun run;
  for (int pass = 0; pass < passes; ++pass) {
    const EngineStats before = e.stats();
    std::uint64_t x = 88172645463325252ull;  // the same tool outputs in every pass and mode
    auto next_token = [&] {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      return std::int64_t(x % std::uint64_t(vocab));
    };
    std::vector<std::int64_t> context;
    run = EpisodeRun{};
    for (std::int64_t t = 0; t < shape.turns; ++t) {
      const std::int64_t add = t == 0 ? shape.first_prompt : shape.tool;
      for (std::int64_t i = 0; i < add; ++i) context.push_back(next_token());
      const auto t0 = Clock::now();
      const double prefill0 = e.phase_times().prefill_s;
      RETURN_IF_ERROR(e.submit({.id = std::uint64_t(pass * 1000 + t),
                                .prompt = context,
                                .params = {.temperature = shape.temperature,
                                           .seed = std::uint64_t(t),
                                           .max_new_tokens = shape.completion},
                                .session = sessions ? "episode-" + std::to_string(pass) : ""}));
      ASSIGN_OR_RETURN(auto done, e.run());
      run.turn_s.push_back(seconds_since(t0));
      run.turn_prefill_s.push_back(e.phase_times().prefill_s - prefill0);
      context.insert(context.end(), done[0].tokens.begin(), done[0].tokens.end());
      run.completions.push_back(std::move(done[0].tokens));
    }
    run.final_context = std::int64_t(context.size());
    const EngineStats after = e.stats();
    run.stats = {.prefilled_tokens = after.prefilled_tokens - before.prefilled_tokens,
                 .reused_tokens = after.reused_tokens - before.reused_tokens};
    if (sessions) e.drop_session("episode-" + std::to_string(pass));
  }
  return run;
}

// On the CPU, and on CUDA (fp32, where decode steps replay CUDA graphs) if there is one: a
// sampled episode is the same with and without sessions; and a kept cache below a running slot
// (a padding row of the graphs, written at position max_seq - 1) still gives its session's next
// turn the tokens of a full prefill.
bool check_sessions_equal() {
  ModelConfig c = tiny_model_config("qwen2", 64, 8);
  std::vector<at::Device> devices = {at::kCPU};
  if (torch::cuda::is_available()) devices.push_back(at::kCUDA);
  for (at::Device dev : devices) {
    auto m = std::make_shared<const Transformer>(
        Transformer::random(c, 5, {.device = dev, .dtype = at::kFloat}));
    EpisodeShape shape{.turns = 6, .first_prompt = 9, .completion = 5, .tool = 4, .temperature = 1};
    auto with = run_episode(m, shape, true, 1), without = run_episode(m, shape, false, 1);
    if (!with || !without || with->completions != without->completions ||
        with->stats.reused_tokens == 0) {
      return false;
    }
    auto e = GenerationEngine::create(m, 0, {.max_batch = 2, .max_seq_len = 32});
    auto f = GenerationEngine::create(m, 0, {.max_batch = 2, .max_seq_len = 32});
    std::vector<std::int64_t> a(27);
    for (std::int64_t i = 0; i < 27; ++i) a[i] = (i * 5 + 3) % 64;
    auto greedy = [](std::uint64_t id, std::vector<std::int64_t> p, std::int64_t n,
                     std::string session) {
      return GenerationRequest{.id = id,
                               .prompt = std::move(p),
                               .params = {.temperature = 0, .max_new_tokens = n},
                               .session = std::move(session)};
    };
    if (!e->submit(greedy(1, a, 5, "a"))) return false;
    auto r1 = e->run();  // kept: 31 tokens in slot 0
    if (!r1 || r1->size() != 1 || e->kept_sessions() != 1) return false;
    if (!e->submit(greedy(2, {1, 2, 3}, 20, "")) || !e->run()) return false;  // slot 1
    a.insert(a.end(), (*r1)[0].tokens.begin(), (*r1)[0].tokens.end() - 1);
    if (!e->submit(greedy(3, a, 1, "a")) || !f->submit(greedy(3, a, 1, ""))) return false;
    auto reused = e->run(), fresh = f->run();
    if (!reused || !fresh || (*reused)[0].reused_tokens != 30 ||
        (*reused)[0].tokens != (*fresh)[0].tokens) {
      return false;
    }
  }
  return true;
}

int episode_bench(std::shared_ptr<const Transformer> model, std::int64_t context_tokens,
                  bool cuda) {
  EpisodeShape shape;
  shape.first_prompt = context_tokens / 16;
  shape.completion = context_tokens / 64;
  shape.tool =
      (context_tokens - shape.first_prompt - shape.turns * shape.completion) / (shape.turns - 1);
  if (shape.tool < 1) return std::fprintf(stderr, "episode: context_tokens too small\n"), 1;
  const int passes = cuda ? 2 : 1;  // on CUDA the first pass captures the graphs
  auto with = run_episode(model, shape, true, passes);
  if (!with) return std::fprintf(stderr, "%s\n", with.error().to_string().c_str()), 1;
  auto without = run_episode(model, shape, false, passes);
  if (!without) return std::fprintf(stderr, "%s\n", without.error().to_string().c_str()), 1;
  int same = 0;
  for (std::int64_t t = 0; t < shape.turns; ++t) {
    same += with->completions[t] == without->completions[t];
  }
  const double ctx = double(with->final_context);
  std::printf(
      "episode: %lld turns, first prompt %lld, %lld greedy tokens and %lld tool tokens per turn, "
      "final context %lld tokens; completions equal with and without reuse in %d of %lld turns\n",
      static_cast<long long>(shape.turns), static_cast<long long>(shape.first_prompt),
      static_cast<long long>(shape.completion), static_cast<long long>(shape.tool),
      static_cast<long long>(with->final_context), same, static_cast<long long>(shape.turns));
  for (const auto* r : {&*with, &*without}) {
    const bool reuse = r == &*with;
    const double prefill_x = double(r->stats.prefilled_tokens) / ctx;
    const double turn_x = r->turn_s.back() / r->turn_s.front();
    std::printf(
        "  %-13s prefilled %7lld tokens = %5.2fx the context (reused %lld)%s; turn 1 %.3f s "
        "(prefill %.3f), turn %lld %.3f s (prefill %.3f) = %.2fx%s\n",
        reuse ? "with reuse:" : "without:", static_cast<long long>(r->stats.prefilled_tokens),
        prefill_x, static_cast<long long>(r->stats.reused_tokens),
        reuse ? (prefill_x <= 1.2 ? " [<= 1.2x: met]" : " [<= 1.2x: MISSED]") : "",
        r->turn_s.front(), r->turn_prefill_s.front(), static_cast<long long>(shape.turns),
        r->turn_s.back(), r->turn_prefill_s.back(), turn_x,
        reuse ? (turn_x <= 1.5 ? " [<= 1.5x: met]" : " [<= 1.5x: MISSED]") : "");
    std::printf("    turn latency (s):");
    for (double s : r->turn_s) std::printf(" %.3f", s);
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) {
  using namespace cuda_agent;
  torch::NoGradGuard no_grad;
  const bool episode_only = argc > 1 && std::string(argv[1]) == "episode";
  const std::int64_t context_arg = argc > 2 ? std::atoll(argv[2]) : 0;
  if (!check_batched_equals_solo()) {
    std::fprintf(stderr,
                 "generate_bench: batched greedy decoding differs from solo / full forward\n");
    return 1;
  }
  if (!check_sessions_equal()) {
    std::fprintf(stderr, "generate_bench: an episode differs with and without sessions\n");
    return 1;
  }
  const bool cuda = torch::cuda::is_available();
  ModelConfig c;
  c.model_type = "qwen2";
  c.vocab_size = cuda ? 151936 : 32000;
  c.hidden_size = 896;
  c.intermediate_size = 4864;
  c.num_hidden_layers = cuda ? 24 : 4;
  c.num_attention_heads = 14;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.rope_theta = 1e6;
  c.max_position_embeddings = 32768;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  const at::ScalarType dtype = cuda ? at::kBFloat16 : at::kFloat;
  auto model = std::make_shared<const Transformer>(Transformer::random(
      c, 1, {.device = cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU), .dtype = dtype}));
  std::printf("generate_bench: %s, Qwen2.5-0.5B shape (%lld layers), random weights, %s\n",
              cuda ? "CUDA" : "CPU (no GPU: shape cut to 4 layers)",
              static_cast<long long>(c.num_hidden_layers), cuda ? "bf16" : "fp32");
  std::printf("check passed: batched greedy == solo == argmax of the full forward (fp32, tiny)\n");
  std::printf(
      "check passed: a sampled 6-turn episode is the same with and without sessions, and a kept "
      "cache under decode padding rows survives (fp32, tiny%s)\n",
      cuda ? ", CPU and CUDA" : "");
  // The episode on the CPU: a small model (attention over 16k keys dominates there).
  auto episode_model = model;
  if (!cuda) {
    ModelConfig s = tiny_model_config("qwen2", 4096, 32);
    s.rope_theta = 1e6;
    s.max_position_embeddings = 32768;
    episode_model = std::make_shared<const Transformer>(Transformer::random(s, 1));
  }
  const std::int64_t context_tokens = context_arg > 0 ? context_arg : cuda ? 16384 : 4096;
  if (episode_only) return episode_bench(episode_model, context_tokens, cuda);
  std::printf("KV-cache bytes per token: %lld\n",
              static_cast<long long>(c.kv_bytes_per_token(c10::elementSize(dtype))));

  auto random_prompt = [&](std::int64_t n, std::uint64_t salt) {
    std::vector<std::int64_t> p;
    for (std::int64_t i = 0; i < n; ++i) p.push_back((i * 7919 + salt * 104729) % c.vocab_size);
    return p;
  };
  // Prefill.
  const std::int64_t prefill_len = cuda ? 2048 : 256;
  for (std::int64_t chunk : {std::int64_t(512), prefill_len, std::int64_t(0)}) {
    // chunk 0: the last quarter after a kept prefix of three quarters.
    const std::int64_t kept = chunk == 0 ? prefill_len / 4 * 3 : 0;
    auto e = GenerationEngine::create(model, 0,
                                      {.max_batch = 1,
                                       .max_seq_len = prefill_len + 1,
                                       .prefill_chunk_tokens = chunk > 0 ? chunk : 512});
    if (!e) return std::fprintf(stderr, "%s\n", e.error().to_string().c_str()), 1;
    std::vector<double> times;
    for (int rep = 0; rep < 4; ++rep) {
      const auto prompt = random_prompt(prefill_len, rep);
      const std::string session = kept > 0 ? "s" + std::to_string(rep) : "";
      if (kept > 0) {
        (void)e->submit({.id = std::uint64_t(100 + rep),
                         .prompt = {prompt.begin(), prompt.begin() + kept},
                         .params = {.temperature = 0, .max_new_tokens = 1},
                         .session = session});
        if (!e->run()) return std::fprintf(stderr, "prefill step failed\n"), 1;
      }
      (void)e->submit({.id = std::uint64_t(rep),
                       .prompt = prompt,
                       .params = {.temperature = 0, .max_new_tokens = 1},
                       .session = session});
      auto t = Clock::now();
      auto done = e->step();
      if (!done || done->size() != 1 || (*done)[0].reused_tokens != kept) {
        return std::fprintf(stderr, "prefill step failed\n"), 1;
      }
      if (rep > 0) times.push_back(seconds_since(t));
      if (kept > 0) e->drop_session(session);
    }
    std::sort(times.begin(), times.end());
    if (kept == 0) {
      std::printf("prefill: %.0f tokens/s (%lld-token prompt, chunks of %lld, median of 3)\n",
                  prefill_len / times[1], static_cast<long long>(prefill_len),
                  static_cast<long long>(chunk));
    } else {
      std::printf(
          "prefill after a kept prefix: %.0f new tokens/s (%lld new after %lld kept, median of "
          "3)\n",
          (prefill_len - kept) / times[1], static_cast<long long>(prefill_len - kept),
          static_cast<long long>(kept));
    }
  }
  // Decode.
  const std::int64_t prompt_len = 128, new_tokens = cuda ? 128 : 16;
  for (std::int64_t batch : {1, 16, 64}) {
    if (!cuda && batch == 64) break;
    struct Mode {
      bool graphs, phases;
    };
    for (Mode mode : {Mode{true, false}, Mode{false, false}, Mode{true, true}}) {
      const bool phases = mode.phases;
      auto e = GenerationEngine::create(model, 0,
                                        {.max_batch = batch,
                                         .max_seq_len = prompt_len + new_tokens,
                                         .time_phases = phases,
                                         .cuda_graphs = mode.graphs});
      if (!e) return std::fprintf(stderr, "%s\n", e.error().to_string().c_str()), 1;
      // Round 0 warms up (and captures the graphs); round 1 is timed.
      double s = 0;
      std::int64_t steps = 0;
      EnginePhaseTimes p;
      for (std::uint64_t round = 0; round < 2; ++round) {
        for (std::int64_t i = 0; i < batch; ++i) {
          (void)e->submit({.id = round * std::uint64_t(batch) + std::uint64_t(i),
                           .prompt = random_prompt(
                               prompt_len, std::uint64_t(i) + 7 + round * std::uint64_t(batch)),
                           .params = {.temperature = 0, .max_new_tokens = new_tokens}});
        }
        if (!e->step()) return std::fprintf(stderr, "prefill failed\n"), 1;  // all prefills
        const EnginePhaseTimes before = e->phase_times();
        auto t = Clock::now();
        steps = 0;
        while (e->running() > 0) {
          if (!e->step()) return std::fprintf(stderr, "decode failed\n"), 1;
          ++steps;
        }
        s = seconds_since(t);
        const EnginePhaseTimes& after = e->phase_times();
        p = {.decode_forward_s = after.decode_forward_s - before.decode_forward_s,
             .decode_sample_s = after.decode_sample_s - before.decode_sample_s,
             .decode_host_s = after.decode_host_s - before.decode_host_s,
             .decode_steps = after.decode_steps - before.decode_steps,
             .graph_steps = after.graph_steps - before.graph_steps};
      }
      if (!phases) {
        std::printf(
            "decode batch %3lld: %8.0f tokens/s (%lld steps, %.2f ms/step) graphs %s (%zu "
            "captured)\n",
            static_cast<long long>(batch), batch * (new_tokens - 1) / s,
            static_cast<long long>(steps), 1e3 * s / steps, mode.graphs ? "on" : "off",
            e->cuda_graphs_captured());
      } else {
        const double n = double(std::max<std::int64_t>(p.decode_steps, 1));
        std::printf(
            "  phases (graphs on, synchronised, %.2f ms/step): forward %.2f, sampling %.2f, host "
            "%.2f ms; %lld of %lld steps from a graph\n",
            1e3 * s / steps, 1e3 * p.decode_forward_s / n, 1e3 * p.decode_sample_s / n,
            1e3 * p.decode_host_s / n, static_cast<long long>(p.graph_steps),
            static_cast<long long>(p.decode_steps));
      }
    }
  }
  return episode_bench(episode_model, context_tokens, cuda);
}
