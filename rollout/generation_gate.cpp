#include "rollout/generation_gate.h"

#include <algorithm>
#include <chrono>

#include "core/clock.h"

namespace cuda_agent {

bool GenerationGate::acquire_until(std::int64_t deadline_unix_ms) {
  const auto wait = std::chrono::milliseconds(
      deadline_unix_ms > 0 ? std::max<std::int64_t>(deadline_unix_ms - now_unix_ms(), 0)
                           : std::int64_t{24} * 3'600'000);
  if (!slots_.try_acquire_for(wait)) return false;
  const std::int64_t now = ++running_;
  std::int64_t seen = max_running_.load();
  while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
  }
  return true;
}

void GenerationGate::release() {
  --running_;
  slots_.release();
}

Error GatedPolicy::stopped_error() {
  cut_ = true;
  return make_error(ErrorCategory::kUnavailable, "rollout.stopped",
                    "the rollout worker is stopping");
}

Expected<PolicyTurn> GatedPolicy::next(const PolicyRequest& request) {
  if (stopped()) return stopped_error();
  if (!gate_.acquire_until(request.deadline_unix_ms)) {
    return make_error(ErrorCategory::kTimeout, "rollout.generation_slot",
                      "no generation slot came free before the turn's deadline");
  }
  if (stopped()) {  // the stop came while this episode waited for a slot
    gate_.release();
    return stopped_error();
  }
  Expected<PolicyTurn> turn = inner_.next(request);
  gate_.release();
  return turn;
}

}  // namespace cuda_agent
