// Internal to storage/: the run store's group-commit writer. Callers encode their records into a
// PreparedWrite on their own thread (prepare_write); one writer thread gathers queued writes into
// one WriteBatch, writes it with WriteOptions::sync and only then calls their callbacks. A group
// takes everything queued, then waits for more for at most `group_commit` after its first write,
// and stops waiting once it holds as many writes as the previous group (under steady load every
// appender is in by then; waiting longer would only add latency). Duplicate-id checks run on the
// writer thread, the only thread that writes, so "look up, then write" cannot race.
//
// Threading: enqueue() from any thread. Callbacks run on the writer thread. The destructor writes
// what is queued, acknowledges it and joins the thread; it must not race with enqueue().
#pragma once

#include <rocksdb/db.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"

namespace cuda_agent {

struct PreparedEntry {
  store_keys::Cf cf;
  std::string key;
  std::string value;
};

/// One record's entries (its value and its index entries), written all or none.
struct PreparedRecord {
  /// Records with an id that must stay unique (episodes, evaluations): the writer looks up
  /// `unique_key`; absent: write; present with `unique_value`: skip (already stored); present
  /// with another value: fail the whole write with store.conflict.
  bool unique = false;
  store_keys::Cf unique_cf = store_keys::Cf::kDefault;
  std::string unique_key;
  std::string unique_value;
  std::string what;  ///< "episode r1/e7" for errors
  std::vector<PreparedEntry> entries;
};

struct PreparedWrite {
  std::vector<PreparedRecord> records;
  std::size_t bytes = 0;  ///< keys + values
};

/// Checks ids and numbers and encodes every record; consumes `write`.
Expected<PreparedWrite> prepare_write(StoreWrite&& write);

struct WriterLimits {
  std::chrono::milliseconds group_commit{2};
  /// A group is written once it holds this much, even inside the window.
  std::size_t max_group_bytes = 64u << 20;
  /// enqueue() waits (up to the write's deadline) while more than this is queued.
  std::size_t max_pending_bytes = 1u << 30;
};

class StoreWriter {
 public:
  StoreWriter(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles,
              WriterLimits limits);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  void enqueue(PreparedWrite write, StoreClock::time_point deadline, WriteCallback done);
  WriteStats stats() const;

 private:
  struct Pending {
    PreparedWrite write;
    StoreClock::time_point deadline;
    WriteCallback done;
  };
  struct Group;

  void run();
  /// Adds `p` to the group's batch unless a duplicate check fails it (then fills `failed`).
  void stage(Pending& p, Group& group);
  void commit(Group& group);

  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  WriterLimits limits_;

  mutable std::mutex mu_;
  WriteStats stats_;                  // guarded by mu_
  std::condition_variable work_cv_;   // writer waits for work
  std::condition_variable space_cv_;  // enqueue waits for room
  std::deque<Pending> queue_;
  std::size_t pending_bytes_ = 0;
  bool stopping_ = false;
  std::size_t last_group_writes_ = 1;  // writer thread only
  std::thread thread_;
};

}  // namespace cuda_agent
