// The torch-free learner data path: episodes -> training sequences (every refusal kind), packing
// into micro-batches, sharding across ranks, GAE against an independent O(T^2) reference,
// whitening, and loading from a real run store with bad records among good ones.
// Random tests print their seed; CUDA_AGENT_TEST_SEED replays one.
#include <gtest/gtest.h>

#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "learner/episode_source.h"
#include "learner/gae.h"
#include "learner/packing.h"
#include "learner/train_sequence.h"
#include "storage/rocks_adapter.h"
#include "storage/store_keys.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;

Turn turn(TurnRole role, std::vector<std::uint32_t> ids, std::uint8_t mask, std::uint64_t version) {
  Turn t;
  t.role = role;
  t.loss_mask.assign(ids.size(), mask);
  if (mask == 1) {
    for (std::size_t i = 0; i < ids.size(); ++i) t.logprobs.push_back(-0.5f - 0.25f * i);
  }
  t.token_ids = std::move(ids);
  t.policy_version = PolicyVersion{version};
  return t;
}

// system(3, v1) assistant(2, v3) tool(3, v1) assistant(2, v5): 10 tokens, 4 of them model tokens.
Episode good_episode(const std::string& run = "r", const std::string& id = "e1") {
  Episode e;
  e.run_id = RunId{run};
  e.episode_id = EpisodeId{id};
  e.task_id = TaskId{"kernelbench/level1/1"};
  e.stage = EpisodeStage::kAgenticPpo;
  e.final_reward = 2.5;
  e.turns.push_back(turn(TurnRole::kSystem, {10, 11, 12}, 0, 1));
  e.turns.push_back(turn(TurnRole::kAssistant, {20, 21}, 1, 3));
  e.turns.push_back(turn(TurnRole::kTool, {30, 31, 32}, 0, 1));
  e.turns.push_back(turn(TurnRole::kAssistant, {40, 41}, 1, 5));
  return e;
}

TEST(TrainSequence, FlattensTurnsIntoPerTokenArrays) {
  auto seq = to_train_sequence(good_episode(), {.vocab_size = 100, .max_tokens = 10});
  ASSERT_TRUE(seq) << seq.error().to_string();
  EXPECT_EQ(seq->run, RunId{"r"});
  EXPECT_EQ(seq->episode, EpisodeId{"e1"});
  EXPECT_EQ(seq->task, TaskId{"kernelbench/level1/1"});
  EXPECT_EQ(seq->stage, EpisodeStage::kAgenticPpo);
  EXPECT_EQ(seq->ids, (std::vector<std::int64_t>{10, 11, 12, 20, 21, 30, 31, 32, 40, 41}));
  EXPECT_EQ(seq->loss_mask, (std::vector<std::uint8_t>{0, 0, 0, 1, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(seq->behaviour_logprobs,
            (std::vector<float>{0, 0, 0, -0.5f, -0.75f, 0, 0, 0, -0.5f, -0.75f}));
  EXPECT_EQ(seq->policy_versions, (std::vector<std::uint64_t>{1, 1, 1, 3, 3, 1, 1, 1, 5, 5}));
  EXPECT_EQ(seq->reward, 2.5);
  EXPECT_EQ(seq->last_model_token, 9);
  EXPECT_EQ(seq->min_version, 3u);  // over model tokens only: the prompt's version 1 is not one
  EXPECT_EQ(seq->max_version, 5u);
  EXPECT_EQ(seq->model_tokens(), 4);
  EXPECT_EQ(seq->token_rewards(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 2.5f}));
}

TEST(TrainSequence, LogprobsOfMaskZeroTokensAreNeitherCheckedNorKept) {
  Episode e = good_episode();
  e.turns[0].logprobs = {std::numeric_limits<float>::quiet_NaN(), 1.0f, -2.0f};
  auto seq = to_train_sequence(e, {});
  ASSERT_TRUE(seq) << seq.error().to_string();
  EXPECT_EQ(seq->behaviour_logprobs[0], 0.0f);
  EXPECT_EQ(seq->behaviour_logprobs[1], 0.0f);
  EXPECT_EQ(seq->behaviour_logprobs[2], 0.0f);
}

TEST(TrainSequence, EmptyTurnsAreAllowed) {
  Episode e = good_episode();
  e.turns.insert(e.turns.begin() + 2, turn(TurnRole::kTool, {}, 0, 1));
  auto seq = to_train_sequence(e, {});
  ASSERT_TRUE(seq) << seq.error().to_string();
  EXPECT_EQ(seq->size(), 10);
}

// Expects a learner.bad_trajectory refusal naming run 'r', episode 'e1' and `turn_text`.
void expect_refused(const Episode& e, const SequenceLimits& limits, const std::string& turn_text,
                    const std::string& what) {
  auto seq = to_train_sequence(e, limits);
  ASSERT_FALSE(seq);
  EXPECT_EQ(seq.error().category, ErrorCategory::kInvalidInput);
  EXPECT_EQ(seq.error().code, "learner.bad_trajectory");
  const std::string& m = seq.error().message;
  EXPECT_NE(m.find("run 'r' episode 'e1'"), std::string::npos) << m;
  EXPECT_NE(m.find(turn_text), std::string::npos) << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
}

TEST(TrainSequenceRefusal, NoTurns) {
  Episode e = good_episode();
  e.turns.clear();
  expect_refused(e, {}, "no turns", "no turns");
}

TEST(TrainSequenceRefusal, NoModelToken) {
  Episode e = good_episode();
  e.turns.erase(e.turns.begin() + 3);
  e.turns.erase(e.turns.begin() + 1);
  expect_refused(e, {}, "turns 0..1", "no model token");
}

TEST(TrainSequenceRefusal, LossMaskSizeDiffersFromTokenCount) {
  Episode e = good_episode();
  e.turns[2].loss_mask.pop_back();
  expect_refused(e, {}, "turn 2:", "loss mask has 2 entries for 3 tokens");
}

TEST(TrainSequenceRefusal, LossMaskByteOtherThanZeroOrOne) {
  Episode e = good_episode();
  e.turns[3].loss_mask[1] = 2;
  expect_refused(e, {}, "turn 3: token 1 (sequence position 9)", "loss mask byte 2");
}

TEST(TrainSequenceRefusal, ModelTokensWithoutLogprobs) {
  Episode e = good_episode();
  e.turns[1].logprobs.clear();
  expect_refused(e, {}, "turn 1:", "no logprobs");
}

TEST(TrainSequenceRefusal, LogprobsOfTheWrongSize) {
  Episode e = good_episode();
  e.turns[3].logprobs.push_back(-1.0f);
  expect_refused(e, {}, "turn 3:", "3 logprobs for 2 tokens");
}

TEST(TrainSequenceRefusal, NonFiniteLogprob) {
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::infinity()}) {
    Episode e = good_episode();
    e.turns[1].logprobs[1] = bad;
    expect_refused(e, {}, "turn 1: token 1 (sequence position 4)", "is not finite");
  }
}

TEST(TrainSequenceRefusal, PositiveLogprob) {
  Episode e = good_episode();
  e.turns[3].logprobs[0] = 0.125f;
  expect_refused(e, {}, "turn 3: token 0 (sequence position 8)", "> 0");
  e.turns[3].logprobs[0] = 0.0f;  // probability 1 is a log-probability
  EXPECT_TRUE(to_train_sequence(e, {}));
}

TEST(TrainSequenceRefusal, TokenIdOutsideTheVocabulary) {
  Episode e = good_episode();
  e.turns[2].token_ids[2] = 100;  // a tool token: every token is embedded, so all are checked
  expect_refused(e, {.vocab_size = 100}, "turn 2: token 2 (sequence position 7)",
                 "token id 100 >= vocab_size 100");
  e.turns[2].token_ids[2] = 99;
  EXPECT_TRUE(to_train_sequence(e, {.vocab_size = 100}));
}

TEST(TrainSequenceRefusal, FirstTokenMaskedOne) {
  Episode e = good_episode();
  e.turns.erase(e.turns.begin());
  e.turns.insert(e.turns.begin(), turn(TurnRole::kSystem, {}, 0, 1));  // empty turns do not count
  expect_refused(e, {}, "turn 1: token 0 (sequence position 0)", "first token has loss mask 1");
}

TEST(TrainSequenceRefusal, LongerThanMaxTokens) {
  Episode e = good_episode();
  expect_refused(e, {.max_tokens = 7},
                 "turn 2:", "8 tokens here (10 in all), more than max_tokens 7");
  EXPECT_TRUE(to_train_sequence(e, {.max_tokens = 10}));
}

TEST(TrainSequence, ABatchKeepsTheGoodAndReportsTheBad) {
  std::vector<Episode> episodes = {good_episode("r", "a"), good_episode("r", "b"),
                                   good_episode("r", "c")};
  episodes[1].turns[1].logprobs.clear();
  SequenceBatch batch = to_train_sequences(episodes, {});
  ASSERT_EQ(batch.sequences.size(), 2u);
  EXPECT_EQ(batch.sequences[0].episode, EpisodeId{"a"});
  EXPECT_EQ(batch.sequences[1].episode, EpisodeId{"c"});
  ASSERT_EQ(batch.refused.size(), 1u);
  EXPECT_NE(batch.refused[0].message.find("episode 'b'"), std::string::npos);
}

// ---- packing and sharding ----

std::vector<TrainSequence> sequences_of_lengths(const std::vector<std::int64_t>& lengths) {
  std::vector<TrainSequence> out(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    out[i].episode = EpisodeId{"s" + std::to_string(i)};
    out[i].run = RunId{"r"};
    out[i].ids.assign(static_cast<std::size_t>(lengths[i]), 1);
  }
  return out;
}

std::vector<std::int64_t> random_lengths(std::mt19937& rng, std::size_t n, std::int64_t max) {
  std::uniform_int_distribution<std::int64_t> len(1, max);
  std::vector<std::int64_t> out(n);
  for (auto& l : out) l = len(rng);
  return out;
}

TEST(Packing, FirstFitDecreasingOnAKnownExample) {
  auto micro = pack_micro_batches(sequences_of_lengths({3, 5, 2, 5, 1}), 10);
  ASSERT_TRUE(micro) << micro.error().to_string();
  ASSERT_EQ(micro->size(), 2u);
  EXPECT_EQ((*micro)[0].rows, (std::vector<std::size_t>{1, 3}));  // 2 x 5 = 10
  EXPECT_EQ((*micro)[0].max_len, 5);
  EXPECT_EQ((*micro)[1].rows, (std::vector<std::size_t>{0, 2, 4}));  // 3 x 3 = 9
  EXPECT_EQ((*micro)[1].max_len, 3);
  EXPECT_EQ((*micro)[1].padded_tokens(), 9);
}

TEST(Packing, RandomBatchesKeepTheBudgetPlaceEverySequenceOnceAndAreDeterministic) {
  const unsigned seed = testing::test_seed(20261204);
  std::mt19937 rng(seed);
  for (int round = 0; round < 50; ++round) {
    const std::int64_t budget = std::uniform_int_distribution<std::int64_t>(64, 8192)(rng);
    const auto seqs = sequences_of_lengths(random_lengths(rng, rng() % 200, budget));
    auto micro = pack_micro_batches(seqs, budget);
    ASSERT_TRUE(micro) << micro.error().to_string();
    std::vector<int> seen(seqs.size(), 0);
    for (const MicroBatch& mb : *micro) {
      ASSERT_FALSE(mb.rows.empty());
      EXPECT_LE(mb.padded_tokens(), budget) << "round " << round;
      std::int64_t longest = 0;
      for (std::size_t r = 0; r < mb.rows.size(); ++r) {
        ++seen[mb.rows[r]];
        longest = std::max(longest, seqs[mb.rows[r]].size());
        if (r > 0) {
          EXPECT_GE(seqs[mb.rows[r - 1]].size(), seqs[mb.rows[r]].size());
        }
      }
      EXPECT_EQ(mb.max_len, longest);
    }
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "sequence " << i;
    auto again = pack_micro_batches(seqs, budget);
    ASSERT_TRUE(again);
    ASSERT_EQ(again->size(), micro->size());
    for (std::size_t m = 0; m < micro->size(); ++m) {
      EXPECT_EQ((*again)[m].rows, (*micro)[m].rows);
      EXPECT_EQ((*again)[m].max_len, (*micro)[m].max_len);
    }
  }
}

TEST(Packing, ASequenceLongerThanTheBudgetIsAnErrorWithTheArithmetic) {
  auto micro = pack_micro_batches(sequences_of_lengths({100, 4097, 5}), 4096);
  ASSERT_FALSE(micro);
  EXPECT_EQ(micro.error().code, "learner.sequence_too_long");
  EXPECT_EQ(micro.error().category, ErrorCategory::kInvalidInput);
  const std::string& m = micro.error().message;
  EXPECT_NE(m.find("sequence 1 (run 'r' episode 's1')"), std::string::npos) << m;
  EXPECT_NE(m.find("1 row x 4097 = 4097 padded tokens > micro_batch_tokens 4096"),
            std::string::npos)
      << m;
  EXPECT_EQ(pack_micro_batches(sequences_of_lengths({1}), 0).error().code, "learner.bad_budget");
  auto empty = pack_micro_batches({}, 16);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(Sharding, EveryRankGetsABalancedShareAndEverySequenceLandsOnce) {
  const unsigned seed = testing::test_seed(4242);
  std::mt19937 rng(seed);
  for (int world = 1; world <= 8; ++world) {
    const auto lengths = random_lengths(rng, 5 + rng() % 300, 4000);
    const auto seqs = sequences_of_lengths(lengths);
    std::vector<int> seen(seqs.size(), 0);
    std::vector<std::int64_t> load;
    for (int rank = 0; rank < world; ++rank) {
      const auto mine = shard_for_rank(seqs, rank, world);
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      EXPECT_EQ(mine, shard_for_rank(seqs, rank, world));  // deterministic
      std::int64_t tokens = 0;
      for (std::size_t i : mine) ++seen[i], tokens += seqs[i].size();
      load.push_back(tokens);
    }
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "sequence " << i;
    // Greedy to the least-loaded rank: loads differ by at most the longest sequence.
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, *std::max_element(lengths.begin(), lengths.end())) << "world " << world;
  }
  const auto seqs = sequences_of_lengths({3, 3});
  EXPECT_TRUE(shard_for_rank(seqs, 2, 2).empty());
  EXPECT_TRUE(shard_for_rank(seqs, -1, 2).empty());
  EXPECT_TRUE(shard_for_rank(seqs, 0, 0).empty());
  EXPECT_EQ(shard_for_rank(seqs, 0, 4), (std::vector<std::size_t>{0}));
  EXPECT_EQ(shard_for_rank(seqs, 1, 4), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(shard_for_rank(seqs, 3, 4).empty());
}

// ---- GAE ----

// The definition, written independently of gae.cpp: over the model positions K, delta_i =
// r[K_i] + gamma V[K_{i+1}] - V[K_i] and A_i = sum_l (gamma lambda)^l delta_{i+l}. O(T^2).
// Kept in double, so the comparison measures compute_gae's error, float rounding included.
struct ReferenceGae {
  std::vector<double> advantages, returns;
};
ReferenceGae reference_gae(const std::vector<std::uint8_t>& mask, const std::vector<float>& v,
                           const std::vector<float>& r, double gamma, double lambda) {
  std::vector<std::size_t> k;
  for (std::size_t t = 0; t < mask.size(); ++t) {
    if (mask[t] == 1) k.push_back(t);
  }
  std::vector<double> delta(k.size());
  for (std::size_t i = 0; i < k.size(); ++i) {
    const double next = i + 1 < k.size() ? v[k[i + 1]] : 0.0;
    delta[i] = r[k[i]] + gamma * next - v[k[i]];
  }
  ReferenceGae out{std::vector<double>(mask.size(), 0.0), std::vector<double>(mask.size(), 0.0)};
  for (std::size_t i = 0; i < k.size(); ++i) {
    double a = 0;
    for (std::size_t l = 0; i + l < k.size(); ++l) {
      a += std::pow(gamma * lambda, static_cast<double>(l)) * delta[i + l];
    }
    out.advantages[k[i]] = a;
    out.returns[k[i]] = a + v[k[i]];
  }
  return out;
}

TEST(Gae, AHandWorkedExampleSkipsTheToolSpan) {
  // Model tokens at 1, 2 and 5; 3 and 4 are tool output. gamma 1, lambda 0.5.
  const std::vector<std::uint8_t> mask = {0, 1, 1, 0, 0, 1};
  const std::vector<float> v = {9, 0.5f, 0.25f, 9, 9, 1.0f};
  const std::vector<float> r = {9, 0, 0, 9, 9, 2.0f};
  const GaeResult g = compute_gae(mask, v, r, 1.0, 0.5);
  // delta(5) = 2 - 1 = 1; delta(2) = 0 + 1 - 0.25 = 0.75; delta(1) = 0 + 0.25 - 0.5 = -0.25.
  // A(5) = 1; A(2) = 0.75 + 0.5 = 1.25; A(1) = -0.25 + 0.625 = 0.375.
  EXPECT_EQ(g.advantages, (std::vector<float>{0, 0.375f, 1.25f, 0, 0, 1.0f}));
  EXPECT_EQ(g.returns, (std::vector<float>{0, 0.875f, 1.5f, 0, 0, 2.0f}));
}

TEST(Gae, MatchesTheQuadraticReferenceOnRandomSequencesWithToolSpans) {
  const unsigned seed = testing::test_seed(1337);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  double worst = 0;
  for (double gamma : {1.0, 0.99}) {
    for (double lambda : {0.95, 1.0}) {
      for (int round = 0; round < 12; ++round) {
        const std::size_t n = 1 + rng() % 2000;
        // Alternating spans: model turns and tool/prompt spans of random lengths.
        std::vector<std::uint8_t> mask(n);
        std::uint8_t m = 0;
        for (std::size_t t = 0; t < n;) {
          const std::size_t span = 1 + rng() % 60;
          for (std::size_t s = 0; s < span && t < n; ++s, ++t) mask[t] = m;
          m ^= 1;
        }
        std::vector<float> v(n), r(n, 0.0f);
        for (auto& x : v) x = unit(rng);
        // A final reward at the last model token and a few sparse ones elsewhere (also on
        // mask-0 tokens, where GAE must ignore them).
        for (int j = 0; j < 5; ++j) r[rng() % n] = unit(rng);
        for (std::size_t t = n; t-- > 0;) {
          if (mask[t] == 1) {
            r[t] = 3.0f * unit(rng);
            break;
          }
        }
        const GaeResult got = compute_gae(mask, v, r, gamma, lambda);
        const ReferenceGae want = reference_gae(mask, v, r, gamma, lambda);
        ASSERT_EQ(got.advantages.size(), n);
        ASSERT_EQ(got.returns.size(), n);
        for (std::size_t t = 0; t < n; ++t) {
          if (mask[t] == 0) {
            ASSERT_EQ(got.advantages[t], 0.0f);
            ASSERT_EQ(got.returns[t], 0.0f);
          }
          worst = std::max(worst, std::abs(got.advantages[t] - want.advantages[t]));
          worst = std::max(worst, std::abs(got.returns[t] - want.returns[t]));
        }
      }
    }
  }
  std::printf("max abs error vs reference: %.3g\n", worst);
  EXPECT_LE(worst, 1e-6);
}

TEST(Gae, AllMaskZeroGivesZeros) {
  const GaeResult g = compute_gae({0, 0, 0}, {1, 2, 3}, {1, 1, 1}, 1.0, 0.95);
  EXPECT_EQ(g.advantages, (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(g.returns, (std::vector<float>{0, 0, 0}));
  const GaeResult none = compute_gae({}, {}, {}, 1.0, 0.95);
  EXPECT_TRUE(none.advantages.empty());
}

// RFT within a batch: positive, no invalid tool call, no wasted loop; with best_of_task only the
// highest reward among each task's qualifying episodes (ties all kept).
TEST(RftSelection, PositiveCleanAndBestOfTask) {
  auto ep = [](const std::string& task, double reward, std::uint32_t invalid = 0,
               std::uint32_t wasted = 0) {
    EpisodeSummary s;
    s.task_id = TaskId{task};
    s.final_reward = reward;
    s.invalid_tool_calls = invalid;
    s.wasted_loops = wasted;
    return s;
  };
  const std::vector<EpisodeSummary> batch = {ep("a", 1),       ep("a", 3), ep("a", 3),
                                             ep("a", -1),      ep("b", 1), ep("b", 2, 1),
                                             ep("c", 2, 0, 1), ep("d", -1)};
  EXPECT_EQ(rft_selection(batch, false),
            (std::vector<bool>{true, true, true, false, true, false, false, false}));
  // b's +2 made an invalid call: b's best clean episode is its +1.
  EXPECT_EQ(rft_selection(batch, true),
            (std::vector<bool>{false, true, true, false, true, false, false, false}));
  EXPECT_TRUE(rft_selection({}, true).empty());
}

// Leave-one-out: each episode against the mean of the others of its task; a task every episode
// of which has the same reward gives 0 to all; one alone with its task gets 0 and is counted.
TEST(GroupAdvantages, LeaveOneOutWithinEachTask) {
  const GroupAdvantages g =
      leave_one_out_advantages({"a", "b", "a", "c", "a", "b"}, {3.0, -1.0, 1.0, 2.0, -1.0, -1.0});
  ASSERT_EQ(g.advantages.size(), 6u);
  EXPECT_DOUBLE_EQ(g.advantages[0], 3.0 - (1.0 - 1.0) / 2);   // 3
  EXPECT_DOUBLE_EQ(g.advantages[2], 1.0 - (3.0 - 1.0) / 2);   // 0
  EXPECT_DOUBLE_EQ(g.advantages[4], -1.0 - (3.0 + 1.0) / 2);  // -3
  EXPECT_DOUBLE_EQ(g.advantages[1], 0.0);                     // b: both -1
  EXPECT_DOUBLE_EQ(g.advantages[5], 0.0);
  EXPECT_DOUBLE_EQ(g.advantages[3], 0.0);  // c: alone
  EXPECT_EQ(g.alone, (std::vector<bool>{false, false, false, true, false, false}));
  EXPECT_EQ(g.alone_count(), 1u);
  EXPECT_TRUE(leave_one_out_advantages({}, {}).advantages.empty());
}

TEST(Whitening, MomentsCombineAcrossRanksAndWhitenedAdvantagesHaveMeanZeroStdOne) {
  const unsigned seed = testing::test_seed(99);
  std::mt19937 rng(seed);
  std::normal_distribution<float> adv(0.7f, 2.0f);
  // Two "ranks", three sequences each.
  std::vector<std::vector<float>> a(6);
  std::vector<std::vector<std::uint8_t>> mask(6);
  for (std::size_t s = 0; s < 6; ++s) {
    const std::size_t n = 50 + rng() % 500;
    for (std::size_t t = 0; t < n; ++t) {
      mask[s].push_back(static_cast<std::uint8_t>(rng() % 3 != 0));
      a[s].push_back(mask[s].back() ? adv(rng) : 0.0f);
    }
  }
  MomentSums rank0, rank1, all;
  for (std::size_t s = 0; s < 6; ++s) (s < 3 ? rank0 : rank1).add(a[s], mask[s]);
  for (std::size_t s = 0; s < 6; ++s) all.add(a[s], mask[s]);
  MomentSums reduced = rank0;
  reduced.merge(rank1);  // what the trainer's allreduce computes
  EXPECT_DOUBLE_EQ(reduced.count, all.count);
  EXPECT_NEAR(reduced.sum, all.sum, 1e-9 * std::abs(all.sum) + 1e-9);
  EXPECT_NEAR(reduced.sum_sq, all.sum_sq, 1e-9 * all.sum_sq);

  // Direct two-pass moments.
  double n = 0, sum = 0;
  for (std::size_t s = 0; s < 6; ++s) {
    for (std::size_t t = 0; t < a[s].size(); ++t) {
      if (mask[s][t]) n += 1, sum += a[s][t];
    }
  }
  const double mean = sum / n;
  double ss = 0;
  for (std::size_t s = 0; s < 6; ++s) {
    for (std::size_t t = 0; t < a[s].size(); ++t) {
      if (mask[s][t]) ss += (a[s][t] - mean) * (a[s][t] - mean);
    }
  }
  EXPECT_EQ(reduced.count, n);
  EXPECT_NEAR(reduced.mean(), mean, 1e-9);
  EXPECT_NEAR(reduced.stddev(), std::sqrt(ss / n), 1e-9);

  MomentSums after;
  for (std::size_t s = 0; s < 6; ++s) {
    std::vector<float> w = a[s];
    for (std::size_t t = 0; t < w.size(); ++t) {
      if (!mask[s][t]) w[t] = 123.0f;  // whatever sits under mask 0 comes out 0
    }
    whiten(w, mask[s], reduced.mean(), reduced.stddev());
    for (std::size_t t = 0; t < w.size(); ++t) {
      if (!mask[s][t]) {
        ASSERT_EQ(w[t], 0.0f);
      }
    }
    after.add(w, mask[s]);
  }
  EXPECT_NEAR(after.mean(), 0.0, 1e-5);
  EXPECT_NEAR(after.stddev(), 1.0, 1e-5);

  EXPECT_EQ(MomentSums{}.mean(), 0.0);
  EXPECT_EQ(MomentSums{}.stddev(), 0.0);
  std::vector<float> same = {2, 2, 5};
  whiten(same, {1, 1, 0}, 2.0, 0.0);  // std 0: eps keeps it finite
  EXPECT_EQ(same, (std::vector<float>{0, 0, 0}));
}

// ---- loading from the run store ----

EpisodeRecord record_of(const Episode& e, std::string trajectory) {
  EpisodeRecord r = testing::make_episode(e.run_id.value(), e.episode_id.value(), e.task_id.value(),
                                          e.final_reward);
  r.stage = e.stage;
  r.trajectory_bytes = std::move(trajectory);
  return r;
}

// Puts `value` under an episode's key with RocksDB directly, behind the (closed) store's back.
void poke_episode(const std::string& dir, const std::string& run, const std::string& id,
                  const std::string& value) {
  rocks::StoreRocksOptions o = rocks::make_options(testing::store_at(dir));
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  ASSERT_TRUE(rocksdb::DB::Open(o.db, dir, o.column_families, &handles, &raw).ok());
  rocksdb::WriteOptions sync;
  sync.sync = true;
  ASSERT_TRUE(raw->Put(sync, handles[static_cast<int>(store_keys::Cf::kEpisodes)],
                       store_keys::episode_key(RunId{run}, EpisodeId{id}), value)
                  .ok());
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

TEST(EpisodeSource, LoadsGoodEpisodesAndRefusesBadOnesByName) {
  testing::TempStore s("learner_data");
  ASSERT_TRUE(s.store);
  StoreWrite w;
  for (const char* id : {"a", "b", "c"}) {
    w.episodes.push_back(record_of(good_episode("r", id), encode_episode(good_episode("r", id))));
  }
  // Bytes that are no trajectory at all.
  w.episodes.push_back(record_of(good_episode("r", "garbage"), testing::trajectory_for("g", 300)));
  // A well-formed trajectory the learner refuses: its first token is a model token.
  Episode first_masked = good_episode("r", "masked");
  first_masked.turns.erase(first_masked.turns.begin());
  w.episodes.push_back(record_of(first_masked, encode_episode(first_masked)));
  // A trajectory filed under another episode's id.
  w.episodes.push_back(
      record_of(good_episode("r", "moved"), encode_episode(good_episode("r", "x"))));
  // A record whose stored value is corrupted below.
  w.episodes.push_back(
      record_of(good_episode("r", "rotten"), encode_episode(good_episode("r", "rotten"))));
  ASSERT_TRUE(s.store->write(std::move(w), 10s));
  s.store.reset();
  poke_episode(s.dir, "r", "rotten", "this is not a store value");
  ASSERT_TRUE(s.reopen(StoreMode::kReadOnly));

  // The summaries come from an index scan, which the corrupt value does not touch.
  auto picked = s.store->select_rft({.run = RunId{"r"}});
  ASSERT_TRUE(picked) << picked.error().to_string();
  ASSERT_EQ(picked->size(), 7u);
  auto loaded = load_sequences(*s.store, *picked, {.vocab_size = 100});
  ASSERT_TRUE(loaded) << loaded.error().to_string();

  std::vector<std::string> kept;
  for (const TrainSequence& seq : loaded->sequences) kept.push_back(seq.episode.value());
  EXPECT_EQ(kept, (std::vector<std::string>{"a", "b", "c"}));
  for (const TrainSequence& seq : loaded->sequences) {
    auto direct = to_train_sequence(good_episode("r", seq.episode.value()), {});
    ASSERT_TRUE(direct);
    EXPECT_EQ(seq.ids, direct->ids);
    EXPECT_EQ(seq.loss_mask, direct->loss_mask);
    EXPECT_EQ(seq.behaviour_logprobs, direct->behaviour_logprobs);
    EXPECT_EQ(seq.policy_versions, direct->policy_versions);
    EXPECT_EQ(seq.reward, 2.5);
  }

  std::map<std::string, std::string> code_of;  // episode named in the message -> code
  for (const Error& e : loaded->refused) {
    for (const char* id : {"garbage", "masked", "moved", "rotten"}) {
      if (e.message.find("episode '" + std::string(id) + "'") != std::string::npos) {
        code_of[id] = e.code;
      }
    }
  }
  EXPECT_EQ(loaded->refused.size(), 4u);
  EXPECT_EQ(code_of["garbage"].rfind("wire.", 0), 0u) << code_of["garbage"];
  EXPECT_EQ(code_of["masked"], "learner.bad_trajectory");
  EXPECT_EQ(code_of["moved"], "learner.episode_mismatch");
  EXPECT_EQ(code_of["rotten"], "store.corrupt_value");
}

TEST(EpisodeSource, AMissingEpisodeFailsTheWholeCallNamingIt) {
  testing::TempStore s("learner_data_missing");
  ASSERT_TRUE(s.store);
  StoreWrite w;
  w.episodes.push_back(record_of(good_episode("r", "a"), encode_episode(good_episode("r", "a"))));
  ASSERT_TRUE(s.store->write(std::move(w), 10s));
  auto picked = s.store->select_rft({.run = RunId{"r"}});
  ASSERT_TRUE(picked);
  EpisodeSummary gone = picked->front();
  gone.episode_id = EpisodeId{"gone"};
  picked->push_back(gone);
  auto loaded = load_sequences(*s.store, *picked, {});
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().category, ErrorCategory::kNotFound);
  EXPECT_NE(loaded.error().message.find("run 'r' episode 'gone'"), std::string::npos)
      << loaded.error().message;
}

}  // namespace
}  // namespace cuda_agent
