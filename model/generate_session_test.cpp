// Session prefix reuse in the generation engine (model/generate.h, "Sessions"): multi-turn
// episodes give the same tokens and logprobs with and without sessions, greedy and sampled, one
// episode or several interleaved on fewer slots than episodes; the prefill and reuse counts;
// divergent prompts; LRU reclaiming; dynamic NTK RoPE past its base length; weight swaps.
// Random episodes take their seed from CA_TEST_SEED (default 1) and print it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "model/generate.h"
#include "model/model_test_util.h"

namespace cuda_agent {
namespace {

using testing::sharp_dynamic_rope_llama;
using testing::tiny_config;

std::shared_ptr<const Transformer> tiny(const std::string& type = "qwen2",
                                        std::uint64_t seed = 21) {
  return std::make_shared<const Transformer>(Transformer::random(tiny_config(type), seed));
}

std::uint64_t test_seed() {
  const char* s = std::getenv("CA_TEST_SEED");
  const std::uint64_t seed = s ? std::strtoull(s, nullptr, 10) : 1;
  std::printf("CA_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

// One turn of every episode: the prompts, the results.
struct Turn {
  std::vector<std::vector<std::int64_t>> prompts;
  std::vector<GenerationResult> results;  // by episode
};

// `episodes` agent episodes of `turns` turns on one engine, every turn of every episode
// submitted together: turn t's prompt is turn t-1's prompt + completion + a random "tool
// output" of 1..12 tokens (the first prompt: 5..20 tokens). Completions stop at token 3 or after
// 1..10 tokens. With `sessions` each episode's requests carry its session id.
std::vector<Turn> run_episodes(std::shared_ptr<const Transformer> m, EngineOptions options,
                               bool sessions, int episodes, int turns, bool sampled,
                               std::uint64_t seed, EngineStats* stats = nullptr) {
  auto e = GenerationEngine::create(std::move(m), 0, options);
  EXPECT_TRUE(e) << e.error().to_string();
  std::mt19937_64 rng(seed);  // the same draws in both modes: they do not depend on the results
  auto draw = [&](std::int64_t lo, std::int64_t hi) {
    return lo + std::int64_t(rng() % std::uint64_t(hi - lo + 1));
  };
  std::vector<std::vector<std::int64_t>> context(episodes);
  std::vector<Turn> out;
  for (int t = 0; t < turns; ++t) {
    Turn turn;
    for (int ep = 0; ep < episodes; ++ep) {
      const std::int64_t tool = t == 0 ? draw(5, 20) : draw(1, 12);
      for (std::int64_t i = 0; i < tool; ++i) context[ep].push_back(draw(4, 49));
      SamplingParams p{.temperature = sampled ? 1.1 : 0.0,
                       .top_p = sampled ? 0.95 : 1.0,
                       .seed = seed * 1000 + std::uint64_t(t * episodes + ep),
                       .max_new_tokens = draw(1, 10),
                       .stop_tokens = {3}};
      turn.prompts.push_back(context[ep]);
      EXPECT_TRUE(e->submit({.id = std::uint64_t(t * episodes + ep),
                             .prompt = context[ep],
                             .params = p,
                             .session = sessions ? "episode-" + std::to_string(ep) : ""}));
    }
    auto done = e->run();
    EXPECT_TRUE(done) << done.error().to_string();
    std::sort(done->begin(), done->end(), [](auto& a, auto& b) { return a.id < b.id; });
    EXPECT_EQ(done->size(), std::size_t(episodes));
    for (int ep = 0; ep < episodes && ep < int(done->size()); ++ep) {
      const auto& toks = (*done)[ep].tokens;
      context[ep].insert(context[ep].end(), toks.begin(), toks.end());
    }
    turn.results = std::move(*done);
    out.push_back(std::move(turn));
  }
  if (stats) *stats = e->stats();
  return out;
}

void expect_same_episodes(const std::vector<Turn>& a, const std::vector<Turn>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    ASSERT_EQ(a[t].results.size(), b[t].results.size());
    for (std::size_t ep = 0; ep < a[t].results.size(); ++ep) {
      const auto &x = a[t].results[ep], &y = b[t].results[ep];
      ASSERT_EQ(x.tokens, y.tokens) << "turn " << t << " episode " << ep;
      ASSERT_EQ(x.finish, y.finish);
      for (std::size_t i = 0; i < x.logprobs.size(); ++i) {
        EXPECT_NEAR(x.logprobs[i], y.logprobs[i], 1e-5) << "turn " << t << " token " << i;
      }
    }
  }
}

// The case: one 20-turn episode, each turn prompt + completion + tool output. Every
// turn after the first prefills only the completion's last token and the tool output.
TEST(Sessions, TwentyTurnEpisodeIsTheSameWithAndWithoutReuse) {
  const std::uint64_t seed = test_seed();
  for (bool sampled : {false, true}) {
    for (const char* type : {"qwen2", "llama", "qwen3"}) {
      SCOPED_TRACE(std::string(type) + (sampled ? " sampled" : " greedy"));
      EngineOptions o{.max_batch = 2, .max_seq_len = 512, .prefill_chunk_tokens = 16};
      EngineStats with, without;
      auto a = run_episodes(tiny(type), o, true, 1, 20, sampled, seed, &with);
      auto b = run_episodes(tiny(type), o, false, 1, 20, sampled, seed, &without);
      expect_same_episodes(a, b);
      std::int64_t final_context = 0, sum_prompts = 0, want_prefilled = 0;
      for (std::size_t t = 0; t < a.size(); ++t) {
        const std::int64_t n = std::int64_t(a[t].prompts[0].size());
        sum_prompts += n;
        // Turn t reuses turn t-1's prompt and completion but its last token.
        const std::int64_t reuse =
            t == 0
                ? 0
                : std::int64_t(a[t - 1].prompts[0].size() + a[t - 1].results[0].tokens.size()) - 1;
        EXPECT_EQ(a[t].results[0].reused_tokens, reuse) << "turn " << t;
        EXPECT_EQ(b[t].results[0].reused_tokens, 0);
        want_prefilled += n - reuse;
        final_context = n + std::int64_t(a[t].results[0].tokens.size());
      }
      EXPECT_EQ(with.prefilled_tokens, want_prefilled);
      EXPECT_EQ(with.prefilled_tokens + with.reused_tokens, sum_prompts);
      EXPECT_LE(with.prefilled_tokens, final_context);
      EXPECT_EQ(without.prefilled_tokens, sum_prompts);
      EXPECT_EQ(without.reused_tokens, 0);
      EXPECT_EQ(with.session_hits, 19);
      EXPECT_EQ(with.session_misses, 1);
      EXPECT_EQ(with.sessions_kept, 20);
      EXPECT_EQ(with.sessions_evicted, 0);
      EXPECT_EQ(without.sessions_kept, 0);
    }
  }
}

// Five episodes on three slots: kept caches are reclaimed for other episodes' turns all the
// time (LRU), and reuse happens whenever a cache survived; results never change.
TEST(Sessions, InterleavedEpisodesOnFewerSlotsThanEpisodes) {
  const std::uint64_t seed = test_seed();
  for (bool sampled : {false, true}) {
    SCOPED_TRACE(sampled ? "sampled" : "greedy");
    for (std::int64_t limit : {-1, 2}) {
      EngineOptions o{
          .max_batch = 3, .max_seq_len = 512, .prefill_chunk_tokens = 8, .session_slots = limit};
      EngineStats with, without;
      auto a = run_episodes(tiny("llama"), o, true, 5, 12, sampled, seed + 7, &with);
      auto b = run_episodes(tiny("llama"), o, false, 5, 12, sampled, seed + 7, &without);
      expect_same_episodes(a, b);
      EXPECT_GT(with.session_hits, 0);
      EXPECT_GT(with.sessions_evicted, 0);
      EXPECT_LT(with.prefilled_tokens, without.prefilled_tokens);
      EXPECT_EQ(with.prefilled_tokens + with.reused_tokens, without.prefilled_tokens);
      EXPECT_EQ(with.session_hits + with.session_misses, 5 * 12);
    }
  }
}

GenerationRequest greedy(std::uint64_t id, std::vector<std::int64_t> prompt, std::string session,
                         std::int64_t new_tokens = 4) {
  return {.id = id,
          .prompt = std::move(prompt),
          .params = {.temperature = 0, .max_new_tokens = new_tokens},
          .session = std::move(session)};
}

std::vector<std::int64_t> ids(std::int64_t n, std::int64_t salt) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back((i * 7 + salt * 3 + 1) % 50);
  return v;
}

GenerationResult run_one(GenerationEngine& e, GenerationRequest r) {
  EXPECT_TRUE(e.submit(std::move(r)));
  auto out = e.run();
  EXPECT_TRUE(out && out->size() == 1);
  return (*out)[0];
}

// A prompt that leaves the kept tokens reuses their common prefix (the rest is overwritten);
// one equal to them, or shorter, still prefills its last token.
TEST(Sessions, DivergentPromptsReuseTheCommonPrefix) {
  auto m = tiny();
  auto e = GenerationEngine::create(m, 0, {.max_batch = 1, .max_seq_len = 64});
  ASSERT_TRUE(e);
  auto fresh = [&](std::vector<std::int64_t> p) {
    auto f = GenerationEngine::create(m, 0, {.max_batch = 1, .max_seq_len = 64});
    return run_one(*f, greedy(1, std::move(p), ""));
  };
  auto p = ids(12, 1);
  auto r1 = run_one(*e, greedy(1, p, "s"));
  EXPECT_EQ(r1.reused_tokens, 0);
  // Kept: p + the first 3 of the 4 sampled tokens. Diverge at position 8.
  auto p2 = p;
  p2.resize(8);
  for (std::int64_t t : {5, 6, 7, 8, 9, 10}) p2.push_back(t);
  auto r2 = run_one(*e, greedy(2, p2, "s"));
  EXPECT_EQ(r2.reused_tokens, 8);
  EXPECT_EQ(r2.tokens, fresh(p2).tokens);
  // Exactly the kept tokens (p2 + 3 sampled): all but the last reused.
  auto p3 = p2;
  p3.insert(p3.end(), r2.tokens.begin(), r2.tokens.end() - 1);
  auto r3 = run_one(*e, greedy(3, p3, "s"));
  EXPECT_EQ(r3.reused_tokens, std::int64_t(p3.size()) - 1);
  EXPECT_EQ(r3.tokens, fresh(p3).tokens);
  // A prefix of the kept tokens.
  auto p4 = std::vector<std::int64_t>(p3.begin(), p3.begin() + 5);
  auto r4 = run_one(*e, greedy(4, p4, "s"));
  EXPECT_EQ(r4.reused_tokens, 4);
  EXPECT_EQ(r4.tokens, fresh(p4).tokens);
  // Nothing in common: a full prefill into the session's slot.
  auto p5 = ids(9, 4);
  p5[0] = 49;
  auto r5 = run_one(*e, greedy(5, p5, "s"));
  EXPECT_EQ(r5.reused_tokens, 0);
  EXPECT_EQ(r5.tokens, fresh(p5).tokens);
  EXPECT_EQ(e->stats().session_hits, 3);
  EXPECT_EQ(e->stats().session_misses, 2);
  // Another session never reuses s's cache, even with the same tokens.
  auto r6 = run_one(*e, greedy(6, p5, "t"));
  EXPECT_EQ(r6.reused_tokens, 0);
  EXPECT_EQ(e->stats().sessions_evicted, 1);  // s's, for t's request (one slot)
}

// The least recently kept cache is reclaimed first, sparing sessions with a request waiting;
// the session_slots bound and drop_session free slots too.
TEST(Sessions, LeastRecentlyKeptIsReclaimedFirstAndTheBoundHolds) {
  auto m = tiny();
  auto e = GenerationEngine::create(m, 0, {.max_batch = 2, .max_seq_len = 64});
  ASSERT_TRUE(e);
  auto a = run_one(*e, greedy(1, ids(6, 1), "a"));
  auto b = run_one(*e, greedy(2, ids(6, 2), "b"));
  EXPECT_EQ(e->kept_sessions(), 2u);
  // A request without a session takes the older cache (a's) ...
  run_one(*e, greedy(3, ids(5, 3), ""));
  EXPECT_EQ(e->kept_sessions(), 1u);
  EXPECT_EQ(e->stats().sessions_evicted, 1);
  auto a2 = ids(6, 1);
  a2.insert(a2.end(), a.tokens.begin(), a.tokens.end());
  EXPECT_EQ(run_one(*e, greedy(4, a2, "a")).reused_tokens, 0);
  auto b2 = ids(6, 2);
  b2.insert(b2.end(), b.tokens.begin(), b.tokens.end());
  EXPECT_EQ(run_one(*e, greedy(5, b2, "b")).reused_tokens, 9);
  // ... unless a's next turn is waiting: then b's, the newer, goes.
  ASSERT_EQ(e->kept_sessions(), 2u);  // a (older), b
  ASSERT_TRUE(e->submit(greedy(6, ids(5, 6), "")));
  auto a3 = a2;
  ASSERT_TRUE(e->submit(greedy(7, a3, "a")));
  auto out = e->run();
  ASSERT_TRUE(out);
  std::sort(out->begin(), out->end(), [](auto& x, auto& y) { return x.id < y.id; });
  EXPECT_EQ((*out)[1].reused_tokens, std::int64_t(a3.size()) - 1);
  EXPECT_EQ(e->drop_session("a"), true);
  EXPECT_EQ(e->drop_session("a"), false);
  EXPECT_EQ(e->drop_session("b"), false);  // reclaimed above
  EXPECT_EQ(e->kept_sessions(), 0u);

  // session_slots 1: a second kept session pushes out the first; 0: nothing is kept.
  auto one =
      GenerationEngine::create(m, 0, {.max_batch = 3, .max_seq_len = 64, .session_slots = 1});
  ASSERT_TRUE(one);
  run_one(*one, greedy(1, ids(6, 1), "a"));
  run_one(*one, greedy(2, ids(6, 2), "b"));
  EXPECT_EQ(one->kept_sessions(), 1u);
  EXPECT_EQ(one->stats().sessions_evicted, 1);
  EXPECT_EQ(run_one(*one, greedy(3, ids(7, 2), "b")).reused_tokens, 6);
  auto none =
      GenerationEngine::create(m, 0, {.max_batch = 3, .max_seq_len = 64, .session_slots = 0});
  ASSERT_TRUE(none);
  run_one(*none, greedy(1, ids(6, 1), "a"));
  EXPECT_EQ(none->kept_sessions(), 0u);
  EXPECT_EQ(run_one(*none, greedy(2, ids(7, 1), "a")).reused_tokens, 0);
  auto bad = GenerationEngine::create(m, 0, {.session_slots = -2});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "model.bad_engine_options");
}

// Two requests of one session at once: the second prefills in full; the one that finishes
// last is the session's kept cache.
TEST(Sessions, ConcurrentRequestsOfOneSessionKeepTheLastFinished) {
  auto e = GenerationEngine::create(tiny(), 0, {.max_batch = 3, .max_seq_len = 64});
  ASSERT_TRUE(e);
  auto r1 = run_one(*e, greedy(1, ids(6, 1), "s"));
  auto kept = ids(6, 1);
  kept.insert(kept.end(), r1.tokens.begin(), r1.tokens.end() - 1);
  const auto p = ids(8, 1);
  std::int64_t common = 0;
  while (common < 7 && kept[common] == p[common]) ++common;
  ASSERT_TRUE(e->submit(greedy(2, ids(8, 1), "s", /*new_tokens=*/6)));
  ASSERT_TRUE(e->submit(greedy(3, ids(8, 1), "s", /*new_tokens=*/2)));
  auto out = e->run();
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].id, 3u);  // the shorter finishes first
  EXPECT_EQ((*out)[0].reused_tokens, 0);
  EXPECT_EQ((*out)[1].reused_tokens, common);
  EXPECT_EQ(e->kept_sessions(), 1u);
  EXPECT_EQ(e->stats().sessions_dropped, 1);  // request 3's, replaced by request 2's
  auto next = ids(8, 1);
  next.insert(next.end(), (*out)[1].tokens.begin(), (*out)[1].tokens.end());
  EXPECT_EQ(run_one(*e, greedy(4, next, "s")).reused_tokens, std::int64_t(next.size()) - 1);
}

// Dynamic NTK RoPE rotates a whole prompt for its length once past max_position_embeddings
// (12 here): no reuse there, and the episode gives what it gives without sessions; below it,
// reuse.
TEST(Sessions, DynamicRopeReusesOnlyUpToItsBaseLength) {
  auto m = std::make_shared<const Transformer>(sharp_dynamic_rope_llama(31));
  EngineOptions o{.max_batch = 1, .max_seq_len = 128, .prefill_chunk_tokens = 4};
  EngineStats with;
  auto a = run_episodes(m, o, true, 1, 8, false, test_seed(), &with);
  auto b = run_episodes(m, o, false, 1, 8, false, test_seed(), nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_same_episodes(a, b));
  for (std::size_t t = 1; t < a.size(); ++t) {
    const std::int64_t n = std::int64_t(a[t].prompts[0].size());
    if (n > 12) EXPECT_EQ(a[t].results[0].reused_tokens, 0) << "turn " << t;
  }
  // Below the base length: reuse, and the same tokens as a full prefill.
  auto e = GenerationEngine::create(m, 0, o);
  ASSERT_TRUE(e);
  auto r = run_one(*e, greedy(1, ids(5, 1), "s", 2));
  auto p = ids(5, 1);
  p.insert(p.end(), r.tokens.begin(), r.tokens.end());
  p.push_back(9);
  auto r2 = run_one(*e, greedy(2, p, "s", 2));
  EXPECT_EQ(r2.reused_tokens, 6);
  auto f = GenerationEngine::create(m, 0, o);
  EXPECT_EQ(run_one(*f, greedy(1, p, "", 2)).tokens, r2.tokens);
  // Why not past it: a 16-token prompt from 8 kept tokens (rotated for length 8) gives other
  // logits than the 16 tokens prefilled at once (all rotated for length 16).
  auto q = at::tensor(ids(16, 3), at::kLong).view({1, 16});
  KvCache one = m->make_cache(1, 32), two = m->make_cache(1, 32);
  auto whole = m->forward(q, &one, {0}, {0}, true, {16});
  m->forward(q.narrow(1, 0, 8), &two, {0}, {0}, true, {8});
  auto reused = m->forward(q.narrow(1, 8, 8), &two, {0}, {8}, true, {16});
  EXPECT_GT((whole - reused).abs().max().item<float>(), 1e-3);
}

// A weight swap drops every kept cache, and a request that ran across one is not kept; with
// keep_sessions_across_swaps both stay.
TEST(Sessions, WeightSwapsDropKeptCachesUnlessAsked) {
  auto m1 = tiny("qwen2", 1), m2 = tiny("qwen2", 2);
  for (bool keep : {false, true}) {
    auto e = GenerationEngine::create(
        m1, 0, {.max_batch = 2, .max_seq_len = 64, .keep_sessions_across_swaps = keep});
    ASSERT_TRUE(e);
    auto r = run_one(*e, greedy(1, ids(6, 1), "a"));
    ASSERT_TRUE(e->swap_weights(m2, 1));
    EXPECT_EQ(e->kept_sessions(), keep ? 1u : 0u);
    EXPECT_EQ(e->stats().sessions_dropped, keep ? 0 : 1);
    auto p = ids(6, 1);
    p.insert(p.end(), r.tokens.begin(), r.tokens.end());
    EXPECT_EQ(run_one(*e, greedy(2, p, "a")).reused_tokens, keep ? 9 : 0);
    // Across a swap mid-request.
    ASSERT_TRUE(e->submit(greedy(3, ids(5, 2), "b", 5)));
    ASSERT_TRUE(e->step());
    ASSERT_TRUE(e->swap_weights(m1, 2));
    ASSERT_TRUE(e->run());
    EXPECT_EQ(e->kept_sessions(), keep ? 2u : 0u);
  }
}

}  // namespace
}  // namespace cuda_agent
