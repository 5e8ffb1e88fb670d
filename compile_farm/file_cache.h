// A content-addressed file cache on local disk: the compile farm's object and artifact caches.
// Entries are named by a hex key; put() writes to a temporary file and renames it (a reader never
// sees half an entry, and several worker processes may share one directory); get() refreshes the
// entry's time, and when the cache passes its byte budget the least recently used entries go.
//
//   FileCache cache("/var/cache/cuda-agent/objects", 8ll << 30);
//   cache.put(key, bytes);
//   std::optional<std::string> hit = cache.get(key);
//
// Threading: every method may be called from any thread; one mutex guards the size accounting.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace cuda_agent::compile_farm {

class FileCache {
 public:
  /// Creates `dir` (mode 0700) if needed. budget_bytes 0: nothing is kept.
  static Expected<std::unique_ptr<FileCache>> open(std::string dir, std::int64_t budget_bytes);

  std::optional<std::string> get(std::string_view key);
  /// Stores `bytes` under `key` (last write wins); evicts old entries past the budget.
  Status put(std::string_view key, std::string_view bytes);
  const std::string& dir() const { return dir_; }

 private:
  FileCache(std::string dir, std::int64_t budget_bytes);
  void evict_locked();

  std::string dir_;
  std::int64_t budget_bytes_;
  std::mutex mu_;
  std::int64_t approx_bytes_ = -1;  // -1: not counted yet
};

/// Reads a regular file without following a symbolic link; at most `max_bytes`.
Expected<std::string> read_regular_file(const std::string& path, std::int64_t max_bytes);
/// Writes `bytes` to `path` (created with `mode`, truncated if present).
Status write_file(const std::string& path, std::string_view bytes, unsigned mode = 0644);

}  // namespace cuda_agent::compile_farm
