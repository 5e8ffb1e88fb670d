// LocalProcesses with real children (/bin/sh): logs, restarts with a limit (all-time and per
// window), exit 0 not restarted, expected exits, the children() snapshot, argv[0] looked up on PATH
// and "cuda-agent" replaced by cuda_agent_exe, stop_all escalating to SIGKILL for a child that
// ignores SIGTERM.
#include "cluster/local_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

TEST(LocalProcesses, RestartsAreCountedPerWindowWhenOneIsSet) {
  TempDir d;
  // One restart per 300 ms window: a child failing at once uses it up and is given up on its
  // second failure; one that fails only after 400 ms finds the window empty each time.
  LocalProcesses p({.log_dir = d.path,
                    .max_restarts = 1,
                    .restart_window_ms = std::chrono::milliseconds(300),
                    .restart_backoff_ms = std::chrono::milliseconds(1)});
  ASSERT_TRUE(p.start(sh("quick", "exit 5")).is_ok());
  ASSERT_TRUE(p.start(sh("slow", "sleep 0.4; exit 6")).is_ok());
  auto events = poll_until(p, [](const auto& e) {
    return std::count_if(e.begin(), e.end(), [](const ChildEvent& x) {
             return x.kind == ChildEventKind::kRestarted && x.name == "slow";
           }) >= 3;
  });
  const auto of = [&](const std::string& name, ChildEventKind kind) {
    return std::count_if(events.begin(), events.end(),
                         [&](const ChildEvent& x) { return x.kind == kind && x.name == name; });
  };
  EXPECT_EQ(of("quick", ChildEventKind::kRestarted), 1);
  EXPECT_EQ(of("quick", ChildEventKind::kGivenUp), 1);
  EXPECT_GE(of("slow", ChildEventKind::kRestarted), 3);
  EXPECT_EQ(of("slow", ChildEventKind::kGivenUp), 0);
  const std::vector<ChildInfo> info = p.children();
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0].name, "quick");
  EXPECT_EQ(info[0].state, ChildState::kGivenUp);
  EXPECT_EQ(info[0].restarts, 1);
  EXPECT_EQ(info[0].last_exit_code, 5);
  EXPECT_EQ(info[0].pid, -1);
  EXPECT_EQ(info[1].name, "slow");
  EXPECT_GE(info[1].restarts, 3);
  EXPECT_EQ(info[1].last_exit_code, 6);
  EXPECT_NE(info[1].state, ChildState::kGivenUp);
}

TEST(LocalProcesses, ProgramsAreFoundOnPathAndCudaAgentCanBeReplaced) {
  TempDir d;
  const std::string shim = d.path + "/role-shim";
  {
    std::ofstream out(shim);
    out << "#!/bin/sh\necho \"shim got $*\"\n";
  }
  fs::permissions(shim, fs::perms::owner_all);
  LocalProcesses p({.log_dir = d.path + "/logs", .cuda_agent_exe = shim});
  ASSERT_TRUE(p.start({.role = "test", .name = "on-path", .argv = {"sh", "-c", "exit 0"}}).is_ok());
  ASSERT_TRUE(
      p.start(
           {.role = "coordinator", .name = "agent", .argv = {"cuda-agent", "serve", "coordinator"}})
          .is_ok());
  const Status missing =
      p.start({.role = "test", .name = "missing", .argv = {"no-such-program-ca", "x"}});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.error().message.find("no-such-program-ca"), std::string::npos);
  EXPECT_NE(missing.error().message.find("missing"), std::string::npos);
  const auto events =
      poll_until(p, [](const auto& e) { return count(e, ChildEventKind::kGivenUp) == 2; });
  ASSERT_EQ(count(events, ChildEventKind::kGivenUp), 2u);
  for (const ChildEvent& e : events) EXPECT_EQ(e.exit_code, 0) << e.name;
  EXPECT_NE(
      LocalProcesses::log_tail(d.path + "/logs/agent.log", 5).find("shim got serve coordinator"),
      std::string::npos);
  for (const ChildInfo& c : p.children()) EXPECT_EQ(c.state, ChildState::kFinished) << c.name;
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
  const std::vector<ChildInfo> info = p.children();
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0].state, ChildState::kStopped);
  EXPECT_EQ(info[0].last_exit_code, 128 + SIGKILL);
}

}  // namespace
}  // namespace cuda_agent
