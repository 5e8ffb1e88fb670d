#include "coordinator/staleness.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace cuda_agent {

std::uint64_t StalenessController::bound(PolicyVersion version) const {
  return (options_.max_staleness + version.value() + 1) * options_.batch_episodes;
}

std::uint64_t StalenessController::capacity(PolicyVersion version) const {
  const std::uint64_t used = counters_.accepted + counters_.running;
  const std::uint64_t limit = bound(version);
  std::uint64_t cap = limit > used ? limit - used : 0;
  if (options_.max_concurrent > 0) {
    const std::uint64_t slots = options_.max_concurrent > counters_.running
                                    ? options_.max_concurrent - counters_.running
                                    : 0;
    cap = std::min(cap, slots);
  }
  return cap;
}

bool StalenessController::admit(PolicyVersion version) {
  if (capacity(version) == 0) return false;
  ++counters_.running;
  return true;
}

void StalenessController::on_lost() {
  assert(counters_.running > 0);
  --counters_.running;
}

void StalenessController::on_accepted() {
  assert(counters_.running > 0);
  --counters_.running;
  ++counters_.accepted;
}

void StalenessController::on_rejected() {
  assert(counters_.running > 0);
  --counters_.running;
  ++counters_.rejected;
}

void StalenessController::on_dropped() {
  assert(counters_.accepted > 0);
  --counters_.accepted;
  ++counters_.rejected;
}

}  // namespace cuda_agent
