// LocalProcesses with real children (/bin/sh): logs, restarts with a limit, exit 0 not restarted,
// expected exits, stop_all escalating to SIGKILL for a child that ignores SIGTERM.
#include "cluster/local_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path =
      (fs::temp_directory_path() / ("ca_local_" + std::to_string(::getpid()))).string();
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

ProcessSpec sh(const std::string& name, const std::string& script) {
  return ProcessSpec{.role = "test",
                     .name = name,
                     .argv = {"/bin/sh", "-c", script},
                     .env = {{"CA_TEST_VAR", "hello"}}};
}

// Polls until `pred(events so far)` or 10 s.
std::vector<ChildEvent> poll_until(
    LocalProcesses& p, const std::function<bool(const std::vector<ChildEvent>&)>& pred) {
  std::vector<ChildEvent> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred(all) && std::chrono::steady_clock::now() < deadline) {
    for (ChildEvent& e : p.poll()) all.push_back(std::move(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return all;
}

std::size_t count(const std::vector<ChildEvent>& events, ChildEventKind kind) {
  return std::count_if(events.begin(), events.end(),
                       [&](const ChildEvent& e) { return e.kind == kind; });
}

TEST(LocalProcesses, FailingChildIsRestartedUntilItsLimitAndLogsAppend) {
  TempDir d;
  LocalProcesses p(
      {.log_dir = d.path, .max_restarts = 2, .restart_backoff_ms = std::chrono::milliseconds(1)});
  ASSERT_TRUE(p.start(sh("fail", "echo run $CA_TEST_VAR; exit 4")).is_ok());
  auto events =
      poll_until(p, [](const auto& e) { return count(e, ChildEventKind::kGivenUp) == 1; });
  EXPECT_EQ(count(events, ChildEventKind::kExited), 3u);
  EXPECT_EQ(count(events, ChildEventKind::kRestarted), 2u);
  ASSERT_EQ(count(events, ChildEventKind::kGivenUp), 1u);
  EXPECT_EQ(events.back().exit_code, 4);
  EXPECT_FALSE(events.back().expected);
  const std::string tail = LocalProcesses::log_tail(d.path + "/fail.log", 100);
  EXPECT_NE(tail.find("run hello"), std::string::npos);
  EXPECT_EQ(std::count(tail.begin(), tail.end(), '\n'), 6);  // 3 banners + 3 lines
  EXPECT_FALSE(p.start(sh("fail", "true")).is_ok());         // names are unique
}

TEST(LocalProcesses, FatalExitCodeIsGivenUpWithoutARestart) {
  TempDir d;
  LocalProcesses p({.log_dir = d.path, .restart_backoff_ms = std::chrono::milliseconds(1)});
  ASSERT_TRUE(p.start(sh("fatal", "exit 3")).is_ok());
  auto events =
      poll_until(p, [](const auto& e) { return count(e, ChildEventKind::kGivenUp) == 1; });
  EXPECT_EQ(count(events, ChildEventKind::kRestarted), 0u);
  ASSERT_EQ(count(events, ChildEventKind::kGivenUp), 1u);
  EXPECT_EQ(events.back().exit_code, 3);
  EXPECT_FALSE(events.back().expected);
}

TEST(LocalProcesses, ExitZeroIsDoneAndKilledChildIsRestarted) {
  TempDir d;
  LocalProcesses p({.log_dir = d.path, .restart_backoff_ms = std::chrono::milliseconds(1)});
  ASSERT_TRUE(p.start(sh("done", "exit 0")).is_ok());
  ASSERT_TRUE(p.start(sh("sleeper", "sleep 30")).is_ok());
  auto events =
      poll_until(p, [](const auto& e) { return count(e, ChildEventKind::kGivenUp) == 1; });
  ASSERT_EQ(count(events, ChildEventKind::kGivenUp), 1u);
  EXPECT_TRUE(events.back().expected);
  EXPECT_EQ(events.back().name, "done");
  const pid_t first = p.pid("sleeper");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(p.kill("sleeper", SIGKILL));
  events = poll_until(p, [](const auto& e) { return count(e, ChildEventKind::kRestarted) == 1; });
  ASSERT_EQ(count(events, ChildEventKind::kRestarted), 1u);
  EXPECT_EQ(events.front().exit_code, 128 + SIGKILL);
  EXPECT_GT(p.pid("sleeper"), 0);
  EXPECT_NE(p.pid("sleeper"), first);
  p.expect_exit("sleeper");
  ASSERT_TRUE(p.kill("sleeper", SIGTERM));
  events = poll_until(p, [](const auto& e) { return count(e, ChildEventKind::kGivenUp) == 1; });
  EXPECT_EQ(count(events, ChildEventKind::kGivenUp), 1u);
  EXPECT_TRUE(p.running().empty());
}

TEST(LocalProcesses, StopAllKillsAChildThatIgnoresSigterm) {
  TempDir d;
  LocalProcesses p({.log_dir = d.path, .stop_grace_ms = std::chrono::milliseconds(300)});
  ASSERT_TRUE(
      p.start(sh("stubborn", "trap '' TERM; echo ready; while true; do sleep 1; done")).is_ok());
  poll_until(p, [&](const auto&) {
    return LocalProcesses::log_tail(d.path + "/stubborn.log", 5).find("ready") != std::string::npos;
  });
  const auto t0 = std::chrono::steady_clock::now();
  p.stop_all();
  EXPECT_TRUE(p.running().empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

}  // namespace
}  // namespace cuda_agent
