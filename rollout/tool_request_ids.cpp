#include "rollout/tool_request_ids.h"

#include "core/clock.h"

namespace cuda_agent {

RequestId ToolRequestIds::next(std::string_view kind, std::string_view digest) {
  std::uint64_t n = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(kind);
    if (it == calls_.end()) it = calls_.emplace(std::string(kind), 0).first;
    n = it->second++;
  }
  if (key_.empty()) {
    // Outside an episode: unique in this process, never repeated.
    static std::atomic<std::uint64_t> fresh{0};
    return RequestId{"episode-" + std::string(kind) + "-" + std::to_string(now_unix_ms()) + "-" +
                     std::to_string(fresh++)};
  }
  return RequestId{key_ + "/" + std::string(kind) + "-" + std::to_string(n) + "/" +
                   std::string(digest.substr(0, 16))};
}

std::string episode_request_key(std::string_view run, std::string_view episode,
                                std::uint32_t attempt) {
  return std::string(run) + "/" + std::string(episode) + "/a" + std::to_string(attempt);
}

}  // namespace cuda_agent
