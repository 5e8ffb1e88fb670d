// LearnerGroup on CPU (Gloo): 1, 2, 3 and 4 ranks, each rank its own process.
//
// Gloo and c10d keep global state and torch starts threads, so ranks are not forked from the test
// process: each rank re-executes this binary (/proc/self/exe) with --gtest_filter naming the test
// and CA_LG_RANK set; the same TEST body then sees the variable and plays that rank. Children get
// SIGKILL when the parent dies (PR_SET_PDEATHSIG) and are collected with a deadline (pidfd +
// poll). Every tensor value is a function of (rank, index), so each rank computes the expected
// sums locally.
#include "learner/learner_group.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// This process's role: -1 in the parent, else the rank it plays.
int my_rank() {
  const char* r = std::getenv("CA_LG_RANK");
  return r ? std::atoi(r) : -1;
}
std::string env_or(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

int free_tcp_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

fs::path fresh_dir() {
  auto dir = fs::temp_directory_path() / ("learner_group_test." + std::to_string(getpid()) + "." +
                                          std::to_string(Clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  return dir;
}

// Starts this binary as `ranks` of a group and collects their exit statuses within `limit`.
class Ranks {
 public:
  Ranks(int world, std::string rendezvous, int deadline_ms, std::vector<std::string> env = {})
      : world_(world),
        rendezvous_(std::move(rendezvous)),
        deadline_ms_(deadline_ms),
        env_(std::move(env)) {}
  ~Ranks() {
    for (auto& c : children_)
      if (!c.done) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
      }
  }

  void start(int rank) {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    const std::string filter =
        std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("CA_LG_RANK=" + std::to_string(rank));
    env_strings.push_back("CA_LG_WORLD=" + std::to_string(world_));
    env_strings.push_back("CA_LG_RENDEZVOUS=" + rendezvous_);
    env_strings.push_back("CA_LG_DEADLINE_MS=" + std::to_string(deadline_ms_));
    env_strings.insert(env_strings.end(), env_.begin(), env_.end());
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", brief = "--gtest_brief=1";
    std::vector<char*> argv{exe.data(), const_cast<char*>(filter.c_str()), brief.data(), nullptr};
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {  // only async-signal-safe calls until execve
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(120);
      execve(exe.c_str(), argv.data(), envp.data());
      _exit(121);
    }
    ASSERT_GT(pid, 0);
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    children_.push_back(Child{rank, pid, pidfd, Clock::now()});
  }

  // Waits for `rank` to exit, at most `limit` in all; returns its exit code, or -signal, or
  // 999 when it had to be killed.
  int wait(int rank, milliseconds limit) {
    for (auto& c : children_) {
      if (c.rank != rank) continue;
      if (c.done) return c.code;
      int ready = 0, status = 0;
      if (c.pidfd >= 0) {
        pollfd p{c.pidfd, POLLIN, 0};
        ready = poll(&p, 1, static_cast<int>(limit.count()));
        close(c.pidfd);
      } else {  // no pidfd_open (Linux < 5.3): poll waitpid
        const auto end = Clock::now() + limit;
        while ((ready = waitpid(c.pid, &status, WNOHANG)) == 0 && Clock::now() < end)
          usleep(10'000);
      }
      if (ready <= 0) kill(c.pid, SIGKILL);
      if (c.pidfd >= 0 || ready <= 0) waitpid(c.pid, &status, 0);
      c.done = true;
      std::printf("  (rank %d of %d exited %.0f ms after its start)\n", c.rank, world_,
                  ms_since(c.started));
      c.code = ready <= 0            ? 999
               : WIFEXITED(status)   ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? -WTERMSIG(status)
                                     : 998;
      return c.code;
    }
    return 997;
  }

 private:
  struct Child {
    int rank;
    pid_t pid;
    int pidfd;
    Clock::time_point started;
    bool done = false;
    int code = 0;
  };
  int world_;
  std::string rendezvous_;
  int deadline_ms_;
  std::vector<std::string> env_;  // extra NAME=value for the ranks
  std::vector<Child> children_;
};

LearnerGroupOptions child_options() {
  LearnerGroupOptions o;
  o.rank = my_rank();
  o.world_size = std::atoi(env_or("CA_LG_WORLD", "1").c_str());
  o.rendezvous = env_or("CA_LG_RENDEZVOUS");
  o.timeout = milliseconds(std::atoi(env_or("CA_LG_DEADLINE_MS", "20000").c_str()));
  return o;
}

// Rank r's tensor i: integer-valued (exact sums) for even i, smooth non-integers for odd i;
// shapes vary, one is a transposed (strided) view, one is larger than a bucket.
at::Tensor make_tensor(int rank, int i) {
  const auto dtype = i % 3 == 0 ? at::kDouble : at::kFloat;
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 5}, {2, 3, 4}, {}, {33, 17}, {1}};
  std::vector<int64_t> shape = shapes[i % shapes.size()];
  if (i == 9) shape = {300, 100};  // 30k elements > the 16 KiB test bucket
  const int64_t n = c10::multiply_integers(shape);
  auto k = at::arange(n, at::TensorOptions().dtype(dtype));
  at::Tensor v = i % 2 == 0 ? k.mul(i + 1).add(1000 * rank - 3 * i)
                            : k.mul(0.37).add(1.3 * rank + 0.11 * i).sin();
  v = v.reshape(shape);
  if (i == 4) v = v.reshape({17, 33}).t();  // [33, 17], not contiguous
  return v;
}
constexpr int kTensors = 14;

// The collectives a healthy group of any size runs; prints timings on rank 0.
void run_collectives(LearnerGroup& g) {
  const int rank = g.rank(), world = g.world_size();
  auto timed = [&](const char* what, auto&& fn) {
    const auto t0 = Clock::now();
    Status s = fn();
    ASSERT_TRUE(s) << what << ": " << s.error().to_string();
    if (rank == 0) std::printf("  [world %d] %-18s %8.2f ms\n", world, what, ms_since(t0));
  };

  std::vector<at::Tensor> mine;
  for (int i = 0; i < kTensors; ++i) mine.push_back(make_tensor(rank, i));
  mine.push_back(at::empty({0}, at::kFloat));  // empty: skipped
  timed("allreduce_sum", [&] { return g.allreduce_sum(mine); });
  for (int i = 0; i < kTensors; ++i) {
    at::Tensor expected = make_tensor(0, i);
    for (int r = 1; r < world; ++r) expected = expected + make_tensor(r, i);
    ASSERT_EQ(mine[i].sizes(), expected.sizes()) << i;
    if (i % 2 == 0)
      EXPECT_TRUE(at::equal(mine[i], expected)) << "tensor " << i << " not bit-exact";
    else
      EXPECT_TRUE(at::allclose(mine[i], expected, 1e-6, 1e-6)) << "tensor " << i;
  }

  std::vector<double> scalars{rank + 1.0, 0.5 * rank, -2.0};
  timed("allreduce(scalars)", [&] { return g.allreduce_sum(scalars); });
  EXPECT_EQ(scalars[0], world * (world + 1) / 2.0);
  EXPECT_EQ(scalars[1], 0.25 * world * (world - 1));
  EXPECT_EQ(scalars[2], -2.0 * world);

  const int root = world - 1;
  std::vector<at::Tensor> weights;
  for (int i = 0; i < kTensors; ++i) weights.push_back(make_tensor(rank, i));
  timed("broadcast", [&] { return g.broadcast(weights, root); });
  for (int i = 0; i < kTensors; ++i)
    EXPECT_TRUE(at::equal(weights[i], make_tensor(root, i))) << "broadcast tensor " << i;

  at::Tensor shard = at::arange(15, at::kFloat).reshape({3, 5}).add(100 * rank);
  at::Tensor full = at::full({world * 15}, -1.0f);
  timed("all_gather_into", [&] { return g.all_gather_into(shard, full); });
  for (int r = 0; r < world; ++r)
    EXPECT_TRUE(at::equal(full.narrow(0, r * 15, 15), at::arange(15, at::kFloat).add(100 * r)))
        << "shard of rank " << r;

  timed("barrier", [&] { return g.barrier(); });

  // One gradient-sized call: eight 2 MiB float32 tensors, each above the test's bucket size and
  // so reduced in place, one collective each.
  std::vector<at::Tensor> grads;
  for (int i = 0; i < 8; ++i) grads.push_back(at::full({512 * 1024}, rank + 1.0f));
  const auto t0 = Clock::now();
  ASSERT_TRUE(g.allreduce_sum(grads));
  const double ms = ms_since(t0);
  if (rank == 0 && world > 1)
    std::printf("  [world %d] allreduce 16 MiB  %8.2f ms (%.0f MB/s of payload)\n", world, ms,
                16.0 * 1.048576 / (ms / 1000.0));
  for (const auto& t : grads)
    EXPECT_TRUE(at::equal(t, at::full_like(t, world * (world + 1) / 2.0)));
  EXPECT_FALSE(g.broken());
}

void child_collectives() {
  auto o = child_options();
  o.bucket_bytes = 16 << 10;  // several buckets per call
  const auto t0 = Clock::now();
  auto g = LearnerGroup::create(o);
  ASSERT_TRUE(g) << g.error().to_string();
  if (o.rank == 0)
    std::printf("  [world %d] create (%s) %8.2f ms\n", o.world_size, o.rendezvous.c_str(),
                ms_since(t0));
  run_collectives(**g);
}

void expect_all_ranks_pass(Ranks& ranks, int world, milliseconds limit) {
  for (int r = 0; r < world; ++r) EXPECT_EQ(ranks.wait(r, limit), 0) << "rank " << r;
}

TEST(LearnerGroup, WorldSizeOneIsLocal) {
  if (my_rank() >= 0) GTEST_SKIP();
  const auto t0 = Clock::now();
  auto g = LearnerGroup::create(LearnerGroupOptions{});  // no rendezvous needed
  ASSERT_TRUE(g) << g.error().to_string();
  std::printf("  [world 1] create %.3f ms\n", ms_since(t0));
  run_collectives(**g);
  at::Tensor shard = at::ones({4});
  at::Tensor strided = at::zeros({4, 2}).t();
  Status bad = (*g)->all_gather_into(shard, strided);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "learner.bad_tensor");
}

TEST(LearnerGroup, RejectsBadOptions) {
  if (my_rank() >= 0) GTEST_SKIP();
  auto bad_rank = LearnerGroup::create({.rank = 2, .world_size = 2});
  ASSERT_FALSE(bad_rank);
  EXPECT_EQ(bad_rank.error().code, "learner.bad_group_options");
  auto bad_rdv = LearnerGroup::create({.rank = 0, .world_size = 2, .rendezvous = "udp://x:1"});
  ASSERT_FALSE(bad_rdv);
  EXPECT_EQ(bad_rdv.error().code, LearnerGroup::gloo_compiled_in() ? "learner.bad_group_options"
                                                                   : "learner.backend_unavailable");
  if (!LearnerGroup::nccl_compiled_in()) {
    auto no_nccl = LearnerGroup::create(
        {.rank = 0, .world_size = 2, .rendezvous = "tcp://127.0.0.1:1", .cuda_device = 0});
    ASSERT_FALSE(no_nccl);
    EXPECT_EQ(no_nccl.error().code, "learner.backend_unavailable");
    EXPECT_NE(no_nccl.error().message.find("NCCL"), std::string::npos);
  }
}

TEST(LearnerGroup, TwoRanksOverFileStore) {
  if (my_rank() >= 0) return child_collectives();
  if (!LearnerGroup::gloo_compiled_in()) GTEST_SKIP() << "no Gloo in this build";
  const auto dir = fresh_dir();
  const auto t0 = Clock::now();
  Ranks ranks(2, "file:" + (dir / "rendezvous").string(), 20'000);
  for (int r = 0; r < 2; ++r) ranks.start(r);
  expect_all_ranks_pass(ranks, 2, milliseconds(30'000));
  std::printf("  [world 2] whole run, processes included: %.0f ms\n", ms_since(t0));
  fs::remove_all(dir);
}

TEST(LearnerGroup, FourRanksOverTcpStore) {
  if (my_rank() >= 0) return child_collectives();
  if (!LearnerGroup::gloo_compiled_in()) GTEST_SKIP() << "no Gloo in this build";
  const auto t0 = Clock::now();
  Ranks ranks(4, "tcp://127.0.0.1:" + std::to_string(free_tcp_port()), 20'000);
  for (int r = 0; r < 4; ++r) ranks.start(r);
  expect_all_ranks_pass(ranks, 4, milliseconds(40'000));
  std::printf("  [world 4] whole run, processes included: %.0f ms\n", ms_since(t0));
}

// Rank 2 of 3 joins the group but skips an all-reduce: ranks 0 and 1 must fail within deadline
// + 2 s and find their group broken. Then all three rebuild a group on a fresh rendezvous (rank 2
// goes there at once and waits in the join for the others) and it works.
TEST(LearnerGroup, MissingRankTimesOutAndTheGroupIsRebuilt) {
  constexpr int kDeadlineMs = 2000;
  if (my_rank() >= 0) {
    auto o = child_options();
    auto g = LearnerGroup::create(o);
    ASSERT_TRUE(g) << g.error().to_string();
    if (o.rank != 2) {
      std::vector<at::Tensor> t{at::ones({1000}), at::ones({10}, at::kDouble)};
      const auto t0 = Clock::now();
      Status s = (*g)->allreduce_sum(t);
      const double took = ms_since(t0);
      std::printf("  rank %d: allreduce_sum failed after %.0f ms (deadline %d ms): %s\n", o.rank,
                  took, kDeadlineMs, s ? "ok?" : s.error().to_string().c_str());
      ASSERT_FALSE(s);
      EXPECT_EQ(s.error().category, ErrorCategory::kTimeout);
      EXPECT_EQ(s.error().code, "learner.collective_timeout");
      EXPECT_NE(s.error().message.find("rank " + std::to_string(o.rank) + " of 3"),
                std::string::npos);
      EXPECT_NE(s.error().message.find("allreduce_sum"), std::string::npos);
      EXPECT_NE(s.error().message.find("2000 ms"), std::string::npos);
      EXPECT_GE(took, kDeadlineMs - 50);
      EXPECT_LE(took, kDeadlineMs + 2000);
      EXPECT_TRUE((*g)->broken());
      Status again = (*g)->barrier();
      ASSERT_FALSE(again);
      EXPECT_EQ(again.error().code, "learner.group_broken");
      g->reset();
    }
    auto o2 = o;
    o2.rendezvous = env_or("CA_LG_RENDEZVOUS2");
    o2.timeout = milliseconds(20'000);
    const auto t0 = Clock::now();
    auto g2 = LearnerGroup::create(o2);
    ASSERT_TRUE(g2) << g2.error().to_string();
    std::vector<double> one{1.0};
    ASSERT_TRUE((*g2)->allreduce_sum(one));
    EXPECT_EQ(one[0], 3.0);
    std::printf("  rank %d: rebuilt group works after %.0f ms\n", o.rank, ms_since(t0));
    return;
  }
  if (!LearnerGroup::gloo_compiled_in()) GTEST_SKIP() << "no Gloo in this build";
  const auto dir = fresh_dir();
  Ranks ranks(3, "file:" + (dir / "rendezvous").string(), kDeadlineMs,
              {"CA_LG_RENDEZVOUS2=file:" + (dir / "rendezvous2").string()});
  for (int r = 0; r < 3; ++r) ranks.start(r);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.wait(r, milliseconds(30'000)), 0) << "rank " << r;
  fs::remove_all(dir);
}

// World 3 over TCP with rank 2 never started: ranks 0 (the store's host) and 1 fail with
// learner.rendezvous_timeout naming rank 2 (rank 1 only if it started in time to reach the store).
// World 2 with rank 0 (the host) never started: rank 1 cannot reach the store and fails the same
// way.
TEST(LearnerGroup, RendezvousTimesOutWhenARankNeverJoins) {
  constexpr int kDeadlineMs = 2000;
  if (my_rank() >= 0) {
    auto o = child_options();
    const auto t0 = Clock::now();
    auto g = LearnerGroup::create(o);
    const double took = ms_since(t0);
    std::printf("  rank %d of %d: create failed after %.0f ms: %s\n", o.rank, o.world_size, took,
                g ? "ok?" : g.error().to_string().c_str());
    ASSERT_FALSE(g);
    EXPECT_EQ(g.error().category, ErrorCategory::kTimeout);
    EXPECT_EQ(g.error().code, "learner.rendezvous_timeout");
    if (o.world_size == 3 && o.rank == 0) {  // rank 1 may start too late to reach the store
      EXPECT_NE(g.error().message.find("missing ranks: 2"), std::string::npos);
    }
    EXPECT_LE(took, kDeadlineMs + 2000);
    return;
  }
  if (!LearnerGroup::gloo_compiled_in()) GTEST_SKIP() << "no Gloo in this build";
  Ranks three(3, "tcp://127.0.0.1:" + std::to_string(free_tcp_port()), kDeadlineMs);
  Ranks two(2, "tcp://127.0.0.1:" + std::to_string(free_tcp_port()), kDeadlineMs);
  three.start(0);
  three.start(1);
  two.start(1);
  EXPECT_EQ(three.wait(0, milliseconds(15'000)), 0);
  EXPECT_EQ(three.wait(1, milliseconds(15'000)), 0);
  EXPECT_EQ(two.wait(1, milliseconds(15'000)), 0);
}

}  // namespace
}  // namespace cuda_agent
