// Options of the run store (manifest section [store]). See core/option_fields.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct StoreOptions {
  static constexpr std::string_view kSection = "store";
  static constexpr std::string_view kDoc =
      "The run store: RocksDB, the system of record of a run. Acknowledged means synced.";

  std::string dir = "runs/local/store";
  std::int64_t group_commit_ms = 2;
  std::int64_t block_cache_bytes = 512LL << 20;
  std::int64_t metrics_ttl_days = 0;

  template <class V>
  void visit(V& v) {
    v({.key = "dir",
       .doc = "Directory of the RocksDB store, on the coordinator's local disk. Relative paths "
              "are relative to the manifest's directory."},
      dir);
    v({.key = "group_commit_ms",
       .unit = "ms",
       .doc = "How long the writer gathers records into one synced write batch; longer raises "
              "throughput and the latency of an acknowledgement.",
       .min = 0,
       .max = 1000},
      group_commit_ms);
    v({.key = "block_cache_bytes",
       .unit = "bytes",
       .doc = "RocksDB block cache shared by all column families.",
       .min = 0},
      block_cache_bytes);
    v({.key = "metrics_ttl_days",
       .unit = "days",
       .doc = "Metrics older than this are dropped at compaction; 0 keeps them for the run's "
              "life. Episodes, evaluations and artifacts are never dropped.",
       .min = 0},
      metrics_ttl_days);
  }
};

}  // namespace cuda_agent
