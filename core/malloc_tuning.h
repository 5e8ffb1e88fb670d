// glibc's malloc for processes that move messages of a MiB and more (pool brokers, workers,
// clients; every `cuda-agent` command). By default glibc serves a block above its mmap threshold
// (128 KiB at start, raised dynamically to the largest block freed) with a fresh mmap, and trims
// an arena's top once more than twice that threshold is free: a 1 MiB payload copied, sent and
// freed then lands on pages the kernel must fault in and zero again, which costs more than the
// copy itself and depends on which thread freed what. Measured with bench_wire on the CPU machine
// (docs/BENCHMARKS.md): 1 MiB round trips through the pool 11.4 ms p50 untuned against 1.7 ms
// tuned, raw ZeroMQ through a relay 206 against 926 requests/s.
//
//   int main() { tune_malloc_for_large_messages(); ... }   // first, before any thread starts
//
// Fixed thresholds: blocks up to 32 MiB (glibc's largest) come from the arenas, and an arena
// keeps up to 128 MiB free at its top. A GLIBC_TUNABLES naming a glibc.malloc setting wins: the
// environment is left to decide.
#pragma once

namespace cuda_agent {

enum class MallocTuning { kApplied, kLeftToEnvironment, kRefused };

/// Sets the thresholds above (mallopt) unless GLIBC_TUNABLES names a malloc setting; kRefused
/// where mallopt said no. Call once, at the start of main.
MallocTuning tune_malloc_for_large_messages();

/// Gives free heap memory back to the kernel now, whatever the thresholds above (malloc_trim(0):
/// every arena's free top, and the whole free pages inside each arena). For after a burst that
/// will not come back soon (a work-pool queue drained after a flood), not per message: it walks
/// every arena, and pages it gives back must be faulted in again when reused. True when some
/// memory was given back.
bool release_free_memory();

}  // namespace cuda_agent
