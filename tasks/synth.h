// The fused-operator task synthesizer (`cuda-agent tasks synth`), after CUDA-Agent-Ops-6K: chains
// of 1 to 5 operators from the catalogue (tasks/op_catalogue.h) with consistent shapes, sized so
// the estimated eager time on an H200 lands in a target range, printed as KernelBench-format
// Python (class Model(nn.Module), get_inputs(), get_init_inputs()).
//
//   SynthOptions o;
//   o.seed = 42;
//   ASSIGN_OR_RETURN(SynthTask t, synthesize_one(o, 17));  // task 17 of seed 42
//   write(t.name + ".py", t.source);
//
// Determinism: task i of seed s depends only on (s, i) and the catalogue, never on the count,
// the thread or the platform: its generator is std::mt19937_64 seeded with splitmix64(s, i), and
// every distribution is written out (tasks/rng.h). So `--count 100` is a prefix of `--count 6000`,
// and tasks can be made in parallel.
//
// Sizing: an operator's cost is bytes moved and FLOPs per batch row plus a fixed part (weights).
// The estimate is sum over ops of bytes / hbm_gb_per_s + flops / fp32_tflops + launch_us: eager
// PyTorch runs one kernel per op, each reading and writing HBM. A chain is built at batch 1, a
// target time is drawn log-uniformly in [target_min_ms, target_max_ms], and the batch is solved
// for it; a chain whose batch would leave [accept_min_ms, accept_max_ms] or exceed the memory
// limits is redrawn. The GPU filter (issue 7 item 4) measures the real time later.
//
// Threading: free functions of their arguments; the catalogue is immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tasks/op_catalogue.h"

namespace cuda_agent {

struct SynthOptions {
  std::uint64_t seed = 0;
  /// Weights of chain lengths 1..5 (normalised). Default: close to Ops-6K, mostly two-operator
  /// fusions. `--mix "1:0.1,2:0.6,3:0.2,4:0.05,5:0.05"`.
  std::vector<double> length_weights = {0.1, 0.6, 0.2, 0.05, 0.05};
  /// Probability that a chain starts with an anchor (conv, matmul/linear, normalisation), as
  /// most fused tasks do. Default: 0.6.
  double anchor_first = 0.6;
  /// Target estimated eager time, drawn log-uniformly per task. Default: 2 to 20 ms, inside the
  /// filter's default window [1, 100] ms (tasks/task_options.h) with room for the estimate's error.
  double target_min_ms = 2;
  double target_max_ms = 20;
  /// Chains whose estimate at the solved batch leaves this window are redrawn.
  double accept_min_ms = 1;
  double accept_max_ms = 100;
  /// The H200 model of the estimate: HBM bandwidth eager kernels reach (GB/s), fp32 throughput
  /// (TFLOP/s, between SIMT fp32 and TF32 convolutions), and launch cost per op (us).
  double hbm_gb_per_s = 3000;
  double fp32_tflops = 50;
  double launch_us = 5;
  /// No single tensor (input, intermediate, output) above this. Default: 4 GiB.
  double max_tensor_bytes = 4.0 * (1 << 30);
  /// Inputs + parameters + the largest op's input and output together. Default: 24 GiB.
  double max_memory_bytes = 24.0 * (1 << 30);
  /// Redraws per task before giving up with task.synth_exhausted.
  int max_attempts = 500;
};

/// Parses "1:0.1,2:0.6,3:0.2,4:0.05,5:0.05" (length:weight, lengths 1..5, weights >= 0, some
/// > 0; lengths left out weigh 0). Errors (task.bad_mix) quote the bad part.
Expected<std::vector<double>> parse_length_mix(std::string_view text);

/// One synthesized task.
struct SynthTask {
  std::uint64_t index = 0;
  std::string name;              ///< "00017_Conv2d_relu"
  std::vector<std::string> ops;  ///< catalogue names, in chain order
  std::string source;            ///< the KernelBench-format program
  std::int64_t batch = 1;
  std::vector<Shape> input_shapes;  ///< forward's inputs, batch filled in
  Shape output_shape;               ///< batch filled in; empty for a scalar
  double estimated_ms = 0;
  double flops = 0;
  double bytes = 0;
};

/// Task `index` of `options.seed`. Errors: task.synth_exhausted after max_attempts redraws.
Expected<SynthTask> synthesize_one(const SynthOptions& options, std::uint64_t index);

/// Tasks first..first+count-1, in order. `progress` (may be empty) is called once per task.
Expected<std::vector<SynthTask>> synthesize(const SynthOptions& options, std::uint64_t first,
                                            std::uint64_t count,
                                            const std::function<void()>& progress);

}  // namespace cuda_agent
