// One poll per worker while the coordinator's admission is closed. A rollout worker's idle slots
// all ask the coordinator for work; while the staleness bound holds ("none now"), each of them
// asking again after the retry hint is one poll per idle slot (at 128 GPUs the control plane's
// largest load: docs/BENCHMARKS.md, "The 128-GPU control plane simulated"). Instead, the slot that
// got "none now" keeps asking for the worker, and the others wait for its answer: an assignment
// opens admission and wakes them, so they ask at once; "none now" keeps them waiting.
//
//   AdmissionTurn turn;                      // one per worker, under the worker's lock
//   if (turn.may_ask(slot)) ask();           // else wait until woken
//   if (turn.answered(slot, assigned)) wake every waiting slot;
//
// Header-only and without locking or time: the simulation's event loop (cluster/sim_roles.cpp)
// models a rollout worker's polling with it. The worker actor itself
// (rollout/rollout_worker_actor.cpp) needs no turn: it alone decides how many requests are out
// (one for the worker while admission is closed).
//
// Threading: none; the caller serialises calls (a mutex, or one event loop).
#pragma once

#include <cstdint>
#include <optional>

namespace cuda_agent {

class AdmissionTurn {
 public:
  /// Whether `slot` may ask now: admission is open, or nobody polls for the worker (then `slot`
  /// becomes the poller), or `slot` is the poller.
  bool may_ask(std::int64_t slot) {
    if (!closed_ || poller_ == slot) return true;
    if (!poller_) {
      poller_ = slot;
      return true;
    }
    return false;
  }
  /// The coordinator answered `slot`. Returns true when the slots waiting should ask now: an
  /// assignment opened admission. "None now" closes it, and `slot` polls for the worker.
  bool answered(std::int64_t slot, bool assigned) {
    if (assigned) return reopen();
    closed_ = true;
    poller_ = slot;
    return false;
  }
  /// Every slot asks for itself again (an assignment came, or the coordinator could not be
  /// reached: each slot then retries and gives up on its own deadline, as without a turn).
  /// Returns true when slots were waiting on a poller.
  bool reopen() {
    const bool was_closed = closed_;
    closed_ = false;
    poller_.reset();
    return was_closed;
  }
  /// `slot` stops asking (it stopped, or failed): another slot may take the poll over.
  bool leave(std::int64_t slot) {
    if (poller_ != slot) return false;
    poller_.reset();
    return closed_;
  }

 private:
  bool closed_ = false;
  std::optional<std::int64_t> poller_;
};

}  // namespace cuda_agent
