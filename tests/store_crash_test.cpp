// Crash safety of the run store across processes. A child (tests/store_crash_writer.cpp) writes
// acknowledged batches and reports each acknowledged episode on a pipe only after the ack; the
// parent SIGKILLs it at a random moment (seeded: the seed is printed, CUDA_AGENT_TEST_SEED
// replays), reopens the store and checks that every acknowledged episode is present and intact and
// that no record is torn (each episode and its index entries are there together or not at all).
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"
#include "storage/store_test_util.h"
#include "tests/store_child.h"
#include "tests/store_crash_record.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using testing::Child;
using testing::store_at;
using testing::TempDir;

constexpr int kRounds = 60;

std::set<long> parse_acks(const std::string& line) {
  std::set<long> ids;
  std::istringstream in(line);
  std::string word;
  in >> word;
  if (word != "ack") return ids;
  long id;
  while (in >> id) ids.insert(id);
  return ids;
}

// Checks one round's run after a crash: every acknowledged episode is intact, and every episode
// in the run's index (acknowledged or not) is intact, with its value and all index entries.
void check_run(RunStore& store, const std::string& run, const std::set<long>& acked, int round) {
  for (long id : acked) {
    auto e = store.get_episode(RunId{run}, EpisodeId{std::to_string(id)});
    ASSERT_TRUE(e) << "round " << round << ": acknowledged episode " << run << "/" << id
                   << " lost: " << e.error().to_string();
    ASSERT_EQ(crash_record::check(*e, run, id), "") << run << "/" << id;
  }
  std::set<long> indexed;
  ASSERT_TRUE(store.scan_run(RunId{run}, [&](const EpisodeSummary& s) {
    const long id = std::stol(s.episode_id.value());
    indexed.insert(id);
    EXPECT_EQ(crash_record::check_summary(s, run, id), "") << run << "/" << id;
    auto e = store.get_episode(RunId{run}, s.episode_id);
    EXPECT_TRUE(e) << "torn record: " << run << "/" << id << " is indexed but has no value";
    if (e) {
      EXPECT_EQ(crash_record::check(*e, run, id), "") << run << "/" << id;
    }
    return true;
  }));
  for (long id : acked) ASSERT_TRUE(indexed.count(id)) << "acknowledged but not indexed: " << id;
  // Every other index holds exactly the same episodes.
  std::size_t by_policy = 0;
  ASSERT_TRUE(store.scan_replay({.run = RunId{run}},
                                [&](const EpisodeSummary&) { return ++by_policy, true; }));
  EXPECT_EQ(by_policy, indexed.size()) << "round " << round;
  auto rft = store.select_rft({.run = RunId{run}, .min_reward = -1e9, .completed_only = false});
  ASSERT_TRUE(rft);
  EXPECT_EQ(rft->size(), indexed.size()) << "round " << round;
}

// Counts the keys of the episodes column family with RocksDB itself: no value without its index.
std::uint64_t raw_episode_count(const std::string& dir) {
  rocks::StoreRocksOptions o = rocks::make_options(store_at(dir));
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  EXPECT_TRUE(rocksdb::DB::OpenForReadOnly(o.db, dir, o.column_families, &handles, &raw).ok());
  std::uint64_t n = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(
        rocksdb::ReadOptions(), handles[static_cast<int>(store_keys::Cf::kEpisodes)]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    EXPECT_TRUE(it->status().ok());
  }
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
  return n;
}

TEST(StoreCrash, AcknowledgedRecordsSurviveSigkillAtRandomPointsAndNoneIsTorn) {
  const unsigned seed = testing::test_seed(std::random_device{}());
  std::mt19937 rng(seed);
  TempDir tmp("crash");
  const std::string dir = tmp.sub("store");
  std::map<std::string, std::set<long>> acked;
  int killed_before_ready = 0;
  std::size_t total_acked = 0;
  const auto start = Clock::now();
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    const std::string run = "round-" + std::to_string(round);
    Child child({STORE_CRASH_WRITER, dir, run});
    ASSERT_TRUE(child.started());
    // Round 0 and one round in five are killed at a random moment of creating, opening or
    // recovering the store; the others at a random moment after it is open, while three threads
    // append.
    const bool during_open = round == 0 || rng() % 5 == 0;
    auto kill_at = Clock::now() + std::chrono::milliseconds(rng() % 80);
    if (!during_open) {
      auto ready = child.read_line(Clock::now() + 30s);
      ASSERT_EQ(ready.value_or("<none>"), "ready");
      kill_at = Clock::now() + std::chrono::milliseconds(rng() % 150);
    }
    std::set<long>& mine = acked[run];
    while (auto line = child.read_line(kill_at)) {
      for (long id : parse_acks(*line)) mine.insert(id);
    }
    child.kill_now();
    // Lines written before the kill are still in the pipe: every ack the child sent counts.
    while (auto line = child.read_line(Clock::now() + 10s)) {
      for (long id : parse_acks(*line)) mine.insert(id);
    }
    killed_before_ready += during_open;
    total_acked += mine.size();
    auto store = RunStore::open(store_at(dir), StoreMode::kWrite);  // recovery, as on restart
    ASSERT_TRUE(store) << store.error().to_string();
    check_run(**store, run, mine, round);
    if (round > 0) {  // and an earlier round, which later crashes must not have disturbed
      const std::string earlier = "round-" + std::to_string(rng() % round);
      check_run(**store, earlier, acked[earlier], round);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::uint64_t indexed = 0;
  {
    auto store = RunStore::open(store_at(dir), StoreMode::kReadOnly);
    ASSERT_TRUE(store) << store.error().to_string();
    for (const auto& [run, ids] : acked) {
      check_run(**store, run, ids, kRounds);
      indexed += *(*store)->count_episodes(RunId{run});
    }
    EXPECT_EQ(*(*store)->count_episodes(std::nullopt), indexed);
  }
  EXPECT_EQ(raw_episode_count(dir), indexed);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "%d rounds (%d killed while opening), %zu acknowledged episodes, %llu stored, "
      "%.1f s\n",
      kRounds, killed_before_ready, total_acked, static_cast<unsigned long long>(indexed), seconds);
  EXPECT_GT(total_acked, 0u);
}

TEST(StoreProcesses, ASecondWriterIsRefusedWhileReadersFollowTheLiveWriter) {
  TempDir tmp("live");
  const std::string dir = tmp.sub("store");
  Child writer({STORE_CRASH_WRITER, dir, "live", "--hold", "20"});
  ASSERT_TRUE(writer.started());
  std::set<long> acked;
  for (auto line = writer.read_line(Clock::now() + 30s); line && *line != "held";
       line = writer.read_line(Clock::now() + 30s)) {
    for (long id : parse_acks(*line)) acked.insert(id);
  }
  ASSERT_EQ(acked.size(), 20u);

  auto second = RunStore::open(store_at(dir), StoreMode::kWrite);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, "store.locked");
  EXPECT_NE(second.error().message.find("store locked by another writer: " + dir),
            std::string::npos)
      << second.error().message;

  for (StoreMode mode : {StoreMode::kSecondary, StoreMode::kReadOnly}) {
    auto reader = RunStore::open(store_at(dir), mode);
    ASSERT_TRUE(reader) << reader.error().to_string();
    ASSERT_TRUE((*reader)->catch_up());
    check_run(**reader, "live", acked, 0);
  }
  writer.close_stdin();
  EXPECT_EQ(writer.wait_exit(Clock::now() + 30s), 0);
}

}  // namespace
}  // namespace cuda_agent
