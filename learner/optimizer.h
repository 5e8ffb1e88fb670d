// AdamW over a flat fp32 master copy of the weights, optionally sharded across data-parallel
// ranks (ZeRO-1 style: every rank keeps the whole master buffer, each updates and keeps moments
// for its own slice only).
//
//   MasterAdamW opt = MasterAdamW::create(model.parameters(), {.lr = 1e-6}, {});
//   ... forward, backward (gradients land in the params' .grad) ...
//   at::Tensor g = opt.flat_grad();          // [P] fp32; all-reduce it across ranks
//   OptimizerStepStats s = opt.step(g);      // unsharded: params now hold the new weights
//   // sharded: all_gather(opt.owned_master() -> opt.full_master()); opt.publish();
//
// Buffers (all fp32, on the params' device):
//   full master  [Pp]  every parameter flattened in the order given, then zero padding; Pp is P
//                      rounded up to a multiple of 64 x world_size (sharded) or of 64.
//   owned slice  [S]   S = Pp / world_size when sharded (rank r owns [r*S, (r+1)*S)), else Pp.
//   exp_avg, exp_avg_sq [S]  the moments of the owned slice.
//
// The update is the C++ torch::optim::AdamW (decoupled weight decay applied before the moments,
// bias correction, denominator sqrt(v) / sqrt(1 - beta2^t) + eps), written with one-rounding
// tensor ops (mul, add, sqrt, div; no addcmul/addcdiv/alpha) so that each element's result does
// not depend on where it falls in a vector, a thread's chunk or a shard: sharded and unsharded
// runs give bit-identical weights. Against torch::optim::AdamW it agrees within float rounding
// (a few ulps), not bit for bit. Two differences in meaning: a parameter without a gradient is
// stepped with a zero gradient (torch skips it: its moments would not decay and weight decay
// would not apply), and a step whose gradient norm is not finite is skipped entirely (no
// update, the step count does not advance; stats.skipped says so).
//
// Errors: misuse (a gradient of the wrong size, params on several devices) and torch's own
// failures (out of memory) are thrown as c10::Error by create/step/publish; callers translate
// them once. load_state returns a Status naming what does not match.
//
// Threading: one thread (the trainer's). The compute params must not be used by another thread
// while step() or publish() writes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/torch_compat.h"

namespace cuda_agent {

struct AdamWOptions {
  /// Peak learning rate (after warm-up). Default: 1e-5.
  double lr = 1e-5;
  /// Moment decay rates and the denominator's epsilon. Defaults: 0.9, 0.999, 1e-8.
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// Decoupled weight decay per step: w *= 1 - lr_t * weight_decay. Default: 0.
  double weight_decay = 0.0;
  /// Global L2 norm the gradient is clipped to (scaled by max / (norm + 1e-6) when larger, as
  /// torch.nn.utils.clip_grad_norm_); <= 0: no clipping. Default: 1.
  double max_grad_norm = 1.0;
  /// Linear warm-up: step t (1-based) uses lr * min(1, t / warmup_steps); 0: none. Default: 0.
  std::int64_t warmup_steps = 0;
  /// Cosine decay after the warm-up: from lr at step warmup_steps to lr * min_lr_ratio at step
  /// decay_steps (1-based), then held there; 0: none (lr stays). Default: 0. Training from
  /// scratch (the seed-corpus warm-up) ends lower with it; RL keeps a constant rate.
  std::int64_t decay_steps = 0;
  double min_lr_ratio = 0.1;
};

/// The factor on lr at step t (1-based): the linear warm-up, then the cosine decay, as above.
double lr_schedule_factor(const AdamWOptions& options, std::int64_t step);

struct ShardSpec {
  int rank = 0;
  int world_size = 1;
  /// false: every rank holds and updates everything (world_size is then ignored).
  bool sharded = false;
};

struct OptimizerStepStats {
  double grad_norm = 0;  ///< global L2 norm of the gradient, before clipping
  double lr = 0;         ///< the learning rate this step used (warm-up and lr_scale applied)
  bool clipped = false;  ///< the gradient was scaled down
  bool skipped = false;  ///< the norm was not finite: nothing was updated
};

class MasterAdamW {
 public:
  /// params: the compute tensors (any floating dtype: bf16 on GPU, fp32 on CPU), leaf tensors
  /// with requires_grad, all on one device, in a fixed order (names and shapes are recorded in
  /// state() and checked by load_state). The master copy starts as the params' values.
  static MasterAdamW create(std::vector<std::pair<std::string, at::Tensor>> params,
                            const AdamWOptions& options, const ShardSpec& shard);

  /// Flat fp32 gradient [P] from the params' .grad (a missing grad counts as zeros). The caller
  /// all-reduces it across ranks before step().
  at::Tensor flat_grad() const;

  /// One update from the whole flat fp32 gradient, [P] or [Pp], already reduced across ranks:
  /// global-norm clipping (the norm of all P elements, the same on every rank), warm-up,
  /// lr = options.lr x warm-up (or cosine decay) x lr_scale, decoupled weight decay, bias
  /// correction; updates the owned slice of the master weights. Unsharded: then copies master ->
  /// params (publish()). Sharded: the caller all-gathers owned_master() of every rank into
  /// full_master() and calls publish().
  OptimizerStepStats step(const at::Tensor& flat_grad, double lr_scale = 1.0);

  /// This rank's slice of the master buffer [S] (a view; the whole buffer unsharded).
  at::Tensor owned_master();
  /// The flat master buffer [Pp] (the all-gather's destination).
  at::Tensor full_master();
  /// Full master -> compute params (cast to their dtype, on their device).
  void publish();

  /// Optimizer steps taken (skipped steps not counted).
  std::int64_t steps() const { return steps_; }
  std::int64_t numel() const { return numel_; }          ///< P
  std::int64_t padded_numel() const { return padded_; }  ///< Pp
  std::int64_t shard_numel() const { return shard_; }    ///< S
  const ShardSpec& shard() const { return spec_; }
  const AdamWOptions& options() const { return options_; }
  void set_options(const AdamWOptions& options) { options_ = options; }

  /// This rank's state, exactly restorable, as named tensors for a safetensors file:
  ///   "master", "exp_avg", "exp_avg_sq"  fp32 [S]   (views of the live buffers: copy or write
  ///                                                  them out before the next step)
  ///   "step"                             int64 [1]
  ///   "layout.shard"                     int64 [4]  P, S, rank, world_size (1 unsharded)
  ///   "layout.params"                    uint8 [n]  "name:d0xd1...;" of every param, in order
  std::map<std::string, at::Tensor> state() const;
  /// Restores state() of an optimizer over the same params (names, shapes, order) and the same
  /// sharding (rank, world size). Unsharded, the params then hold the restored master weights;
  /// sharded, the caller all-gathers and publishes as after a step. Errors: kInvalidInput,
  /// code "optimizer.bad_state", naming the key or the mismatch; nothing changes then.
  Status load_state(const std::map<std::string, at::Tensor>& state);

 private:
  MasterAdamW() = default;
  std::string layout_text() const;

  struct Param {
    std::string name;
    at::Tensor tensor;  // the compute tensor (a leaf with requires_grad)
    std::int64_t offset = 0;
    std::int64_t numel = 0;
  };
  std::vector<Param> params_;
  AdamWOptions options_;
  ShardSpec spec_;
  std::int64_t numel_ = 0, padded_ = 0, shard_ = 0, owned_offset_ = 0;
  at::Tensor master_;                // fp32 [Pp]
  at::Tensor exp_avg_, exp_avg_sq_;  // fp32 [S]
  std::int64_t steps_ = 0;
};

}  // namespace cuda_agent
