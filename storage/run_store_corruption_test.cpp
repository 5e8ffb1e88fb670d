// A damaged store never crashes a reader and never answers with less than it holds: every read
// that meets damage fails with store.corruption naming the file, every view (read-only,
// secondary, writer) refuses to open with a table file missing or cut short, a writer that met
// damage refuses writes, and verify_store names every damaged file. Damage is done to the files
// on disk as issue 27 found it (storage/store_damage_util.h).
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <set>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_damage_util.h"
#include "storage/store_keys.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using testing::big_task;
using testing::file_of;
using testing::flip_bytes;
using testing::make_flushed_store;
using testing::open_or_die;
using testing::store_at;
using testing::TempDir;

constexpr StoreMode kAllModes[] = {StoreMode::kWrite, StoreMode::kReadOnly, StoreMode::kSecondary};
constexpr StoreMode kReadModes[] = {StoreMode::kReadOnly, StoreMode::kSecondary};

bool mentions(const Error& e, const std::string& text) {
  return e.message.find(text) != std::string::npos;
}

std::size_t task_count(const RunStore& store, Status* status) {
  std::size_t n = 0;
  *status = store.scan_tasks({}, [&](const TaskRecord&) { return ++n, true; });
  return n;
}

// RocksDB's secondary instances do not support blob files: iterating tasks (values in a blob
// file) crashed `tasks list` even on an intact store. Secondary views are read-only views now.
TEST(RunStoreCorruption, EveryReadViewIteratesBlobValuesAndASecondaryFollowsTheWriter) {
  TempDir tmp("blobscan");
  const std::string dir = make_flushed_store(tmp.sub("s"));
  for (StoreMode mode : kReadModes) {
    auto store = open_or_die(dir, mode);
    ASSERT_TRUE(store);
    Status s;
    EXPECT_EQ(task_count(*store, &s), 20u);
    EXPECT_TRUE(s) << s.error().to_string();
  }
  auto writer = open_or_die(dir, StoreMode::kWrite);
  auto secondary = open_or_die(dir, StoreMode::kSecondary);
  ASSERT_TRUE(writer && secondary);
  StoreWrite w;
  w.tasks.push_back(big_task("s/late"));
  ASSERT_TRUE(writer->write(std::move(w), 10s));
  Status s;
  EXPECT_EQ(task_count(*secondary, &s), 20u);  // the view as of the last catch_up
  ASSERT_TRUE(secondary->catch_up());
  EXPECT_EQ(task_count(*secondary, &s), 21u);
  ASSERT_TRUE(secondary->get_task(TaskId{"s/late"}));
  ASSERT_TRUE(writer->compact());  // files replaced under the follower
  ASSERT_TRUE(secondary->catch_up());
  EXPECT_EQ(task_count(*secondary, &s), 21u);
  EXPECT_TRUE(s) << s.error().to_string();
}

TEST(RunStoreCorruption, AMissingTableFileFailsEveryOpenNamingItNeverAShorterAnswer) {
  TempDir tmp("missing");
  const std::string dir = make_flushed_store(tmp.sub("s"));
  const std::string table = file_of(dir, "indexes", "table");
  ASSERT_FALSE(table.empty());
  std::filesystem::remove(table);
  for (StoreMode mode : kAllModes) {
    auto store = RunStore::open(store_at(dir), mode);
    ASSERT_FALSE(store) << "mode " << static_cast<int>(mode) << " opened a store missing " << table
                        << "; runs: " << (*store)->list_runs()->size();
    EXPECT_EQ(store.error().code, "store.corruption");
    EXPECT_TRUE(mentions(store.error(), "missing table file " + table)) << store.error().message;
  }
}

TEST(RunStoreCorruption, ATruncatedTableOrACorruptFooterFailsEveryOpenNamingTheFile) {
  TempDir tmp("footer");
  for (const bool truncate : {true, false}) {
    const std::string dir = make_flushed_store(tmp.sub(truncate ? "t" : "f"));
    const std::string table = file_of(dir, "runs", "table");
    ASSERT_FALSE(table.empty());
    if (truncate) {
      std::filesystem::resize_file(table, std::filesystem::file_size(table) - 30);
    } else {
      flip_bytes(table, -20, 16);  // the footer's format version and magic number
    }
    for (StoreMode mode : kAllModes) {
      auto store = RunStore::open(store_at(dir), mode);
      ASSERT_FALSE(store) << (truncate ? "truncated " : "bad footer ") << table;
      EXPECT_EQ(store.error().code, "store.corruption");
      EXPECT_TRUE(mentions(store.error(), table)) << store.error().message;
    }
  }
}

TEST(RunStoreCorruption, AFlippedDataBlockFailsEveryScanThatMeetsItNamingTheFile) {
  TempDir tmp("block");
  const std::string dir = make_flushed_store(tmp.sub("s"));
  const std::string table = file_of(dir, "indexes", "table");
  ASSERT_FALSE(table.empty());
  flip_bytes(table, 100, 64);  // inside the first data block
  for (StoreMode mode : kReadModes) {
    auto store = open_or_die(dir, mode);
    ASSERT_TRUE(store);
    auto runs = store->list_runs();
    ASSERT_FALSE(runs) << runs->size() << " runs";
    EXPECT_EQ(runs.error().code, "store.corruption");
    EXPECT_TRUE(mentions(runs.error(), table)) << runs.error().message;
    auto n = store->count_episodes(std::nullopt);
    ASSERT_FALSE(n) << *n << " episodes";
    EXPECT_EQ(n.error().code, "store.corruption");
    Status scan = store->scan_run(RunId{"r1"}, [](const EpisodeSummary&) { return true; });
    ASSERT_FALSE(scan);
    EXPECT_TRUE(mentions(scan.error(), table)) << scan.error().message;
    auto exported = store->export_jsonl({}, [](std::string_view) { return Status::ok(); }, {});
    ASSERT_FALSE(exported);
    EXPECT_EQ(exported.error().code, "store.corruption");
  }
}

TEST(RunStoreCorruption, AFlippedBlobFailsItsReadsNamingTheBlobFile) {
  TempDir tmp("blob");
  const std::string dir = make_flushed_store(tmp.sub("s"));
  const std::string episodes = file_of(dir, "episodes", "blob");
  const std::string tasks = file_of(dir, "tasks", "blob");
  ASSERT_FALSE(episodes.empty() || tasks.empty());
  flip_bytes(episodes, static_cast<std::int64_t>(std::filesystem::file_size(episodes) / 2), 64);
  flip_bytes(tasks, static_cast<std::int64_t>(std::filesystem::file_size(tasks) / 2), 64);
  for (StoreMode mode : kReadModes) {
    auto store = open_or_die(dir, mode);
    ASSERT_TRUE(store);
    Status s;
    task_count(*store, &s);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, "store.corruption");
    EXPECT_TRUE(mentions(s.error(), tasks)) << s.error().message;
    std::uint64_t lines = 0;
    auto report =
        store->export_jsonl({}, [&](std::string_view) { return ++lines, Status::ok(); }, {});
    ASSERT_TRUE(report) << report.error().to_string();
    EXPECT_GE(report->corrupt, 1u);
    EXPECT_EQ(report->exported + report->corrupt, 40u);
    ASSERT_FALSE(report->errors.empty());
    EXPECT_EQ(report->errors[0].code, "store.corruption");
    EXPECT_TRUE(mentions(report->errors[0], episodes)) << report->errors[0].message;
  }
}

TEST(RunStoreCorruption, AWriterThatMetDamageRefusesWrites) {
  TempDir tmp("refuse");
  const std::string dir = make_flushed_store(tmp.sub("s"));
  const std::string table = file_of(dir, "indexes", "table");
  ASSERT_FALSE(table.empty());
  flip_bytes(table, 100, 64);
  {
    auto writer = open_or_die(dir, StoreMode::kWrite);
    ASSERT_TRUE(writer);
    StoreWrite before;
    before.tasks.push_back(big_task("s/before"));
    ASSERT_TRUE(writer->write(std::move(before), 10s));  // no damage known yet
    ASSERT_FALSE(writer->list_runs());
    StoreWrite w;
    w.episodes.push_back(testing::make_episode("r1", "after", "t", 1));
    Status s = writer->write(std::move(w), 10s);
    ASSERT_FALSE(s) << "a write into a store known damaged was acknowledged";
    EXPECT_EQ(s.error().code, "store.corruption");
    EXPECT_TRUE(mentions(s.error(), "writes are refused")) << s.error().message;
    EXPECT_TRUE(mentions(s.error(), table)) << s.error().message;
  }
  auto reader = open_or_die(dir, StoreMode::kReadOnly);
  ASSERT_TRUE(reader);
  EXPECT_TRUE(reader->get_task(TaskId{"s/before"}));
  EXPECT_EQ(reader->get_episode_summary(RunId{"r1"}, EpisodeId{"after"}).error().code,
            "store.not_found");
}

TEST(RunStoreCorruption, VerifyChecksEveryFileAndNamesEveryDamagedOne) {
  TempDir tmp("verify");
  const std::string dir = make_flushed_store(tmp.sub("s"));
  auto clean = verify_store(store_at(dir));
  ASSERT_TRUE(clean) << clean.error().to_string();
  EXPECT_TRUE(clean->clean());
  EXPECT_TRUE(clean->errors.empty());
  std::size_t tables = 0, blobs = 0;
  for (const FileCheck& f : clean->files) {
    EXPECT_TRUE(f.result) << f.path << ": " << f.result.error().to_string();
    EXPECT_TRUE(f.whole_file_checksum) << f.path;
    (f.kind == "blob" ? blobs : tables) += 1;
  }
  EXPECT_GE(tables, 3u);
  EXPECT_EQ(blobs, 2u);  // episodes and tasks

  const std::string index = file_of(dir, "indexes", "table");
  const std::string episodes = file_of(dir, "episodes", "blob");
  const std::string tasks = file_of(dir, "tasks", "blob");
  flip_bytes(index, 100, 8);
  flip_bytes(episodes, static_cast<std::int64_t>(std::filesystem::file_size(episodes) / 2), 1);
  flip_bytes(tasks, -10, 1);  // the blob file's footer
  auto damaged = verify_store(store_at(dir));
  ASSERT_TRUE(damaged) << damaged.error().to_string();
  EXPECT_FALSE(damaged->clean());
  std::set<std::string> named;
  for (const FileCheck& f : damaged->files) {
    if (f.result) continue;
    named.insert(f.path);
    EXPECT_EQ(f.result.error().code, "store.corruption");
    EXPECT_TRUE(mentions(f.result.error(), f.path)) << f.result.error().message;
  }
  EXPECT_EQ(named, (std::set<std::string>{index, episodes, tasks}));

  // A missing file: the open fails, and what can still be checked is.
  std::filesystem::remove(index);
  auto missing = verify_store(store_at(dir));
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->clean());
  ASSERT_EQ(missing->errors.size(), 1u);
  EXPECT_TRUE(mentions(missing->errors[0], "missing table file " + index))
      << missing->errors[0].message;

  EXPECT_EQ(verify_store(store_at(tmp.sub("nothing"))).error().code, "store.missing");
}

// Blob files written before whole-file checksums were recorded are checked blob by blob.
TEST(RunStoreCorruption, VerifyReadsEveryBlobOfFilesWithoutARecordedChecksum) {
  TempDir tmp("oldblob");
  const std::string dir = tmp.sub("s");
  { ASSERT_TRUE(open_or_die(dir, StoreMode::kWrite)); }  // a store with its header
  {
    rocks::StoreRocksOptions o = rocks::make_options(store_at(dir));
    o.db.file_checksum_gen_factory = nullptr;  // as the builds before it wrote files
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    ASSERT_TRUE(rocksdb::DB::Open(o.db, dir, o.column_families, &handles, &raw).ok());
    rocksdb::ColumnFamilyHandle* tasks = handles[static_cast<int>(store_keys::Cf::kTasks)];
    for (int i = 0; i < 10; ++i) {
      const TaskRecord t = big_task("s/old" + std::to_string(i));
      ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), tasks, store_keys::task_key(t.task_id),
                           encode_store_value(t))
                      .ok());
    }
    ASSERT_TRUE(raw->Flush(rocksdb::FlushOptions(), tasks).ok());
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  const std::string blob = file_of(dir, "tasks", "blob");
  ASSERT_FALSE(blob.empty());
  auto intact = verify_store(store_at(dir));
  ASSERT_TRUE(intact);
  EXPECT_TRUE(intact->clean());
  EXPECT_EQ(intact->values_read, 10u);
  flip_bytes(blob, static_cast<std::int64_t>(std::filesystem::file_size(blob) / 2), 4);
  auto report = verify_store(store_at(dir));
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->clean());
  bool named = false;
  for (const FileCheck& f : report->files) {
    if (f.path == blob) {
      EXPECT_FALSE(f.whole_file_checksum);
      ASSERT_FALSE(f.result);
      EXPECT_EQ(f.result.error().code, "store.corruption");
      named = true;
    }
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace cuda_agent
