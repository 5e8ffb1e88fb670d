// Request ids for the compile and bench calls of one episode attempt, derived instead of drawn,
// so that a repeat of the same call is recognised by the pool's broker, which treats a request id
// as an idempotency key (actors/work_pool_broker.h): an attempt rerun from scratch (its policy
// server went away, the same seed samples the same code) gets its compile and bench results from
// the broker's result cache instead of running them again.
//
//   ToolRequestIds ids("run-1/task#0/a1");                   // run / episode / attempt
//   ids.next("compile", digest_of_files)   -> "run-1/task#0/a1/compile-0/1f3a9c2b7d10e6a4"
//   ids.next("bench", digest_of_request)   -> "run-1/task#0/a1/bench-0/..."
//
// The id holds the call's kind, its index among this attempt's calls of that kind (the turns are
// sequential, so the index names turn and call) and a digest of what the call sends: a rerun
// that writes different code gets a new id, never another kernel's result. An empty key gives
// ids unique to this process (time and a counter), as for calls outside an episode.
//
// Threading: next() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "core/ids.h"

namespace cuda_agent {

class ToolRequestIds {
 public:
  explicit ToolRequestIds(std::string key = "") : key_(std::move(key)) {}

  /// The id of the next call of `kind` ("compile", "bench"); `digest` names what it sends (a
  /// content hash; only its first 16 characters go into the id).
  RequestId next(std::string_view kind, std::string_view digest);

  const std::string& key() const { return key_; }

 private:
  std::string key_;
  std::mutex mutex_;
  std::map<std::string, std::uint64_t, std::less<>> calls_;  // per kind
};

/// The key of one episode attempt: "RUN/EPISODE/aATTEMPT".
std::string episode_request_key(std::string_view run, std::string_view episode,
                                std::uint32_t attempt);

}  // namespace cuda_agent
