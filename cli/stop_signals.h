// Long-lived `serve` roles run until SIGINT or SIGTERM: construct StopSignals first (before any
// thread starts, so every thread inherits the blocked mask), then wait(). A pool worker role also
// ends when its broker refuses its key: StopOnRefusal turns the refusal into a SIGTERM that
// wait() takes, and says afterwards that this was why.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <functional>
#include <mutex>

#include "core/error.h"

namespace cuda_agent::cli {

/// Blocks SIGINT and SIGTERM in this thread (and every thread started after) and waits for one.
struct StopSignals {
  sigset_t set;
  StopSignals() {
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  int wait() {
    int sig = 0;
    sigwait(&set, &sig);
    return sig;
  }
};

/// For loops that poll: SIGINT, SIGTERM and SIGHUP (what sshd sends a `-tt` session whose
/// connection dropped) blocked, their default dispositions restored first (a shell that starts
/// us in the background may ignore SIGINT, which would discard it even while blocked), and taken
/// without waiting by poll(). Construct it before any thread starts.
struct PolledStopSignals {
  sigset_t set;
  int seen = 0;  ///< the first signal taken; 0 before
  PolledStopSignals() {
    sigemptyset(&set);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      ::signal(sig, SIG_DFL);
      sigaddset(&set, sig);
    }
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  /// True once a stop signal came (now or before).
  bool poll() {
    const timespec zero{};
    const int sig = ::sigtimedwait(&set, nullptr, &zero);
    if (sig > 0 && seen == 0) seen = sig;
    return seen != 0;
  }
};

/// The exit status of a `serve` role that a restart cannot help (its key is refused): the
/// supervisor of cluster/local_processes.h gives such a child up at once (fatal_exit_code).
inline constexpr int kFinalExitCode = 3;

/// For PoolWorkerOptions::on_refusal: keeps the first refusal and sends SIGTERM to this process,
/// which StopSignals::wait() takes (it stays pending until then, so a refusal that comes before
/// the wait is not missed). Must outlive the worker it is given to.
///
/// Threading: callback() runs on the worker's thread; refusal() on any.
class StopOnRefusal {
 public:
  std::function<void(const Error&)> callback() {
    return [this](const Error& refused) {
      {
        std::lock_guard lock(mutex_);
        if (refusal_.code.empty()) refusal_ = refused;
      }
      ::kill(::getpid(), SIGTERM);
    };
  }
  /// Why the broker refused the worker; an empty code when it did not.
  Error refusal() const {
    std::lock_guard lock(mutex_);
    return refusal_;
  }

 private:
  mutable std::mutex mutex_;
  Error refusal_;
};

}  // namespace cuda_agent::cli
