// Internal to storage/: RunStore's state and the read helpers its .cpp files share
// (run_store.cpp: open, close, writes, point reads; run_store_queries.cpp: scans, RFT, stats;
// run_store_export.cpp: JSONL export).
//
// Threading: as RunStore. RocksDB's DB, handles and iterators are safe for concurrent readers.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"
#include "storage/store_writer.h"

namespace cuda_agent {

struct RunStore::Impl {
  StoreOptions options;
  StoreMode mode = StoreMode::kReadOnly;
  std::string secondary_dir;  ///< kSecondary's own info-log directory, removed on close
  std::unique_ptr<rocksdb::DB> db;
  /// Indexed by store_keys::Cf; further (unknown, newer) families follow.
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<StoreWriter> writer;  ///< kWrite only

  ~Impl();

  rocksdb::ColumnFamilyHandle* cf(store_keys::Cf c) const { return handles[static_cast<int>(c)]; }
  /// "<dir>: episodes key 'r1\x00e7'": leads errors about one stored value.
  std::string where(store_keys::Cf c, std::string_view key) const;

  /// Reads and decodes one value; not found is store.not_found naming `what`.
  template <class T>
  Expected<T> get(store_keys::Cf c, const std::string& key, std::string_view what) const {
    std::string value;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf(c), key, &value);
    if (s.IsNotFound()) {
      return make_error(ErrorCategory::kNotFound, "store.not_found",
                        std::string(what) + " is not in the store " + options.dir);
    }
    if (!s.ok()) return rocks::to_error(s, where(c, key));
    T out;
    RETURN_IF_ERROR(decode(c, key, value, &out));
    return out;
  }

  /// decode_store_value with the column family and key added to the error.
  template <class T>
  Status decode(store_keys::Cf c, std::string_view key, std::string_view value, T* out) const {
    Status s = decode_store_value(value, out);
    if (!s) return s.error().with_context(where(c, key));
    return s;
  }
};

/// An iterator over [lower, upper) of one column family; `upper` empty means no bound.
class Cursor {
 public:
  Cursor(const RunStore::Impl& store, store_keys::Cf cf, std::string lower, std::string upper);
  bool valid() const { return it_->Valid(); }
  std::string_view key() const { return {it_->key().data(), it_->key().size()}; }
  std::string_view value() const { return {it_->value().data(), it_->value().size()}; }
  void next() { it_->Next(); }
  void seek(const std::string& target) { it_->Seek(target); }
  /// The iterator's error, if it stopped on one.
  Status status() const;

 private:
  const RunStore::Impl& store_;
  store_keys::Cf cf_;
  std::string lower_;
  std::string upper_;
  rocksdb::Slice upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

// Opening (store_open.cpp). Errors name the directory.

/// True when `dir` must be created (kWrite: it was missing, now exists empty, or was empty).
Expected<bool> check_store_directory(const std::string& dir, StoreMode mode);
/// The column families to open: ours, plus any a newer build added. Refuses (untouched) a
/// database that has none of a store's header and is not empty.
Expected<std::vector<rocksdb::ColumnFamilyDescriptor>> resolve_families(
    const std::string& dir, StoreMode mode, const rocks::StoreRocksOptions& options, bool create);
/// The opened store's header exists, is ours and is not from a newer format. kWrite writes it
/// into an empty database (a new store, or one whose creation was interrupted).
Status check_store_header(const RunStore::Impl& impl);

/// Visits the decoded EpisodeSummary values of every index entry under `prefix`.
Status scan_summaries(const RunStore::Impl& store, const std::string& prefix,
                      const std::string& start, const SummaryVisitor& visit);

}  // namespace cuda_agent
