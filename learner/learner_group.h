// The learner's data-parallel group: the collectives the trainer needs (gradient all-reduce,
// scalar sums, weight broadcast, the all-gather of a sharded optimizer) with a deadline on every
// one of them. Gloo on CPU (tests, the embedded CPU run), NCCL on a GPU (the GPU nodes).
//
//   LearnerGroupOptions o{.rank = r, .world_size = n, .rendezvous = "tcp://10.0.0.1:29510",
//                         .timeout = std::chrono::milliseconds(cfg.nccl_timeout_ms),
//                         .cuda_device = local_gpu};
//   ASSIGN_OR_RETURN(auto group, LearnerGroup::create(o));
//   RETURN_IF_ERROR(group->allreduce_sum(grads));          // then divide by the token count
//
// Failure model (DESIGN.md section 3, RL_INFRA_NOTES.md item 3): no collective waits forever. A
// collective that misses its deadline returns kTimeout `learner.collective_timeout`; one that fails
// otherwise (a peer died, a connection closed) returns kUnavailable `learner.collective_failed`.
// Either way the backend is torn down at once (NCCL: its communicator aborted; Gloo: dropped) and
// the group is broken(): every later call returns `learner.group_broken`. The ranks then destroy
// their groups and call create() again, on a fresh rendezvous, typically after reloading the last
// checkpoint (DESIGN.md section 7: a lost learner rank restarts the learner group).
//
// No c10d type appears here: the backends live in learner_group.cpp, which is the one place that
// translates c10::Error, gloo and NCCL exceptions into Errors. Nothing here throws.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

struct LearnerGroupOptions {
  /// This process's rank, 0 <= rank < world_size. Default: 0.
  int rank = 0;
  /// Number of learner processes. 1 means no process group at all: every collective is a local
  /// no-op and `rendezvous` is not read. Default: 1.
  int world_size = 1;
  /// Where the ranks meet, the same string on every rank:
  ///   "file:/path/to/file"  a c10d::FileStore on a file every rank can reach (one host, or a
  ///                         shared filesystem). The file must not exist before the first rank
  ///                         starts: a stale file from an earlier group would hold stale keys.
  ///   "tcp://host:port"     a c10d::TCPStore that rank 0 hosts on `port`; host must be rank 0's
  ///                         address as the other ranks see it.
  /// Each create() needs a fresh one: a new file, or the old group destroyed on every rank before
  /// rank 0 hosts the TCP store again. Default: empty (valid only with world_size == 1).
  std::string rendezvous;
  /// Deadline of every collective (each bucket of a call gets it in full, counted from when the
  /// bucket before it finished) and of the rendezvous: every rank must have joined within it of
  /// its own create() call; connecting the backend and the first collective then get it again.
  /// The manifest's [learner] nccl_timeout_ms. Long enough for the slowest rank to reach the
  /// collective (a step's forward/backward imbalance), short enough that a hung group is noticed.
  /// Default: 10 minutes.
  std::chrono::milliseconds timeout{600'000};
  /// Set: NCCL on this CUDA device (tensors passed in must live there); create() makes it the
  /// current device and, unless the operator set it, sets TORCH_NCCL_ASYNC_ERROR_HANDLING=2 (the
  /// watchdog aborts a failed communicator without killing the process, so the error reaches the
  /// caller). Each NCCL collective is waited for on the host (polled), so every call is a host
  /// synchronisation point. Unset: Gloo on CPU; GLOO_SOCKET_IFNAME picks the network interface.
  /// Default: unset.
  std::optional<int> cuda_device;
  /// Upper bound on one flattened bucket of allreduce_sum / broadcast. Larger buckets mean fewer
  /// collectives and a larger temporary copy. Tensors bigger than a bucket go alone, in place when
  /// contiguous. Default: 64 MiB.
  std::size_t bucket_bytes = std::size_t{64} << 20;
};

/// A data-parallel group of learner ranks.
///
/// Threading: one thread at a time (the trainer's); calls are not thread-safe. Ordering: every rank
/// must make the same sequence of collective calls with tensors of the same shapes and dtypes in
/// the same order (as with any c10d process group); a rank that skips one makes the others time
/// out. Destroying the group is not a collective.
class LearnerGroup {
 public:
  /// Joins the group: connects to the rendezvous, waits until all world_size ranks have joined,
  /// builds the backend and runs one small all-reduce so that the group is known to work.
  /// Errors: kInvalidInput `learner.bad_group_options` (rank, world size, rendezvous string);
  /// kUnavailable `learner.backend_unavailable` (Gloo or NCCL not compiled into this build);
  /// kTimeout `learner.rendezvous_timeout` (a rank did not join within `timeout`; the message
  /// names the missing ranks when the store can tell); kUnavailable `learner.rendezvous_failed`.
  static Expected<std::unique_ptr<LearnerGroup>> create(const LearnerGroupOptions& options);

  /// Whether this build can make a Gloo (CPU) / NCCL (CUDA) group.
  static bool gloo_compiled_in();
  static bool nccl_compiled_in();

  ~LearnerGroup();
  LearnerGroup(const LearnerGroup&) = delete;
  LearnerGroup& operator=(const LearnerGroup&) = delete;

  int rank() const;
  int world_size() const;

  /// Sums every tensor over the ranks, in place. Tensors: defined, on the group's device (CPU for
  /// Gloo, the CUDA device for NCCL), any shapes; several dtypes may be mixed (each dtype is
  /// reduced in its own buckets, in the order of first appearance). Tensors of one dtype are
  /// copied into flat buckets of at most bucket_bytes so that one call is a few collectives;
  /// non-contiguous tensors are fine (copied in and out).
  Status allreduce_sum(std::vector<at::Tensor>& tensors);
  /// Sums small scalars (token counts, loss sums) over the ranks, in place, in float64.
  Status allreduce_sum(std::vector<double>& values);
  /// Copies every tensor of rank `root` into the same tensors of the other ranks, in place.
  Status broadcast(std::vector<at::Tensor>& tensors, int root);
  /// Gathers equal-size shards into `full`, concatenated by rank: full (contiguous, same dtype
  /// and device as shard, full.numel() == shard.numel() * world_size) viewed as one flat array
  /// holds rank r's shard (flattened) at [r * shard.numel(), (r + 1) * shard.numel()).
  Status all_gather_into(const at::Tensor& shard, at::Tensor& full);
  /// Returns once every rank has called barrier() (a one-element all-reduce).
  Status barrier();

  /// True once a collective timed out or failed: the group must be destroyed and created again,
  /// never reused.
  bool broken() const;

  struct Impl;  // learner_group.cpp

 private:
  explicit LearnerGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
