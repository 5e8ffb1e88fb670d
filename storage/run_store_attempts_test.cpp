// Episode attempts (the "attempts" column family): rollout workers mark an episode in flight
// before it starts, commit the attempt atomically with its episode record, and recovery marks a
// lost worker's attempts aborted. Also: a store of an older build (no attempts family) reads as
// it is, and its next writer adds the family.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using testing::attempts_of;
using testing::make_episode;
using testing::store_at;
using testing::TempStore;
using namespace std::chrono_literals;

EpisodeAttemptRecord attempt(const std::string& episode, std::uint32_t n, AttemptState state) {
  EpisodeAttemptRecord a;
  a.run_id = RunId{"r"};
  a.episode_id = EpisodeId{episode};
  a.attempt = n;
  a.task_id = TaskId{"t"};
  a.worker_id = WorkerId{"w" + std::to_string(n)};
  a.state = state;
  a.started_unix_ms = 1000 + n;
  a.updated_unix_ms = 2000 + n;
  return a;
}

TEST(RunStoreAttempts, InFlightThenCommittedWithTheEpisodeInOrderAndPerEpisode) {
  TempStore tmp("attempts");
  ASSERT_TRUE(tmp.store);
  RunStore* store = tmp.store.get();
  StoreWrite begin;
  begin.attempts = {attempt("e2", 1, AttemptState::kRunning),
                    attempt("e1", 2, AttemptState::kRunning),
                    attempt("e1", 1, AttemptState::kAborted)};
  ASSERT_TRUE(store->write(std::move(begin), 10s));

  // Commit e1's second attempt with its episode; the first attempt stays aborted.
  StoreWrite commit;
  commit.episodes.push_back(make_episode("r", "e1", "t", 1.0));
  commit.attempts.push_back(attempt("e1", 2, AttemptState::kCommitted));
  ASSERT_TRUE(store->write(std::move(commit), 10s));

  auto all = attempts_of(*store, "r");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].episode_id.value(), "e1");
  EXPECT_EQ(all[0].attempt, 1u);
  EXPECT_EQ(all[0].state, AttemptState::kAborted);
  EXPECT_EQ(all[1].attempt, 2u);
  EXPECT_EQ(all[1].state, AttemptState::kCommitted);
  EXPECT_EQ(all[1].worker_id.value(), "w2");
  EXPECT_EQ(all[1].started_unix_ms, 1002);
  EXPECT_EQ(all[2].episode_id.value(), "e2");
  EXPECT_EQ(all[2].state, AttemptState::kRunning);
  EXPECT_EQ(attempts_of(*store, "r", "e2").size(), 1u);
  EXPECT_TRUE(attempts_of(*store, "other").empty());
  EXPECT_TRUE(store->get_episode(RunId{"r"}, EpisodeId{"e1"}));
}

TEST(RunStoreAttempts, AConflictingEpisodeLeavesItsAttemptUncommitted) {
  TempStore tmp("attempts_conflict");
  ASSERT_TRUE(tmp.store);
  RunStore* store = tmp.store.get();
  StoreWrite first;
  first.episodes.push_back(make_episode("r", "e1", "t", 1.0));
  first.attempts.push_back(attempt("e1", 1, AttemptState::kCommitted));
  ASSERT_TRUE(store->write(std::move(first), 10s));
  StoreWrite running;
  running.attempts.push_back(attempt("e1", 2, AttemptState::kRunning));
  ASSERT_TRUE(store->write(std::move(running), 10s));

  // A second attempt with other content: the whole write is refused, attempt 2 stays running.
  StoreWrite second;
  second.episodes.push_back(make_episode("r", "e1", "t", 3.0));
  second.attempts.push_back(attempt("e1", 2, AttemptState::kCommitted));
  Status s = store->write(std::move(second), 10s);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "store.conflict");
  auto all = attempts_of(*store, "r", "e1");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].state, AttemptState::kRunning);
}

TEST(RunStoreAttempts, BadAttemptsAreRefusedNamingTheField) {
  TempStore tmp("attempts_bad");
  ASSERT_TRUE(tmp.store);
  RunStore* store = tmp.store.get();
  StoreWrite zero;
  zero.attempts.push_back(attempt("e1", 0, AttemptState::kRunning));
  Status s = store->write(std::move(zero), 10s);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("attempts count from 1"), std::string::npos);
  StoreWrite no_worker;
  no_worker.attempts.push_back(attempt("e1", 1, AttemptState::kRunning));
  no_worker.attempts[0].worker_id = WorkerId{""};
  s = store->write(std::move(no_worker), 10s);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("worker id"), std::string::npos);
}

TEST(RunStoreAttempts, AnOlderStoreWithoutTheFamilyReadsAsItIsAndItsWriterAddsIt) {
  TempStore tmp("attempts_older");
  const std::string dir = tmp.dir;
  {
    ASSERT_TRUE(tmp.store);
    ASSERT_TRUE(tmp.store->write(
        [] {
          StoreWrite w;
          w.episodes.push_back(make_episode("r", "e1", "t", 1.0));
          return w;
        }(),
        10s));
    tmp.store.reset();
  }
  {  // What an older build left: the same store without the "attempts" family.
    rocks::StoreRocksOptions o = rocks::make_options(store_at(dir));
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    ASSERT_TRUE(rocksdb::DB::Open(o.db, dir, o.column_families, &handles, &raw).ok());
    auto* attempts = handles[static_cast<int>(store_keys::Cf::kAttempts)];
    ASSERT_TRUE(raw->DropColumnFamily(attempts).ok());
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  RunStore* ro = tmp.reopen(StoreMode::kReadOnly);
  ASSERT_TRUE(ro);
  EXPECT_TRUE(ro->get_episode(RunId{"r"}, EpisodeId{"e1"}));
  EXPECT_TRUE(attempts_of(*ro, "r").empty());
  EXPECT_TRUE(ro->stats(std::nullopt));
  RunStore* rw = tmp.reopen(StoreMode::kWrite);
  ASSERT_TRUE(rw);
  StoreWrite w;
  w.attempts.push_back(attempt("e2", 1, AttemptState::kRunning));
  ASSERT_TRUE(rw->write(std::move(w), 10s));
  EXPECT_EQ(attempts_of(*rw, "r").size(), 1u);
}

}  // namespace
}  // namespace cuda_agent
