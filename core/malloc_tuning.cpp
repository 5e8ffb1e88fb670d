#include "core/malloc_tuning.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace cuda_agent {

MallocTuning tune_malloc_for_large_messages() {
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t && std::strstr(t, "glibc.malloc."))
    return MallocTuning::kLeftToEnvironment;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 128 << 20) == 1;
  return mmap_ok && trim_ok ? MallocTuning::kApplied : MallocTuning::kRefused;
}

bool release_free_memory() { return malloc_trim(0) == 1; }

}  // namespace cuda_agent
