#include "coordinator/episode_ledger.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "coordinator/test_support.h"

namespace cuda_agent {
namespace {

constexpr EpisodeStage kPpo = EpisodeStage::kAgenticPpo;
const RunId kRun{"r"};

std::vector<TaskId> tasks(int n) {
  std::vector<TaskId> t;
  for (int i = 0; i < n; ++i) t.push_back(TaskId{"t/" + std::to_string(i)});
  return t;
}

EpisodeLedger ledger(std::uint64_t batch, std::uint64_t s, std::uint64_t conc = 0) {
  return EpisodeLedger(kRun, {.batch_episodes = batch, .max_staleness = s, .max_concurrent = conc},
                       TaskSampler(tasks(5), 3));
}

TEST(EpisodeLedger, IdsCarryTheirSeq) {
  EXPECT_EQ(make_episode_id(kRun, 42).value(), "r/ep00000042");
  EXPECT_EQ(parse_episode_seq(kRun, make_episode_id(kRun, 42)), 42u);
  EXPECT_EQ(parse_episode_seq(RunId{"other"}, make_episode_id(kRun, 42)), std::nullopt);
  EXPECT_EQ(parse_episode_seq(kRun, EpisodeId{"r/epx1"}), std::nullopt);
}

TEST(EpisodeLedger, DispatchesUnderTheBoundAndRerunsALostWorkersEpisodeFirst) {
  EpisodeLedger l = ledger(2, 0);
  auto a = l.dispatch(WorkerId{"w1"}, PolicyVersion{0}, kPpo);
  auto b = l.dispatch(WorkerId{"w2"}, PolicyVersion{0}, kPpo);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->attempt, 1u);
  EXPECT_FALSE(l.dispatch(WorkerId{"w3"}, PolicyVersion{0}, kPpo)) << "S = 0: one batch";
  EXPECT_EQ(l.worker_lost(WorkerId{"w1"}), std::vector<EpisodeId>{a->episode_id});
  auto rerun = l.dispatch(WorkerId{"w3"}, PolicyVersion{0}, kPpo);
  ASSERT_TRUE(rerun);
  EXPECT_EQ(rerun->episode_id, a->episode_id);
  EXPECT_EQ(rerun->task_id, a->task_id);
  EXPECT_EQ(rerun->attempt, 2u);
  EXPECT_EQ(l.counts().minted, 2u);
}

TEST(EpisodeLedger, SubmissionsAreCheckedByAttemptAndAnsweredIdempotently) {
  EpisodeLedger l = ledger(2, 1);
  auto a = *l.dispatch(WorkerId{"w1"}, PolicyVersion{0}, kPpo);
  EXPECT_EQ(l.begin_submit(EpisodeId{"r/ep00000099"}, 1), SubmitCheck::kUnknown);
  EXPECT_EQ(l.begin_submit(a.episode_id, 1), SubmitCheck::kStore);
  EXPECT_EQ(l.begin_submit(a.episode_id, 1), SubmitCheck::kStoring);
  l.acknowledge(a.episode_id);
  EXPECT_EQ(l.begin_submit(a.episode_id, 1), SubmitCheck::kDuplicate);
  EXPECT_EQ(l.staleness().counters().accepted, 1u);

  auto b = *l.dispatch(WorkerId{"w1"}, PolicyVersion{0}, kPpo);
  l.worker_lost(WorkerId{"w1"});
  EXPECT_EQ(l.begin_submit(b.episode_id, 1), SubmitCheck::kSuperseded) << "queued for a rerun";
  auto b2 = *l.dispatch(WorkerId{"w2"}, PolicyVersion{0}, kPpo);
  EXPECT_EQ(l.begin_submit(b.episode_id, 1), SubmitCheck::kSuperseded) << "attempt 2 in flight";
  EXPECT_EQ(l.begin_submit(b2.episode_id, 2), SubmitCheck::kStore);
  l.store_failed(b2.episode_id, /*requeue=*/false);
  EXPECT_EQ(l.begin_submit(b2.episode_id, 2), SubmitCheck::kStore) << "the worker retries";
}

// Groups of 2: the sampler draws each task twice in a row, and a batch takes the episodes whose
// task has another ready one before one that is alone, however they arrived.
TEST(EpisodeLedger, GroupedBatchesKeepATasksEpisodesTogether) {
  EpisodeLedger l(kRun, {.batch_episodes = 2, .max_staleness = 2}, TaskSampler(tasks(5), 3, {}, 2));
  std::vector<Assignment> v0;
  for (int i = 0; i < 4; ++i) v0.push_back(*l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo));
  EXPECT_EQ(v0[0].task_id, v0[1].task_id);
  EXPECT_EQ(v0[2].task_id, v0[3].task_id);
  EXPECT_NE(v0[1].task_id, v0[2].task_id);
  for (int i : {0, 2, 3}) {  // the first group's second episode is still running
    ASSERT_EQ(l.begin_submit(v0[i].episode_id, 1), SubmitCheck::kStore);
    l.acknowledge(v0[i].episode_id);
  }
  auto b0 = *l.form_batch(0, PolicyVersion{0}, kPpo);
  EXPECT_EQ(b0.episodes, (std::vector<EpisodeId>{v0[2].episode_id, v0[3].episode_id}));
}

TEST(EpisodeLedger, BatchesTakeTheOldestAndDropStaleOnes) {
  EpisodeLedger l = ledger(2, 1);
  std::vector<Assignment> v0;
  for (int i = 0; i < 4; ++i) v0.push_back(*l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo));
  for (int i = 3; i >= 0; --i) {  // acknowledged newest first
    ASSERT_EQ(l.begin_submit(v0[i].episode_id, 1), SubmitCheck::kStore);
    l.acknowledge(v0[i].episode_id);
  }
  auto b0 = *l.form_batch(0, PolicyVersion{0}, kPpo);
  // The two acknowledged first, listed in mint order.
  EXPECT_EQ(b0.episodes, (std::vector<EpisodeId>{v0[2].episode_id, v0[3].episode_id}));
  l.step_done(b0);
  // Version 1: one more at v1; the two left from v0 have staleness 1 (allowed).
  auto c = *l.dispatch(WorkerId{"w"}, PolicyVersion{1}, kPpo);
  ASSERT_EQ(l.begin_submit(c.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(c.episode_id);
  // At version 2 the v0 ones are 2 versions old: stale, and the bound admits their replacements.
  EXPECT_FALSE(l.form_batch(1, PolicyVersion{2}, kPpo));
  EXPECT_EQ(l.find(v0[0].episode_id)->phase, EpisodePhase::kStale);
  EXPECT_EQ(l.find(v0[1].episode_id)->phase, EpisodePhase::kStale);
  EXPECT_EQ(l.staleness().counters().accepted, 3u);  // 2 trained + c
  EXPECT_EQ(l.stale_total(), 2u);
  auto d = *l.dispatch(WorkerId{"w"}, PolicyVersion{2}, kPpo);
  ASSERT_EQ(l.begin_submit(d.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(d.episode_id);
  auto b1 = *l.form_batch(1, PolicyVersion{2}, kPpo);
  EXPECT_EQ(b1.episodes, (std::vector<EpisodeId>{c.episode_id, d.episode_id}));
  l.step_done(b1);
  EXPECT_EQ(l.find(c.episode_id)->staleness, 1u);
  EXPECT_EQ(l.find(d.episode_id)->staleness, 0u);
}

TEST(EpisodeLedger, EndStageAndRollbackKeepEpisodesOutOfTraining) {
  EpisodeLedger l = ledger(1, 3);
  auto a = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo);
  auto b = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo);
  ASSERT_EQ(l.begin_submit(a.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(a.episode_id);
  EXPECT_EQ(l.end_stage(kPpo), 1u);
  EXPECT_EQ(l.find(a.episode_id)->phase, EpisodePhase::kStale);
  ASSERT_EQ(l.begin_submit(b.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(b.episode_id);
  EXPECT_EQ(l.find(b.episode_id)->phase, EpisodePhase::kStale) << "in flight when it ended";

  auto c = *l.dispatch(WorkerId{"w"}, PolicyVersion{2}, EpisodeStage::kAgentWarmup);
  auto d = *l.dispatch(WorkerId{"w"}, PolicyVersion{2}, EpisodeStage::kAgentWarmup);
  ASSERT_EQ(l.begin_submit(c.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(c.episode_id);
  EXPECT_EQ(l.rollback(PolicyVersion{1}), 1u);
  EXPECT_EQ(l.find(c.episode_id)->phase, EpisodePhase::kOrphaned);
  ASSERT_EQ(l.begin_submit(d.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(d.episode_id);
  EXPECT_EQ(l.find(d.episode_id)->phase, EpisodePhase::kOrphaned);
  EXPECT_FALSE(l.form_batch(0, PolicyVersion{3}, EpisodeStage::kAgentWarmup));
  EXPECT_EQ(l.orphaned_total(), 2u);
}

// A seeded simulation: workers take work, finish in random order, get lost (their late
// submissions arrive later), stores fail; the learner trains whenever a batch forms.
void simulate(std::uint64_t seed, std::uint64_t s) {
  std::mt19937_64 rng(seed);
  const std::uint64_t batch = 1 + rng() % 6;
  EpisodeLedger l(kRun, {.batch_episodes = batch, .max_staleness = s, .max_concurrent = 0},
                  TaskSampler(tasks(7), seed));
  struct Held {
    WorkerId worker;
    Assignment a;
  };
  std::vector<Held> held, zombies;
  std::set<EpisodeId> trained;
  PolicyVersion version{0};
  std::uint64_t step = 0;
  const int workers = 1 + static_cast<int>(rng() % 5);
  auto check = [&](const char* what) {
    const LedgerCounts c = l.counts();
    std::uint64_t sum = 0;
    for (std::uint64_t n : c.by_phase) sum += n;
    ASSERT_EQ(sum, c.minted) << what << " seed " << seed;
    ASSERT_EQ(c.of(EpisodePhase::kTrained), trained.size()) << what;
    const auto& k = l.staleness().counters();
    ASSERT_LE(k.accepted + k.running, l.staleness().bound(version)) << what << " seed " << seed;
    ASSERT_EQ(k.running, c.of(EpisodePhase::kInFlight)) << what;
  };
  for (int op = 0; op < 3000; ++op) {
    const int r = static_cast<int>(rng() % 10);
    if (r < 4) {
      WorkerId w{"w" + std::to_string(rng() % workers)};
      if (auto a = l.dispatch(w, version, kPpo)) held.push_back({w, *a});
      check("dispatch");
    } else if (r < 7 && !held.empty()) {
      const std::size_t i = rng() % held.size();
      Held h = held[i];
      held.erase(held.begin() + static_cast<long>(i));
      ASSERT_EQ(l.begin_submit(h.a.episode_id, h.a.attempt), SubmitCheck::kStore);
      if (rng() % 10 == 0) {
        l.store_failed(h.a.episode_id, true);
      } else {
        l.acknowledge(h.a.episode_id);
      }
      check("submit");
    } else if (r == 7 && rng() % 5 == 0) {
      WorkerId w{"w" + std::to_string(rng() % workers)};
      l.worker_lost(w);
      for (auto it = held.begin(); it != held.end();) {
        if (it->worker == w) {
          zombies.push_back(*it);
          it = held.erase(it);
        } else {
          ++it;
        }
      }
      check("lost");
    } else if (r == 8 && !zombies.empty()) {
      Held z = zombies.back();
      zombies.pop_back();
      const SubmitCheck got = l.begin_submit(z.a.episode_id, z.a.attempt);
      ASSERT_TRUE(got == SubmitCheck::kSuperseded || got == SubmitCheck::kDuplicate);
    } else if (r == 9) {
      if (auto b = l.form_batch(step, version, kPpo)) {
        ASSERT_EQ(b->episodes.size(), batch);
        for (const EpisodeId& id : b->episodes) {
          ASSERT_TRUE(trained.insert(id).second) << "trained twice: " << id.value();
          const LedgerEntry* e = l.find(id);
          ASSERT_LE(version.value() - e->dispatched_version.value(), s);
          if (s == 0) ASSERT_EQ(e->dispatched_version, version) << "synchronous PPO";
        }
        l.step_done(*b);
        ++step;
        version = PolicyVersion{version.value() + 1};
      }
      check("step");
    }
  }
  EXPECT_GT(step, 0u) << "seed " << seed;
}

TEST(EpisodeLedger, InvariantsHoldUnderRandomInterleavings) {
  const std::uint64_t seed = coord_test::test_seed("ledger interleavings");
  for (std::uint64_t i = 0; i < 60; ++i) {
    simulate(seed + i, i % 3);
    if (HasFatalFailure()) return;
  }
}

TEST(EpisodeLedger, ZeroStalenessTrainsOnlyEpisodesOfTheStepsOwnVersion) {
  const std::uint64_t seed = coord_test::test_seed("ledger S=0");
  for (std::uint64_t i = 0; i < 30; ++i) {
    simulate(seed + i, 0);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace cuda_agent
