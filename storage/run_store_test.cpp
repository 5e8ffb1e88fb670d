// The run store's open/close, write and point-read contracts. Queries: run_store_queries_test.cpp;
// bad values: run_store_faults_test.cpp; crashes and other processes: tests/store_*_test.cpp.
#include "storage/run_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <future>
#include <thread>

#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using testing::make_episode;
using testing::open_or_die;
using testing::store_at;
using testing::TempDir;
using namespace std::chrono_literals;

StoreWrite one(EpisodeRecord e) {
  StoreWrite w;
  w.episodes.push_back(std::move(e));
  return w;
}

TEST(RunStore, CreatesWritesAndReadsBackAfterReopening) {
  TempDir tmp("create");
  const std::string dir = tmp.sub("store");
  {
    auto store = open_or_die(dir, StoreMode::kWrite);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->write(one(make_episode("r1", "e1", "t1", 2.0, 100'000)), 10s));
    StoreWrite w;
    TaskRecord t;
    t.task_id = TaskId{"t1"};
    t.suite = "kernelbench/level2";
    t.body = "task body";
    w.tasks.push_back(t);
    RunRecord r;
    r.run_id = RunId{"r1"};
    r.state = "running";
    w.runs.push_back(r);
    ArtifactRecord a;
    a.hash = "abc123";
    a.bytes = std::string(5000, 'x');
    w.artifacts.push_back(a);
    BaselineRecord b;
    b.task_id = TaskId{"t1"};
    b.device = "NVIDIA H200";
    b.torch_version = "2.11";
    b.eager_ms = 1.5;
    w.baselines.push_back(b);
    ASSERT_TRUE(store->write(std::move(w), 10s));
  }
  auto store = open_or_die(dir, StoreMode::kWrite);
  ASSERT_TRUE(store);
  auto e = store->get_episode(RunId{"r1"}, EpisodeId{"e1"});
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->trajectory_bytes, testing::trajectory_for("r1/e1", 100'000));
  EXPECT_EQ(e->final_reward, 2.0);
  auto s = store->get_episode_summary(RunId{"r1"}, EpisodeId{"e1"});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->trajectory_size, 100'000u);
  EXPECT_EQ(store->get_task(TaskId{"t1"})->suite, "kernelbench/level2");
  EXPECT_EQ(store->get_run(RunId{"r1"})->state, "running");
  EXPECT_EQ(store->get_artifact("abc123")->bytes.size(), 5000u);
  EXPECT_EQ(store->get_baseline(TaskId{"t1"}, "NVIDIA H200", "2.11", "")->eager_ms, 1.5);
  auto missing = store->get_episode(RunId{"r1"}, EpisodeId{"nope"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().category, ErrorCategory::kNotFound);
}

TEST(RunStore, ConcurrentAppendersAreAllAcknowledgedAndStored) {
  TempDir tmp("concurrent");
  auto store = open_or_die(tmp.sub("s"), StoreMode::kWrite);
  ASSERT_TRUE(store);
  constexpr int kThreads = 6, kPerThread = 40;
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = "e" + std::to_string(t) + "-" + std::to_string(i);
        if (store->write(one(make_episode("r", id, "task", 1, 2000)), 30s)) ++acked;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(acked, kThreads * kPerThread);
  EXPECT_EQ(*store->count_episodes(RunId{"r"}), static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(*store->count_episodes(std::nullopt), static_cast<std::uint64_t>(acked));
}

TEST(RunStore, CallbacksFireOnceAndTheDestructorDrainsTheQueue) {
  TempDir tmp("drain");
  std::atomic<int> ok{0};
  {
    auto store = open_or_die(tmp.sub("s"), StoreMode::kWrite);
    ASSERT_TRUE(store);
    for (int i = 0; i < 50; ++i) {
      store->submit(one(make_episode("r", "e" + std::to_string(i), "t", 1)),
                    StoreClock::now() + 60s, [&](const Status& s) { ok += s ? 1 : 1000; });
    }
  }  // closing writes and acknowledges all 50
  EXPECT_EQ(ok, 50);
  auto store = open_or_die(tmp.sub("s"), StoreMode::kReadOnly);
  EXPECT_EQ(*store->count_episodes(RunId{"r"}), 50u);
}

TEST(RunStore, RetriedWritesAreIdempotentAndChangedContentIsAConflict) {
  TempDir tmp("idem");
  auto store = open_or_die(tmp.sub("s"), StoreMode::kWrite);
  ASSERT_TRUE(store->write(one(make_episode("r", "e1", "t", 1)), 10s));
  EXPECT_TRUE(store->write(one(make_episode("r", "e1", "t", 1)), 10s));  // a retry: same answer
  Status changed = store->write(one(make_episode("r", "e1", "t", 3)), 10s);
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, "store.conflict");
  // The same id in another run is another episode.
  EXPECT_TRUE(store->write(one(make_episode("r2", "e1", "t", 3)), 10s));
  EXPECT_EQ(*store->count_episodes(RunId{"r"}), 1u);
  EXPECT_EQ(store->find_episode(EpisodeId{"e1"})->size(), 2u);
  // The stored reward is the first one, and no stale index entry points at the conflicting one.
  EXPECT_EQ(store->get_episode(RunId{"r"}, EpisodeId{"e1"})->final_reward, 1);
  auto rft = store->select_rft({.run = RunId{"r"}});
  ASSERT_TRUE(rft);
  ASSERT_EQ(rft->size(), 1u);
  EXPECT_EQ(rft->front().final_reward, 1);
  // A write is atomic: a conflicting record fails the whole write.
  StoreWrite w;
  w.episodes.push_back(make_episode("r", "e2", "t", 1));
  w.episodes.push_back(make_episode("r", "e1", "t", 2));
  EXPECT_FALSE(store->write(std::move(w), 10s));
  EXPECT_FALSE(store->get_episode(RunId{"r"}, EpisodeId{"e2"}));
}

TEST(RunStore, BadIdsAndNumbersAreRefusedBeforeWriting) {
  TempDir tmp("badid");
  auto store = open_or_die(tmp.sub("s"), StoreMode::kWrite);
  EXPECT_EQ(store->write(one(make_episode("", "e", "t", 1)), 10s).error().code, "store.bad_id");
  EXPECT_EQ(store->write(one(make_episode("r", std::string("e\0x", 3), "t", 1)), 10s).error().code,
            "store.bad_id");
  EXPECT_EQ(store->write(one(make_episode("r", "e", "t", std::nan(""))), 10s).error().code,
            "store.bad_number");
}

TEST(RunStore, AnExpiredDeadlineFailsTheWriteUnwritten) {
  TempDir tmp("deadline");
  auto store = open_or_die(tmp.sub("s"), StoreMode::kWrite);
  std::promise<Status> p;
  store->submit(one(make_episode("r", "late", "t", 1)), StoreClock::now() - 1s,
                [&](const Status& s) { p.set_value(s); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get().error().code, "store.deadline");
  EXPECT_FALSE(store->get_episode(RunId{"r"}, EpisodeId{"late"}));
}

TEST(RunStore, OneWriterPerStoreAndReadersAlongside) {
  TempDir tmp("lock");
  const std::string dir = tmp.sub("s");
  auto writer = open_or_die(dir, StoreMode::kWrite);
  ASSERT_TRUE(writer->write(one(make_episode("r", "e1", "t", 1)), 10s));
  auto second = RunStore::open(store_at(dir), StoreMode::kWrite);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, "store.locked");
  EXPECT_NE(second.error().message.find("store locked by another writer: " + dir),
            std::string::npos)
      << second.error().message;

  auto secondary = open_or_die(dir, StoreMode::kSecondary);
  ASSERT_TRUE(secondary);
  EXPECT_EQ(*secondary->count_episodes(RunId{"r"}), 1u);
  ASSERT_TRUE(writer->write(one(make_episode("r", "e2", "t", 1)), 10s));
  ASSERT_TRUE(secondary->catch_up());
  EXPECT_EQ(*secondary->count_episodes(RunId{"r"}), 2u);
  EXPECT_TRUE(secondary->get_episode(RunId{"r"}, EpisodeId{"e2"}));

  auto reader = open_or_die(dir, StoreMode::kReadOnly);
  ASSERT_TRUE(reader);
  EXPECT_EQ(*reader->count_episodes(RunId{"r"}), 2u);
  EXPECT_EQ(reader->write(one(make_episode("r", "e3", "t", 1)), 10s).error().code,
            "store.read_only");
}

TEST(RunStore, MissingDirectoriesAndNonStoresAreClearErrorsNamingThem) {
  TempDir tmp("notastore");
  const std::string missing = tmp.sub("missing");
  for (StoreMode mode : {StoreMode::kReadOnly, StoreMode::kSecondary}) {
    auto s = RunStore::open(store_at(missing), mode);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, "store.missing");
    EXPECT_NE(s.error().message.find(missing), std::string::npos);
  }
  const std::string other = tmp.sub("other");
  std::filesystem::create_directories(other);
  std::ofstream(other + "/notes.txt") << "hello";
  for (StoreMode mode : {StoreMode::kWrite, StoreMode::kReadOnly, StoreMode::kSecondary}) {
    auto s = RunStore::open(store_at(other), mode);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, "store.not_a_store");
    EXPECT_NE(s.error().message.find(other), std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::exists(other + "/notes.txt"));
  EXPECT_FALSE(std::filesystem::exists(other + "/CURRENT"));
}

}  // namespace
}  // namespace cuda_agent
