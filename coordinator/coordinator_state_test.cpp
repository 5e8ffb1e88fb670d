#include "coordinator/coordinator_state.h"

#include <gtest/gtest.h>

#include "coordinator/test_support.h"

namespace cuda_agent {
namespace {

constexpr EpisodeStage kPpo = EpisodeStage::kAgenticPpo;
const RunId kRun{"r"};

RestoreInputs inputs(std::uint64_t batch = 2, std::uint64_t s = 1) {
  RestoreInputs in;
  in.run = kRun;
  in.staleness = {.batch_episodes = batch, .max_staleness = s};
  for (int i = 0; i < 6; ++i) in.tasks.push_back(TaskId{"t/" + std::to_string(i)});
  in.seed = 11;
  in.stage = kPpo;
  return in;
}

EpisodeSummary stored(const Assignment& a) {
  EpisodeSummary s;
  s.episode_id = a.episode_id;
  s.run_id = kRun;
  s.task_id = a.task_id;
  s.stage = a.stage;
  s.policy_version = a.policy_version;
  return s;
}

TEST(CoordinatorState, RoundTripsThroughTheStoreCodecs) {
  Expected<Restored> r = restore_ledger(inputs(), nullptr, {});
  ASSERT_TRUE(r);
  EpisodeLedger& l = r->ledger;
  auto a = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo);
  auto b = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo);
  ASSERT_EQ(l.begin_submit(a.episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(a.episode_id);
  const RecordedStep step2{.step = 2,
                           .stage = kPpo,
                           .version = PolicyVersion{2},
                           .episodes = {b.episode_id, a.episode_id}};
  RunProgress p{3, 1, 2, PolicyVersion{3}, {b.episode_id}, {step2}};
  RunRecord run;
  run.run_id = kRun;
  run.coordinator_state = snapshot_state(l, p);
  RunRecord back;
  ASSERT_TRUE(decode_store_value(encode_store_value(run), &back));
  ASSERT_TRUE(back.coordinator_state);
  const CoordinatorStateRecord& s = *back.coordinator_state;
  EXPECT_EQ(s.step, 3u);
  EXPECT_EQ(s.stage_index, 1u);
  EXPECT_EQ(s.stage_steps, 2u);
  EXPECT_EQ(s.policy_version, PolicyVersion{3});
  EXPECT_EQ(s.next_episode_seq, 2u);
  EXPECT_EQ(s.sampler_index, 2u);
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.running, 1u);
  ASSERT_EQ(s.episodes.size(), 2u);
  EXPECT_EQ(s.episodes[0].episode_id, a.episode_id);
  EXPECT_EQ(s.episodes[0].phase, static_cast<std::uint8_t>(EpisodePhase::kAcknowledged));
  EXPECT_EQ(s.episodes[1].worker_id, WorkerId{"w"});
  EXPECT_EQ(s.last_step_episodes, std::vector<EpisodeId>{b.episode_id});
  EXPECT_EQ(s.steps_since_checkpoint, std::vector<RecordedStep>{step2});
  Expected<Restored> again = restore_ledger(inputs(), &s, {});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->progress.steps_since_checkpoint, std::vector<RecordedStep>{step2});
  CheckpointRecord cp;
  cp.run_id = kRun;
  CheckpointRecord cp_back;
  ASSERT_TRUE(decode_store_value(encode_store_value(cp), &cp_back));
  EXPECT_FALSE(cp_back.coordinator_state) << "unset stays unset";
}

// Saved: a acknowledged, b and c in flight. Then c was stored, d and e were minted (e stored),
// and the coordinator died. Restore: nothing acknowledged is lost, in flight is re-queued.
TEST(CoordinatorState, RestoreAdoptsStoredEpisodesAndRequeuesTheRest) {
  Expected<Restored> r0 = restore_ledger(inputs(2, 3), nullptr, {});
  ASSERT_TRUE(r0);
  EpisodeLedger& l = r0->ledger;
  std::vector<Assignment> as;
  for (int i = 0; i < 3; ++i) as.push_back(*l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo));
  ASSERT_EQ(l.begin_submit(as[0].episode_id, 1), SubmitCheck::kStore);
  l.acknowledge(as[0].episode_id);
  const CoordinatorStateRecord saved = snapshot_state(l, RunProgress{});
  as.push_back(*l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo));  // d
  as.push_back(*l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo));  // e
  const std::vector<EpisodeSummary> in_store = {stored(as[0]), stored(as[2]), stored(as[4])};

  Expected<Restored> r = restore_ledger(inputs(2, 3), &saved, in_store);
  ASSERT_TRUE(r) << r.error().to_string();
  const EpisodeLedger& g = r->ledger;
  EXPECT_EQ(r->report.adopted, 2u);   // c, e
  EXPECT_EQ(r->report.requeued, 2u);  // b, d
  EXPECT_EQ(g.find(as[0].episode_id)->phase, EpisodePhase::kAcknowledged);
  EXPECT_EQ(g.find(as[1].episode_id)->phase, EpisodePhase::kQueued);
  EXPECT_EQ(g.find(as[2].episode_id)->phase, EpisodePhase::kAcknowledged);
  EXPECT_EQ(g.find(as[3].episode_id)->phase, EpisodePhase::kQueued);
  EXPECT_EQ(g.find(as[3].episode_id)->task_id, as[3].task_id);
  EXPECT_EQ(g.find(as[4].episode_id)->phase, EpisodePhase::kAcknowledged);
  EXPECT_EQ(g.next_seq(), 5u);
  EXPECT_EQ(g.staleness().counters().accepted, 3u);
  EXPECT_EQ(g.staleness().counters().running, 0u);
  EXPECT_EQ(g.sampler().position(), l.sampler().position()) << "the sampler continues after e";
  EpisodeLedger again = g;
  auto rerun = *again.dispatch(WorkerId{"w2"}, PolicyVersion{0}, kPpo);
  EXPECT_EQ(rerun.episode_id, as[1].episode_id);
  EXPECT_EQ(rerun.attempt, 2u);
  EXPECT_EQ(again.begin_submit(as[1].episode_id, 1), SubmitCheck::kSuperseded);
  auto rerun_d = *again.dispatch(WorkerId{"w2"}, PolicyVersion{0}, kPpo);
  EXPECT_EQ(rerun_d.episode_id, as[3].episode_id);
  EXPECT_EQ(rerun_d.attempt, 2u);

  // A changed seed cannot silently give stored episodes other tasks.
  RestoreInputs other = inputs(2, 3);
  other.seed = 12;
  Expected<Restored> bad = restore_ledger(other, &saved, in_store);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "coordinator.restore_mismatch");
}

TEST(CoordinatorState, RestoringAnOlderCheckpointOrphansLaterVersions) {
  Expected<Restored> r0 = restore_ledger(inputs(1, 4), nullptr, {});
  ASSERT_TRUE(r0);
  EpisodeLedger& l = r0->ledger;
  const CoordinatorStateRecord at_checkpoint = snapshot_state(l, RunProgress{});  // version 0
  auto a = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, kPpo);
  auto b = *l.dispatch(WorkerId{"w"}, PolicyVersion{2}, kPpo);  // after two steps
  Expected<Restored> r = restore_ledger(inputs(1, 4), &at_checkpoint, {stored(a), stored(b)});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ledger.find(a.episode_id)->phase, EpisodePhase::kAcknowledged);
  EXPECT_EQ(r->ledger.find(b.episode_id)->phase, EpisodePhase::kOrphaned);
  EXPECT_EQ(r->report.orphaned, 1u);
  EXPECT_EQ(r->ledger.staleness().counters().accepted, 1u);
}

}  // namespace
}  // namespace cuda_agent
