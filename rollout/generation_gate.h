// What every rollout loop (rollout/rollout_worker.h over the run store,
// rollout/coordinated_rollout.h over the coordinator) puts between its episodes and the policy:
// a bound on policy calls in flight across the episodes, and the cut of an episode at its next
// policy call once the worker is stopping.
//
//   GenerationGate gate(generation_slots);
//   GatedPolicy gated(*spec.policy, gate, &stop);
//   spec.policy = &gated;
//   Episode e = run_episode(spec);
//   if (gated.cut()) ...  // stopped in flight: the episode is not a result
//
// Threading: GenerationGate is shared by a worker's episode threads; a GatedPolicy belongs to one
// episode's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <semaphore>
#include <string>

#include "rollout/policy.h"

namespace cuda_agent {

/// Bounds policy calls across a worker's episodes; counts how many ran at once.
class GenerationGate {
 public:
  explicit GenerationGate(std::int64_t slots) : slots_(static_cast<std::ptrdiff_t>(slots)) {}
  /// Takes a slot, waiting until `deadline_unix_ms` at most (0: a day). False when none came.
  bool acquire_until(std::int64_t deadline_unix_ms);
  void release();
  /// Policy calls seen running at once.
  std::int64_t max_running() const { return max_running_.load(); }

 private:
  std::counting_semaphore<> slots_;
  std::atomic<std::int64_t> running_{0};
  std::atomic<std::int64_t> max_running_{0};
};

/// An episode's policy behind the worker's generation gate: a slot is held only during next(),
/// so an episode waiting on a compile or a benchmark costs no generation slot. Once `*stop` is
/// true, next() refuses (kUnavailable "rollout.stopped"): the episode ends there as aborted.
class GatedPolicy final : public PolicyBackend {
 public:
  GatedPolicy(PolicyBackend& inner, GenerationGate& gate, const std::atomic<bool>* stop)
      : inner_(inner), gate_(gate), stop_(stop) {}
  Expected<PolicyTurn> next(const PolicyRequest& request) override;
  std::string describe() const override { return inner_.describe(); }
  /// True once next() refused because of the stop: the episode was cut, not finished.
  bool cut() const { return cut_; }

 private:
  bool stopped() const { return stop_ && stop_->load(); }
  Error stopped_error();

  PolicyBackend& inner_;
  GenerationGate& gate_;
  const std::atomic<bool>* stop_;
  bool cut_ = false;  // one episode's thread only
};

}  // namespace cuda_agent
