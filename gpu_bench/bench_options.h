// Options of the GPU bench (manifest section [bench]): verification, timing and reward.
// DESIGN.md section 5 is the protocol these parameterise. See core/option_fields.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct BenchOptions {
  static constexpr std::string_view kSection = "bench";
  static constexpr std::string_view kDoc =
      "The GPU bench: one worker per dedicated GPU that verifies, times and rewards solutions.";

  std::string tolerance_profile = "cuda-agent";
  std::int64_t verify_input_sets = 5;
  std::int64_t nonfinal_verify_input_sets = 0;
  bool final_reuses_baselines = false;
  std::int64_t warmup_trials = 10;
  std::int64_t timed_trials = 100;
  std::int64_t input_sets = 8;
  double checked_trial_fraction = 0.1;
  double faster_threshold = 0.05;
  std::string reward = "tiers";
  double implausible_speedup = 50.0;
  bool allow_tf32 = false;
  std::int64_t harness_wall_ms = 120'000;
  std::int64_t harness_memory_bytes = 64LL << 30;
  std::string python = "python3";
  bool harness_zygote = true;
  std::string nsight_compute = "auto";

  template <class V>
  void visit(V& v) {
    v({.key = "tolerance_profile",
       .doc = "Per-dtype tolerances: 'cuda-agent' (atol = rtol = 1e-2, as CUDA Agent used) or "
              "'strict' (KernelBench's 1e-4 for fp32, 1e-2 for half types).",
       .choices = {"cuda-agent", "strict"}},
      tolerance_profile);
    v({.key = "verify_input_sets",
       .unit = "sets",
       .doc = "Fresh seeded input sets a candidate must match the reference on.",
       .min = 1,
       .max = 1000},
      verify_input_sets);
    v({.key = "nonfinal_verify_input_sets",
       .unit = "sets",
       .doc = "Input sets for evaluations that are not final (requests without "
              "remeasure_baselines, e.g. the agent's own calls during an episode); final "
              "evaluations always use verify_input_sets. Every other check is the same. 0: "
              "verify_input_sets for every evaluation.",
       .min = 0,
       .max = 1000},
      nonfinal_verify_input_sets);
    v({.key = "final_reuses_baselines",
       .doc = "Final evaluations (an episode's reward) reuse the eager and torch.compile medians "
              "this worker measured earlier for the same task and precision, as the agent's own "
              "calls do, instead of timing both beside the candidate every time; the report then "
              "says the baselines came from the cache. A new task is still measured once. For "
              "runs where the bench's time per episode bounds training (a small model on one "
              "shared GPU); off: every reward times its baselines afresh."},
      final_reuses_baselines);
    v({.key = "warmup_trials",
       .unit = "trials",
       .doc = "Untimed runs of each of candidate, eager and torch.compile before timing.",
       .min = 0},
      warmup_trials);
    v({.key = "timed_trials",
       .unit = "trials",
       .doc = "Timed runs of each contender, interleaved in rounds; medians are reported.",
       .min = 1},
      timed_trials);
    v({.key = "input_sets",
       .unit = "sets",
       .doc = "Pre-made input sets that timed trials rotate through (refreshed between rounds), "
              "so a cache keyed on input pointers returns stale results and fails.",
       .min = 2},
      input_sets);
    v({.key = "checked_trial_fraction",
       .doc = "Fraction of timed trials, chosen at random, whose outputs are checked against the "
              "reference.",
       .min = 0.0,
       .max = 1.0},
      checked_trial_fraction);
    v({.key = "faster_threshold",
       .doc = "Relative speedup that counts as faster for the reward tiers (0.05: more than 5% "
              "faster).",
       .min = 0.0,
       .max = 10.0},
      faster_threshold);
    v({.key = "reward",
       .doc = "'tiers': -1 failed, +1 correct, +2 faster than eager, +3 faster than eager and "
              "torch.compile (CUDA Agent's); 'continuous': log speedup, for ablations.",
       .choices = {"tiers", "continuous"}},
      reward);
    v({.key = "implausible_speedup",
       .unit = "x",
       .doc = "Speedups over eager above this ratio are flagged for audit.",
       .min = 1.0},
      implausible_speedup);
    v({.key = "allow_tf32",
       .doc = "TF32 for matmul and cuDNN, set identically for baselines and candidate and "
              "recorded in every audit record."},
      allow_tf32);
    v({.key = "harness_wall_ms",
       .unit = "ms",
       .doc = "Wall-clock deadline of one harness run (verify + benchmark); the child is killed "
              "past it and the GPU health-checked.",
       .min = 1000},
      harness_wall_ms);
    v({.key = "harness_memory_bytes",
       .unit = "bytes",
       .doc =
           "Host resident-memory limit of the harness child process (not an address-space limit: "
           "CUDA reserves far more virtual memory than it uses).",
       .min = 1LL << 30},
      harness_memory_bytes);
    v({.key = "python", .doc = "Python interpreter of the node's PyTorch, which runs the harness."},
      python);
    v({.key = "harness_zygote",
       .doc = "Fork each harness child from a pre-started harness process (one per worker, same "
              "sandbox, torch imported, CUDA not initialised) instead of starting a fresh Python "
              "per request; saves the 1 to 2 s of importing torch. The worker falls back to a "
              "fresh Python per request when the zygote cannot start or keeps failing."},
      harness_zygote);
    v({.key = "nsight_compute",
       .doc = "Nsight Compute for profile mode: 'auto' (ncu on PATH, else "
              "/usr/local/cuda/bin/ncu), a path, or 'off'. The harness runs once more under it "
              "and the report gains registers, shared memory, achieved occupancy and DRAM/SM "
              "throughput per kernel; without it (or without permission for the GPU's counters) "
              "the report keeps the PyTorch profiler's kernel times and says why."},
      nsight_compute);
  }
};

}  // namespace cuda_agent
