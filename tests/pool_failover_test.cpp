// Work-pool failures with real ZeroMQ: workers that die or go silent mid-request, and a broker
// that restarts under connected workers. Each test names the interleaving it covers.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>

#include "tests/pool_test_util.h"

namespace cuda_agent {
namespace {

using namespace pool_test;

PoolHandler echo(std::atomic<int>* runs = nullptr) {
  return [runs](const WorkItem& item) -> Expected<std::string> {
    if (runs) ++*runs;
    return "echo:" + item.payload.str();
  };
}

// Reads one byte from `fd`, waiting at most `timeout_ms`; false on timeout or EOF.
bool read_byte(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  char c;
  return ::read(fd, &c, 1) == 1;
}

// A real PoolWorker in a child process whose handler signals the parent and then hangs, so the
// parent can SIGKILL it mid-request. Forked at the start of the test, while this process still
// has a single thread; it learns the broker endpoint through a pipe.
class WorkerChild {
 public:
  WorkerChild() {
    if (::pipe(to_child_) != 0 || ::pipe(from_child_) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) run();
    ::close(to_child_[0]);
    ::close(from_child_[1]);
  }
  ~WorkerChild() {
    kill();
    ::close(to_child_[1]);
    ::close(from_child_[0]);
  }
  void connect(const std::string& worker_endpoint) {
    std::string line = worker_endpoint + "\n";
    ASSERT_EQ(::write(to_child_[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  /// Waits until the child's handler has started.
  bool handler_started() { return read_byte(from_child_[0], 10'000); }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  [[noreturn]] void run() {
    ::close(to_child_[1]);
    ::close(from_child_[0]);
    std::string endpoint;
    char c;
    while (::read(to_child_[0], &c, 1) == 1 && c != '\n') endpoint += c;
    PoolWorkerOptions o;
    o.broker_endpoint = endpoint;
    o.worker_id = WorkerId{"doomed"};
    o.heartbeat_interval_ms = 20;
    const int out = from_child_[1];
    auto worker = PoolWorker::start(o, [out](const WorkItem&) -> Expected<std::string> {
      (void)::write(out, "s", 1);
      for (;;) ::pause();  // until SIGKILL
    });
    for (;;) ::pause();
  }
  int to_child_[2];
  int from_child_[2];
  pid_t pid_ = -1;
};

// Covers: the worker process is SIGKILLed while it runs a request. Its heartbeats stop, the
// broker re-queues the request, and it completes on the other worker; the client gets exactly one
// outcome.
TEST(PoolFailover, WorkerKilledMidRequestCompletesOnAnotherWorkerExactlyOnce) {
  quiet_logs();
  WorkerChild child;  // forked first: this process has one thread here
  auto broker = must(WorkPoolBroker::start(fast_broker()));
  child.connect(broker->worker_endpoint());
  ASSERT_TRUE(has_workers(*broker, 1));
  auto client = must(PoolClient::connect({.broker_endpoint = broker->client_endpoint()}));
  std::atomic<int> outcomes{0};
  std::promise<PoolOutcome> done;
  client->call_async(request("mid-1", "payload"), [&](PoolOutcome o) {
    if (++outcomes == 1) done.set_value(std::move(o));
  });
  ASSERT_TRUE(child.handler_started());
  std::atomic<int> runs{0};
  auto rescuer = must(PoolWorker::start(fast_worker(*broker, "rescuer"), echo(&runs)));
  ASSERT_TRUE(has_workers(*broker, 2));
  child.kill();
  auto o = done.get_future().get();
  ASSERT_TRUE(o.result) << o.result.error().to_string();
  EXPECT_EQ(*o.result, "echo:payload");
  EXPECT_EQ(o.worker_id, WorkerId{"rescuer"});
  EXPECT_EQ(o.attempts, 2u);
  EXPECT_EQ(runs.load(), 1);
  auto s = stats_of(*broker);
  EXPECT_EQ(s.requeued, 1u);
  EXPECT_EQ(s.completed, 1u);
  EXPECT_EQ(s.workers_lost, 1u);
  EXPECT_EQ(outcomes.load(), 1);
}

// Announces itself as a worker by hand and never heartbeats: it takes work and goes silent.
std::unique_ptr<RawPeer> silent_worker(WorkPoolBroker& broker, const std::string& id) {
  auto peer = std::make_unique<RawPeer>(broker.worker_endpoint());
  peer->send({encode_pool(PoolReady{WorkerId{id}, {}, 1})});
  return peer;
}

// Covers: a worker presumed dead answers after its request was re-run elsewhere. The first
// result (from the second worker) wins; the zombie's late result is dropped, so the client gets
// exactly one outcome, and the zombie is asked to re-register.
TEST(PoolFailover, ZombieResultAfterRequeueIsDropped) {
  quiet_logs();
  auto broker = must(WorkPoolBroker::start(fast_broker()));
  auto zombie = silent_worker(*broker, "zombie");
  ASSERT_TRUE(has_workers(*broker, 1));
  auto client = must(PoolClient::connect({.broker_endpoint = broker->client_endpoint()}));
  std::atomic<int> outcomes{0};
  std::promise<PoolOutcome> done;
  client->call_async(request("z-1", "p"), [&](PoolOutcome o) {
    if (++outcomes == 1) done.set_value(std::move(o));
  });
  auto work = zombie->receive_as<PoolWork>();
  ASSERT_TRUE(work);
  EXPECT_EQ(work->first.attempt, 1u);
  std::atomic<int> runs{0};
  auto rescuer = must(PoolWorker::start(fast_worker(*broker, "rescuer"), echo(&runs)));
  auto o = done.get_future().get();  // the zombie missed its heartbeats; the rescuer ran it
  ASSERT_TRUE(o.result) << o.result.error().to_string();
  EXPECT_EQ(o.worker_id, WorkerId{"rescuer"});
  EXPECT_EQ(o.attempts, 2u);
  zombie->send({encode_pool(PoolResult{RequestId{"z-1"}, std::nullopt, 6}), "zombie"});
  ASSERT_TRUE(zombie->receive_as<PoolReregister>());
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).unknown_results == 1; }));
  EXPECT_EQ(outcomes.load(), 1);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(client->late_replies(), 0u);
}

// Covers: every worker the request is given to is lost. After max_attempts deliveries the client
// gets "pool.attempts_exhausted" instead of waiting for its deadline.
TEST(PoolFailover, AttemptsAreBounded) {
  quiet_logs();
  auto options = fast_broker();
  options.max_attempts = 2;
  auto broker = must(WorkPoolBroker::start(options));
  auto client = must(PoolClient::connect({.broker_endpoint = broker->client_endpoint()}));
  std::promise<PoolOutcome> done;
  client->call_async(request("doomed", "p"), [&](PoolOutcome o) { done.set_value(std::move(o)); });
  auto first = silent_worker(*broker, "lost-1");
  ASSERT_TRUE(first->receive_as<PoolWork>());
  // The second joins once the first is dropped and the request waits again, so it cannot be
  // dropped first (its own grace would start earlier).
  ASSERT_TRUE(eventually([&] {
    auto s = stats_of(*broker);
    return s.workers_lost == 1 && s.queue_depth == 1;
  }));
  auto second = silent_worker(*broker, "lost-2");
  auto work = second->receive_as<PoolWork>();
  ASSERT_TRUE(work);
  EXPECT_EQ(work->first.attempt, 2u);
  auto o = done.get_future().get();
  ASSERT_FALSE(o.result);
  EXPECT_EQ(o.result.error().category, ErrorCategory::kUnavailable);
  EXPECT_EQ(o.result.error().code, "pool.attempts_exhausted");
  EXPECT_EQ(o.attempts, 2u);
  EXPECT_EQ(stats_of(*broker).attempts_exhausted, 1u);
}

// Covers: the broker restarts (same endpoints) while two workers are connected and one request
// is running. The workers re-register with the new broker (the blocking one still holding the
// request), new requests succeed, and the client sends the request it still waits for again,
// with its id (issue 27 item 3): the new broker waits for the holder's result (the holder's slot
// is taken by that id) and answers it; the handler ran once.
TEST(PoolFailover, BrokerRestartsWhileWorkersAreConnected) {
  quiet_logs();
  auto broker = must(WorkPoolBroker::start(fast_broker()));
  const std::string clients = broker->client_endpoint();
  const std::string workers = broker->worker_endpoint();
  Gate release;
  std::atomic<int> blocking_runs{0};
  auto blocking = must(PoolWorker::start(fast_worker(*broker, "w-block", {"block"}),
                                         [&](const WorkItem& item) -> Expected<std::string> {
                                           ++blocking_runs;
                                           release.wait();
                                           return item.payload.str();
                                         }));
  // "before" and "after" are for the plain worker only: untagged, either could go to the blocking
  // one, which would hold it until the gate opens (and count it as a second run of "lost").
  auto plain = must(PoolWorker::start(fast_worker(*broker, "w-plain", {"plain"}), echo()));
  ASSERT_TRUE(has_workers(*broker, 2));
  std::promise<PoolOutcome> lost;  // outlives the client
  auto client = must(PoolClient::connect({.broker_endpoint = clients}));
  ASSERT_TRUE(client->call(request("before", "x", {"plain"})));
  client->call_async(request("lost", "x", {"block"}, 20'000),
                     [&](PoolOutcome o) { lost.set_value(std::move(o)); });
  ASSERT_TRUE(eventually([&] { return stats_of(*broker).in_flight == 1; }));

  broker.reset();
  auto options = fast_broker();
  options.client_endpoint = clients;
  options.worker_endpoint = workers;
  broker = must(WorkPoolBroker::start(options));
  ASSERT_TRUE(has_workers(*broker, 2));
  // The broker may register the READY before the worker thread counts it: wait for the count.
  EXPECT_TRUE(eventually([&] { return plain->announcements() >= 2; }));
  auto after = client->call(request("after", "y", {"plain"}));
  ASSERT_TRUE(after) << after.error().to_string();
  EXPECT_EQ(*after, "echo:y");

  release.open();
  auto answer = lost.get_future();
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(15)), std::future_status::ready);
  auto o = answer.get();
  ASSERT_TRUE(o.result) << o.result.error().to_string();
  EXPECT_EQ(*o.result, "x");
  EXPECT_EQ(o.worker_id, WorkerId{"w-block"});
  EXPECT_EQ(blocking_runs.load(), 1);
  EXPECT_EQ(stats_of(*broker).unknown_results, 0u);
}

}  // namespace
}  // namespace cuda_agent
