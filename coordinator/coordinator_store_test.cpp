// The RunStore adapter against a real RocksDB store in a temp dir: the coordinator's state
// written with a RunRecord and a CheckpointRecord comes back, and restore_from_store rebuilds the
// ledger from it and the stored episodes.
#include "coordinator/coordinator_store.h"

#include <gtest/gtest.h>

#include <future>

#include "coordinator/coordinator_state.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

const RunId kRun{"real"};

Status write_and_wait(CoordinatorStore& store, StoreWrite w) {
  std::promise<Status> done;
  store.submit(std::move(w), [&](const Status& s) { done.set_value(s); });
  return done.get_future().get();
}

TEST(CoordinatorStore, RunStoreAdapterKeepsTheStateAndRestoresFromIt) {
  testing::TempDir tmp("coordinator_adapter");
  std::unique_ptr<RunStore> run_store = testing::open_or_die(tmp.sub("s"));
  ASSERT_TRUE(run_store);
  std::unique_ptr<CoordinatorStore> store = make_run_store_adapter(*run_store);
  RestoreInputs in;
  in.run = kRun;
  in.staleness = {.batch_episodes = 2, .max_staleness = 1};
  in.tasks = {TaskId{"a"}, TaskId{"b"}, TaskId{"c"}};
  in.seed = 9;
  in.stage = EpisodeStage::kAgenticPpo;

  Expected<Restored> fresh = restore_from_store(*store, in, RestorePoint::kLatestStep);
  ASSERT_TRUE(fresh) << fresh.error().to_string();
  EXPECT_EQ(fresh->ledger.next_seq(), 0u);
  EXPECT_FALSE(*store->latest_checkpoint(kRun));

  EpisodeLedger& l = fresh->ledger;
  Assignment a = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, in.stage);
  Assignment b = *l.dispatch(WorkerId{"w"}, PolicyVersion{0}, in.stage);
  RunRecord run;
  run.run_id = kRun;
  run.state = "running";
  run.coordinator_state = snapshot_state(l, RunProgress{});
  CheckpointRecord cp;
  cp.run_id = kRun;
  cp.step = 0;
  cp.path = "/ckpt/0";
  cp.coordinator_state = run.coordinator_state;
  StoreWrite w;
  w.runs.push_back(run);
  w.checkpoints.push_back(cp);
  ASSERT_TRUE(write_and_wait(*store, std::move(w)));

  EpisodeRecord ep;
  ep.episode_id = b.episode_id;
  ep.run_id = kRun;
  ep.task_id = b.task_id;
  ep.stage = b.stage;
  ep.trajectory_bytes = "t";
  StoreWrite we;
  we.episodes.push_back(ep);
  ASSERT_TRUE(write_and_wait(*store, we));
  ASSERT_TRUE(write_and_wait(*store, we)) << "the same episode again is acknowledged";

  Expected<std::optional<CheckpointRecord>> latest = store->latest_checkpoint(kRun);
  ASSERT_TRUE(latest && *latest);
  ASSERT_TRUE((*latest)->coordinator_state);
  EXPECT_EQ((*latest)->coordinator_state->episodes.size(), 2u);

  for (RestorePoint point : {RestorePoint::kLatestStep, RestorePoint::kLatestCheckpoint}) {
    Expected<Restored> r = restore_from_store(*store, in, point);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->ledger.find(a.episode_id)->phase, EpisodePhase::kQueued);
    EXPECT_EQ(r->ledger.find(b.episode_id)->phase, EpisodePhase::kAcknowledged);
    EXPECT_EQ(r->report.adopted, 1u);
    EXPECT_EQ(r->report.requeued, 1u);
  }
}

}  // namespace
}  // namespace cuda_agent
