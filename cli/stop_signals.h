// Long-lived `serve` roles run until SIGINT or SIGTERM: construct StopSignals first (before any
// thread starts, so every thread inherits the blocked mask), then wait().
#pragma once

#include <signal.h>

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

}  // namespace cuda_agent::cli
