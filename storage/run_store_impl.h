// Internal to storage/: RunStore's state and the read helpers its .cpp files share
// (run_store.cpp: open, close, writes, point reads; run_store_queries.cpp: scans, RFT, stats;
// run_store_export.cpp: JSONL export).
//
// Threading: as RunStore. RocksDB's DB, handles and iterators are safe for concurrent readers.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"
#include "storage/store_writer.h"

namespace cuda_agent {

/// One opened RocksDB instance and its column family handles. kSecondary swaps in a new one at
/// catch_up(); readers hold the one they started with (shared_ptr) until they are done.
struct DbView {
  std::unique_ptr<rocksdb::DB> db;
  /// Indexed by store_keys::Cf (null for a later family an older store lacks, read modes);
  /// further (unknown, newer) families follow.
  std::vector<rocksdb::ColumnFamilyHandle*> handles;

  DbView() = default;
  DbView(const DbView&) = delete;
  DbView& operator=(const DbView&) = delete;
  ~DbView();
  rocksdb::ColumnFamilyHandle* cf(store_keys::Cf c) const { return handles[static_cast<int>(c)]; }
};

struct RunStore::Impl {
  StoreOptions options;
  StoreMode mode = StoreMode::kReadOnly;
  std::unique_ptr<StoreWriter> writer;  ///< kWrite only

  ~Impl();

  /// The current view (kWrite, kReadOnly: the one opened; kSecondary: the last catch_up's).
  std::shared_ptr<DbView> view() const;
  void set_view(std::shared_ptr<DbView> v);

  /// "<dir>: episodes key 'r1\x00e7'": leads errors about one stored value.
  std::string where(store_keys::Cf c, std::string_view key) const;

  /// rocks::to_error, and for corruption: names the damaged file when RocksDB's message does not
  /// (a blob read), and remembers the damage so that later writes are refused.
  Error rocks_error(const DbView& v, store_keys::Cf c, const rocksdb::Status& s,
                    std::string_view context) const;
  /// The first corruption any read or write met, or OK.
  Status damage() const;

  /// Reads and decodes one value; not found is store.not_found naming `what`.
  template <class T>
  Expected<T> get(store_keys::Cf c, const std::string& key, std::string_view what) const {
    const std::shared_ptr<DbView> v = view();
    std::string value;
    rocksdb::Status s = v->db->Get(rocksdb::ReadOptions(), v->cf(c), key, &value);
    if (s.IsNotFound()) {
      return make_error(ErrorCategory::kNotFound, "store.not_found",
                        std::string(what) + " is not in the store " + options.dir);
    }
    if (!s.ok()) return rocks_error(*v, c, s, where(c, key));
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

  /// kSecondary: the store directory's WAL and MANIFEST files (names and sizes) at the last
  /// open; catch_up() reopens only when they changed.
  std::string seen_files;
  std::mutex catch_up_mu;  ///< one catch_up at a time (guards seen_files)

 private:
  mutable std::mutex mu_;
  std::shared_ptr<DbView> view_;
  mutable std::optional<Error> damage_;
};

/// An iterator over [lower, upper) of one column family; `upper` empty means no bound.
class Cursor {
 public:
  Cursor(const RunStore::Impl& store, store_keys::Cf cf, std::string lower, std::string upper);
  /// False at the end of the range and when the iterator stopped on an error (see status()).
  bool valid() const { return it_->Valid(); }
  std::string_view key() const { return {it_->key().data(), it_->key().size()}; }
  std::string_view value() const { return {it_->value().data(), it_->value().size()}; }
  void next() { it_->Next(); }
  void seek(const std::string& target) { it_->Seek(target); }
  /// The iterator's error, if it stopped on one.
  Status status() const;

 private:
  const RunStore::Impl& store_;
  std::shared_ptr<DbView> view_;  // keeps the DB the iterator reads alive
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
/// Opens the RocksDB database of `impl.options.dir` in `impl.mode` (kSecondary: read-only, see
/// run_store.cpp) and checks its header. Corruption found while opening names the damaged files.
Expected<std::shared_ptr<DbView>> open_view(const RunStore::Impl& impl, bool create);
/// The opened store's header exists, is ours and is not from a newer format. kWrite writes it
/// into an empty database (a new store, or one whose creation was interrupted).
Status check_store_header(const RunStore::Impl& impl, const DbView& v);
/// Names and sizes of the WAL, MANIFEST and CURRENT files under `dir`: any acknowledged write or
/// flush changes them.
std::string wal_and_manifest_files(const std::string& dir);

// Damage (store_verify.cpp).

/// Which of `cf`'s files a read error without a file name came from: the first blob file whose
/// recorded whole-file checksum does not match. Empty when none can be named.
std::string locate_damaged_blob_file(const DbView& v, store_keys::Cf cf);
/// The table and blob files under `dir` that fail RocksDB's checks (table files: block
/// checksums; every file with a recorded whole-file checksum is checked by store verify, which
/// has the MANIFEST; here, without it, blob files cannot be). "" when none is found.
std::string damaged_files_in(const std::string& dir, const rocks::StoreRocksOptions& options);

/// Visits the decoded EpisodeSummary values of every index entry under `prefix`.
Status scan_summaries(const RunStore::Impl& store, const std::string& prefix,
                      const std::string& start, const SummaryVisitor& visit);

}  // namespace cuda_agent
