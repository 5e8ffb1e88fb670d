// Helper of tests/pool_broker_restart_test.cpp (built for the tests only): a WorkPoolBroker in a
// process of its own, so the test can SIGKILL it (and SIGSTOP it) and start another on the same
// endpoints.
//
//   pool_broker_child CLIENT_ENDPOINT WORKER_ENDPOINT [HEARTBEAT_TIMEOUT_MS]
//
// Binds both endpoints (port 0 picks one), prints "ready CLIENT WORKER" with the endpoints bound,
// and serves until SIGTERM or SIGINT (exit 0) or until its parent dies (it gets SIGKILL then, so
// no broker outlives a crashed test). Exit 2 when it cannot start. Workers count as lost after
// HEARTBEAT_TIMEOUT_MS of silence (default 250, for the fast workers of tests/pool_test_util.h).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "actors/work_pool_broker.h"
#include "core/log.h"

int main(int argc, char** argv) {
  using namespace cuda_agent;
  if (argc != 3 && argc != 4) {
    std::fprintf(
        stderr,
        "usage: pool_broker_child CLIENT_ENDPOINT WORKER_ENDPOINT [HEARTBEAT_TIMEOUT_MS]\n");
    return 2;
  }
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 2;  // the parent died before the line above
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the broker's threads start
  (void)setup_logging({.level = "warn"});

  WorkPoolBrokerOptions o;
  o.client_endpoint = argv[1];
  o.worker_endpoint = argv[2];
  o.heartbeat_timeout_ms = argc == 4 ? std::atoll(argv[3]) : 250;
  o.first_heartbeat_grace_ms = o.heartbeat_timeout_ms;
  o.housekeeping_interval_ms = 5;
  auto broker = WorkPoolBroker::start(o);
  if (!broker) {
    std::fprintf(stderr, "pool_broker_child: %s\n", broker.error().to_string().c_str());
    return 2;
  }
  const std::string line =
      "ready " + (*broker)->client_endpoint() + " " + (*broker)->worker_endpoint() + "\n";
  if (::write(STDOUT_FILENO, line.data(), line.size()) < 0) return 2;
  int sig = 0;
  sigwait(&stop, &sig);
  (*broker)->stop();
  return 0;
}
