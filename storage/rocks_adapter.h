// Internal to storage/: the one place that knows RocksDB's types. It translates rocksdb::Status
// into an Error and builds the options every run store (and the benchmark's raw-RocksDB anchor)
// opens with, so the two compare like for like.
//
// Retention settings for long runs: level compaction with dynamic level sizes; LZ4 for data
// blocks and ZSTD for the bottommost level (whichever of the two this RocksDB build supports,
// else none); large values (episodes, artifacts) in blob files so compaction does not rewrite
// them; metrics dropped at compaction once older than StoreOptions::metrics_ttl_days, with
// periodic compaction so the filter runs even on a quiet column family.
//
// Threading: free functions; the compaction filter is called from RocksDB's background threads
// and holds no state but its TTL.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "storage/store_options.h"

namespace cuda_agent::rocks {

/// Translates a non-OK status; `context` (e.g. "episodes key 'r1\x00e1'") leads the message.
/// Codes: store.not_found, store.corruption, store.io, store.locked, store.busy, store.timeout,
/// store.invalid, store.internal.
Error to_error(const rocksdb::Status& status, std::string_view context);

/// Whether `status` is RocksDB failing to take the directory's LOCK file.
bool is_lock_error(const rocksdb::Status& status);

/// Milliseconds since the Unix epoch, as the TTL filter sees them; replaceable in tests.
using UnixMsClock = std::function<std::int64_t()>;

struct StoreRocksOptions {
  rocksdb::DBOptions db;
  /// One descriptor per store_keys::Cf, in that order.
  std::vector<rocksdb::ColumnFamilyDescriptor> column_families;
};

/// Options for the store in `options.dir`. `clock` feeds the metrics TTL filter (default: the
/// system clock).
StoreRocksOptions make_options(const StoreOptions& options, UnixMsClock clock = {});

/// Names of the compressions used for data blocks and the bottommost level, e.g. "lz4", "zstd".
std::string compression_summary();

}  // namespace cuda_agent::rocks
