// Test-only: damage a run store's files the way a failing disk or a careless hand does (flipped
// bytes in a table's data block or in a blob file, a deleted table file, a truncated or
// overwritten footer), and a store whose values sit in table and blob files to damage.
//
//   const std::string dir = testing::make_flushed_store(tmp.sub("s"));
//   const std::string table = testing::file_of(dir, "indexes", "table");
//   testing::flip_bytes(table, 100, 64);  // inside the first data block
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_test_util.h"

namespace cuda_agent::testing {

/// Inverts `n` bytes of `path` from `offset` (negative: from the end).
inline void flip_bytes(const std::string& path, std::int64_t offset, std::size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekg(0, std::ios::end);
  const std::int64_t size = f.tellg();
  if (offset < 0) offset += size;
  ASSERT_TRUE(offset >= 0 && offset + static_cast<std::int64_t>(n) <= size) << path;
  std::string bytes(n, '\0');
  f.seekg(offset);
  f.read(bytes.data(), static_cast<std::streamsize>(n));
  for (char& c : bytes) c = static_cast<char>(~c);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(n));
  ASSERT_TRUE(f) << path;
}

/// The store's one file of `kind` ("table" or "blob") holding `column_family`, as RocksDB's
/// metadata lists it; "" (and a failed expectation) when there is not exactly one.
inline std::string file_of(const std::string& dir, const std::string& column_family,
                           const std::string& kind) {
  rocks::StoreRocksOptions o = rocks::make_options(store_at(dir));
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(o.db, dir, o.column_families, &handles, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return "";
  std::vector<std::string> found;
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    rocksdb::ColumnFamilyMetaData md;
    raw->GetColumnFamilyMetaData(h, &md);
    if (md.name != column_family) continue;
    if (kind == "blob") {
      for (const auto& b : md.blob_files) found.push_back(dir + b.blob_file_name);
    } else {
      for (const auto& level : md.levels) {
        for (const auto& f : level.files) found.push_back(dir + "/" + f.relative_filename);
      }
    }
  }
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
  EXPECT_EQ(found.size(), 1u) << column_family << " " << kind << " files in " << dir;
  return found.size() == 1 ? found.front() : "";
}

/// A task record whose value is large enough for a blob file (min_blob_size is 4 KiB).
inline TaskRecord big_task(const std::string& id) {
  TaskRecord t;
  t.task_id = TaskId{id};
  t.suite = "s";
  t.body = "{\"id\":\"" + id + "\",\"pad\":\"" + std::string(6000, 'p') + "\"}";
  return t;
}

/// A store at `dir` with run "r1" (a run record and `episodes` episodes of 6 KB trajectories,
/// in a blob file) and `tasks` big tasks, compacted: every family's values are in table and blob
/// files, none only in the WAL.
inline std::string make_flushed_store(const std::string& dir, int episodes = 40, int tasks = 20) {
  auto store = open_or_die(dir, StoreMode::kWrite);
  if (!store) return dir;
  StoreWrite w;
  RunRecord meta;
  meta.run_id = RunId{"r1"};
  meta.state = "running";
  w.runs.push_back(meta);
  for (int i = 0; i < episodes; ++i) {
    w.episodes.push_back(make_episode("r1", "e" + std::to_string(i), "t", i % 3, 6000));
  }
  for (int i = 0; i < tasks; ++i) w.tasks.push_back(big_task("s/t" + std::to_string(i)));
  EXPECT_TRUE(store->write(std::move(w), std::chrono::seconds(10)));
  Status compacted = store->compact();
  EXPECT_TRUE(compacted) << compacted.error().to_string();
  return dir;
}

}  // namespace cuda_agent::testing
