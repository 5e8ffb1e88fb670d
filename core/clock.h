// Wall-clock time as the wire and the store use it: absolute milliseconds since the Unix epoch
// (deadlines, creation times, metric TTLs).
#pragma once

#include <chrono>
#include <cstdint>

namespace cuda_agent {

/// Milliseconds since the Unix epoch, from the system clock.
inline std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace cuda_agent
