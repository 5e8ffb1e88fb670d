#include "storage/rocks_adapter.h"

#include "core/clock.h"

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <chrono>

#include "messages/store_codec.h"
#include "storage/store_keys.h"

namespace cuda_agent::rocks {
namespace {

using store_keys::Cf;

bool supported(rocksdb::CompressionType type) {
  static const std::vector<rocksdb::CompressionType> all = rocksdb::GetSupportedCompressions();
  return std::find(all.begin(), all.end(), type) != all.end();
}

rocksdb::CompressionType fast_compression() {
  if (supported(rocksdb::kLZ4Compression)) return rocksdb::kLZ4Compression;
  if (supported(rocksdb::kSnappyCompression)) return rocksdb::kSnappyCompression;
  return rocksdb::kNoCompression;
}

rocksdb::CompressionType strong_compression() {
  if (supported(rocksdb::kZSTD)) return rocksdb::kZSTD;
  return fast_compression();
}

std::string name_of(rocksdb::CompressionType type) {
  switch (type) {
    case rocksdb::kLZ4Compression: return "lz4";
    case rocksdb::kZSTD: return "zstd";
    case rocksdb::kSnappyCompression: return "snappy";
    case rocksdb::kNoCompression: return "none";
    default: return "other";
  }
}

// Drops metrics whose unixMs is older than the TTL. A value it cannot decode is kept: the filter
// never deletes what it does not understand.
class MetricsTtlFilter : public rocksdb::CompactionFilter {
 public:
  MetricsTtlFilter(std::int64_t ttl_ms, std::int64_t now_ms) : ttl_ms_(ttl_ms), now_ms_(now_ms) {}
  bool Filter(int, const rocksdb::Slice&, const rocksdb::Slice& value, std::string*,
              bool*) const override {
    MetricRecord m;
    if (!decode_store_value(std::string_view(value.data(), value.size()), &m)) return false;
    return now_ms_ - m.unix_ms > ttl_ms_;
  }
  const char* Name() const override { return "cuda_agent.MetricsTtlFilter"; }

 private:
  std::int64_t ttl_ms_;
  std::int64_t now_ms_;
};

class MetricsTtlFilterFactory : public rocksdb::CompactionFilterFactory {
 public:
  MetricsTtlFilterFactory(std::int64_t ttl_ms, UnixMsClock clock)
      : ttl_ms_(ttl_ms), clock_(std::move(clock)) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context&) override {
    return std::make_unique<MetricsTtlFilter>(ttl_ms_, clock_());
  }
  const char* Name() const override { return "cuda_agent.MetricsTtlFilterFactory"; }

 private:
  std::int64_t ttl_ms_;
  UnixMsClock clock_;
};

}  // namespace

bool is_lock_error(const rocksdb::Status& status) {
  if (!status.IsIOError()) return false;
  const std::string text = status.ToString();
  return text.find("lock file") != std::string::npos ||
         text.find("lock hold") != std::string::npos || text.find("/LOCK") != std::string::npos;
}

Error to_error(const rocksdb::Status& status, std::string_view context) {
  std::string message = std::string(context) + ": " + status.ToString();
  if (status.IsNotFound()) return make_error(ErrorCategory::kNotFound, "store.not_found", message);
  if (status.IsCorruption()) return make_error(ErrorCategory::kIo, "store.corruption", message);
  if (is_lock_error(status)) {
    return make_error(ErrorCategory::kUnavailable, "store.locked", message);
  }
  if (status.IsIOError()) return make_error(ErrorCategory::kIo, "store.io", message);
  if (status.IsTimedOut()) return make_error(ErrorCategory::kTimeout, "store.timeout", message);
  if (status.IsBusy() || status.IsTryAgain() || status.IsIncomplete()) {
    return make_error(ErrorCategory::kUnavailable, "store.busy", message);
  }
  if (status.IsInvalidArgument() || status.IsNotSupported()) {
    return make_error(ErrorCategory::kInvalidInput, "store.invalid", message);
  }
  return make_error(ErrorCategory::kInternal, "store.internal", message);
}

std::string compression_summary() {
  return name_of(fast_compression()) + " (bottommost " + name_of(strong_compression()) + ")";
}

StoreRocksOptions make_options(const StoreOptions& options, UnixMsClock clock) {
  StoreRocksOptions out;
  rocksdb::DBOptions& db = out.db;
  db.create_if_missing = false;  // the store decides (RunStore::open) and writes its header
  db.create_missing_column_families = true;  // a newer build's families are added, never dropped
  db.max_background_jobs = 4;
  db.bytes_per_sync = 1 << 20;             // smooth SST writes instead of one fsync burst per file
  db.max_total_wal_size = 512ull << 20;    // flushes quiet families so old WAL files can go
  db.db_write_buffer_size = 512ull << 20;  // all memtables together
  db.keep_log_file_num = 5;                // RocksDB's own info LOG files
  db.max_log_file_size = 16 << 20;
  db.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // A whole-file CRC32C of every table and blob file, recorded in the MANIFEST when the file is
  // written: VerifyFileChecksums (`store verify`) checks blob files with it, which
  // VerifyChecksum (block checksums of table files only) does not.
  db.file_checksum_gen_factory = rocksdb::GetFileChecksumGenCrc32cFactory();

  std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(
      static_cast<std::size_t>(std::max<std::int64_t>(options.block_cache_bytes, 1 << 20)));
  for (int i = 0; i < static_cast<int>(Cf::kCount); ++i) {
    const Cf cf = static_cast<Cf>(i);
    rocksdb::ColumnFamilyOptions cfo;
    cfo.compaction_style = rocksdb::kCompactionStyleLevel;
    cfo.level_compaction_dynamic_level_bytes = true;
    cfo.write_buffer_size = 64 << 20;
    cfo.max_write_buffer_number = 4;
    cfo.target_file_size_base = 64 << 20;
    cfo.max_bytes_for_level_base = 256 << 20;
    cfo.compression = fast_compression();
    cfo.bottommost_compression = strong_compression();
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = cache;
    table.block_size = 16 << 10;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    table.cache_index_and_filter_blocks = true;
    table.pin_l0_filter_and_index_blocks_in_cache = true;
    table.format_version = 5;
    cfo.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    if (cf == Cf::kEpisodes || cf == Cf::kArtifacts || cf == Cf::kTasks) {
      // Values of 64 KiB to megabytes: kept in blob files, which compaction does not rewrite.
      cfo.enable_blob_files = true;
      cfo.min_blob_size = 4096;
      cfo.blob_file_size = 256ull << 20;
      cfo.blob_compression_type = fast_compression();
    }
    if (cf == Cf::kMetrics && options.metrics_ttl_days > 0) {
      cfo.compaction_filter_factory = std::make_shared<MetricsTtlFilterFactory>(
          options.metrics_ttl_days * 86'400'000LL, clock ? clock : UnixMsClock(now_unix_ms));
      cfo.periodic_compaction_seconds = 86'400;  // every file meets the filter at least daily
    }
    out.column_families.emplace_back(std::string(store_keys::cf_name(cf)), cfo);
  }
  return out;
}

}  // namespace cuda_agent::rocks
