// Bad values on disk: each gives a typed error naming the column family and key, and nothing else
// is affected. The bad bytes are written with RocksDB directly, behind the store's back.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <fstream>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using store_keys::Cf;
using testing::make_episode;
using testing::store_at;
using testing::TempDir;
using namespace std::chrono_literals;

// Opens the store's RocksDB directly and puts `value` under `key` of `cf`.
void poke(const std::string& dir, Cf cf, const std::string& key, const std::string& value) {
  rocks::StoreRocksOptions o = rocks::make_options(store_at(dir));
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  ASSERT_TRUE(rocksdb::DB::Open(o.db, dir, o.column_families, &handles, &raw).ok());
  rocksdb::WriteOptions sync;
  sync.sync = true;
  ASSERT_TRUE(raw->Put(sync, handles[static_cast<int>(cf)], key, value).ok());
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

std::string make_store(const TempDir& tmp) {
  const std::string dir = tmp.sub("s");
  auto store = std::move(RunStore::open(store_at(dir), StoreMode::kWrite)).value();
  StoreWrite w;
  for (const char* id : {"good", "bad", "newer", "old"}) {
    w.episodes.push_back(make_episode("r", id, "t", 2, 3000));
  }
  EXPECT_TRUE(store->write(std::move(w), 10s));
  return dir;
}

TEST(RunStoreFaults, CorruptValuesAreTypedErrorsNamingColumnFamilyAndKey) {
  TempDir tmp("corrupt");
  const std::string dir = make_store(tmp);
  const std::string good_value = encode_store_value(make_episode("r", "newer", "t", 2, 3000));
  poke(dir, Cf::kEpisodes, store_keys::episode_key(RunId{"r"}, EpisodeId{"bad"}),
       "this is not a store value at all");
  std::string newer = good_value;
  newer[5] = static_cast<char>(kStoreFormatVersion + 1);
  poke(dir, Cf::kEpisodes, store_keys::episode_key(RunId{"r"}, EpisodeId{"newer"}), newer);
  std::string old = good_value;
  old[4] = 0, old[5] = 0;
  poke(dir, Cf::kEpisodes, store_keys::episode_key(RunId{"r"}, EpisodeId{"old"}), old);

  for (StoreMode mode : {StoreMode::kWrite, StoreMode::kReadOnly, StoreMode::kSecondary}) {
    auto opened = RunStore::open(store_at(dir), mode);
    ASSERT_TRUE(opened) << opened.error().to_string();
    auto& store = *opened;
    auto bad = store->get_episode(RunId{"r"}, EpisodeId{"bad"});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, "store.corrupt_value");
    EXPECT_EQ(bad.error().category, ErrorCategory::kInvalidInput);
    EXPECT_NE(bad.error().message.find("episodes key 'r\\x00bad'"), std::string::npos)
        << bad.error().message;
    EXPECT_NE(bad.error().message.find(dir), std::string::npos);

    auto n = store->get_episode(RunId{"r"}, EpisodeId{"newer"});
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error().code, "store.newer_version");
    EXPECT_NE(n.error().message.find("episodes key 'r\\x00newer'"), std::string::npos);
    EXPECT_EQ(store->get_episode(RunId{"r"}, EpisodeId{"old"}).error().code,
              "store.unsupported_version");

    // Nothing else is affected: the good episode, the indexes and the queries still work.
    auto good = store->get_episode(RunId{"r"}, EpisodeId{"good"});
    ASSERT_TRUE(good) << good.error().to_string();
    EXPECT_EQ(good->trajectory_bytes, testing::trajectory_for("r/good", 3000));
    EXPECT_EQ(store->select_rft({.run = RunId{"r"}})->size(), 4u);
    std::uint64_t lines = 0;
    auto report =
        store->export_jsonl({}, [&](std::string_view) { return ++lines, Status::ok(); }, {});
    ASSERT_TRUE(report);
    EXPECT_EQ(report->exported, 1u);
    EXPECT_EQ(report->corrupt, 3u);
    EXPECT_EQ(lines, 1u);
    auto strict = store->export_jsonl({.skip_corrupt = false},
                                      [](std::string_view) { return Status::ok(); }, {});
    EXPECT_FALSE(strict);
  }
}

TEST(RunStoreFaults, ACorruptIndexValueFailsTheScanWithItsKeyAndSparesPointReads) {
  TempDir tmp("index");
  const std::string dir = make_store(tmp);
  EpisodeSummary s = make_episode("r", "bad", "t", 2, 3000);
  poke(dir, Cf::kIndexes, store_keys::episode_by_run_key(s), "garbage");
  auto store = std::move(RunStore::open(store_at(dir), StoreMode::kReadOnly)).value();
  Status scan = store->scan_run(RunId{"r"}, [](const EpisodeSummary&) { return true; });
  ASSERT_FALSE(scan);
  EXPECT_EQ(scan.error().code, "store.corrupt_value");
  EXPECT_NE(scan.error().message.find("indexes key '\\x02r\\x00"), std::string::npos)
      << scan.error().message;
  EXPECT_TRUE(store->get_episode(RunId{"r"}, EpisodeId{"bad"}));
  EXPECT_TRUE(store->get_episode_summary(RunId{"r"}, EpisodeId{"bad"}));
}

TEST(RunStoreFaults, AStoreCreatedByANewerVersionOrWithoutHeaderIsRefusedAtOpen) {
  TempDir tmp("header");
  const std::string dir = make_store(tmp);
  StoreHeader h;
  h.magic = std::string(kStoreMagic);
  h.format_version = kStoreFormatVersion + 1;
  h.created_by = "cuda-agent 9.0";
  poke(dir, Cf::kDefault, std::string(store_keys::kHeaderKey), encode_store_value(h));
  for (StoreMode mode : {StoreMode::kWrite, StoreMode::kReadOnly, StoreMode::kSecondary}) {
    auto s = RunStore::open(store_at(dir), mode);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, "store.newer_version");
    EXPECT_NE(s.error().message.find(dir), std::string::npos);
    EXPECT_NE(s.error().message.find("cuda-agent 9.0"), std::string::npos);
  }

  // Another application's RocksDB database: refused in every mode and left untouched.
  const std::string plain = tmp.sub("plain");
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, plain, &raw).ok());
  ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), "their key", "their value").ok());
  delete raw;
  for (StoreMode mode : {StoreMode::kWrite, StoreMode::kReadOnly, StoreMode::kSecondary}) {
    auto s = RunStore::open(store_at(plain), mode);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, "store.not_a_store");
    EXPECT_NE(s.error().message.find(plain), std::string::npos);
  }
  std::vector<std::string> families;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(o, plain, &families).ok());
  EXPECT_EQ(families, std::vector<std::string>{"default"});
}

TEST(RunStoreFaults, AStoreWhoseCreationWasInterruptedIsCompletedByTheWriter) {
  // What a crash between RocksDB creating the database and the header's write leaves behind.
  TempDir tmp("interrupted");
  const std::string dir = tmp.sub("s");
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir, &raw).ok());
    rocksdb::ColumnFamilyHandle* h = nullptr;
    ASSERT_TRUE(raw->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "tasks", &h).ok());
    raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  EXPECT_EQ(RunStore::open(store_at(dir), StoreMode::kReadOnly).error().code, "store.not_a_store");
  {
    auto w = RunStore::open(store_at(dir), StoreMode::kWrite);
    ASSERT_TRUE(w) << w.error().to_string();
    ASSERT_TRUE((*w)->write(
        [] {
          StoreWrite one;
          one.episodes.push_back(make_episode("r", "e", "t", 1));
          return one;
        }(),
        10s));
  }
  auto r = RunStore::open(store_at(dir), StoreMode::kReadOnly);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE((*r)->get_episode(RunId{"r"}, EpisodeId{"e"}));
}

}  // namespace
// A writer killed while RocksDB itself was creating the database (before CURRENT exists) leaves
// only RocksDB's own files: the next writer finishes the creation. A foreign file keeps the
// directory refused. Seen once in store_crash_test (round 0 is killed during creation).
TEST(RunStoreFaults, RocksDbCreationDebrisWithoutCurrentIsCompletedByTheWriter) {
  TempDir tmp("debris");
  const std::string dir = tmp.sub("s");
  std::filesystem::create_directories(dir);
  for (const char* f : {"LOCK", "LOG", "IDENTITY", "MANIFEST-000001", "000001.dbtmp"}) {
    std::ofstream(dir + "/" + f) << "x";
  }
  EXPECT_EQ(RunStore::open(store_at(dir), StoreMode::kReadOnly).error().code, "store.not_a_store");
  {
    auto w = RunStore::open(store_at(dir), StoreMode::kWrite);
    ASSERT_TRUE(w) << w.error().to_string();
  }
  EXPECT_TRUE(RunStore::open(store_at(dir), StoreMode::kReadOnly));

  const std::string foreign = tmp.sub("f");
  std::filesystem::create_directories(foreign);
  for (const char* f : {"LOCK", "LOG", "notes.txt"}) std::ofstream(foreign + "/" + f) << "x";
  EXPECT_EQ(RunStore::open(store_at(foreign), StoreMode::kWrite).error().code, "store.not_a_store");
}

}  // namespace cuda_agent
