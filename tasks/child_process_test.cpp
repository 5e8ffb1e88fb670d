// The line-protocol child: answers arrive, deadlines kill a stalled child, a missing program is
// an error, and a child that dies early neither hangs nor kills the caller.
#include "tasks/child_process.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

namespace cuda_agent {
namespace {

ChildSpec sh(const std::string& script) {
  return ChildSpec{.argv = {"/bin/sh", "-c", script},
                   .first_line_timeout_ms = 5000,
                   .next_line_timeout_ms = 5000};
}

TEST(ChildProcess, DeliversEveryLineOfALargeExchange) {
  std::string input;
  for (int i = 0; i < 20000; ++i) input += "line " + std::to_string(i) + "\n";  // > pipe buffer
  std::vector<std::string> lines;
  auto run = run_line_child(sh("cat"), input, [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_TRUE(run) << run.error().to_string();
  EXPECT_FALSE(run->timed_out);
  EXPECT_EQ(run->exit_code, 0);
  ASSERT_EQ(lines.size(), 20000u);
  EXPECT_EQ(lines.back(), "line 19999");
}

TEST(ChildProcess, KillsAChildThatStallsPastTheLineDeadline) {
  ChildSpec spec = sh("echo one; exec sleep 30");
  spec.next_line_timeout_ms = 200;
  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  auto run = run_line_child(spec, "", [&](std::string_view l) { lines.emplace_back(l); });
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(run);
  EXPECT_TRUE(run->timed_out);
  EXPECT_EQ(run->signal, SIGKILL);
  EXPECT_EQ(lines, std::vector<std::string>{"one"});
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_NE(run->describe().find("timed out after 200 ms waiting for answer 2"), std::string::npos)
      << run->describe();
}

TEST(ChildProcess, ReportsAnEarlyExitWithItsStderrAndSurvivesTheBrokenPipe) {
  std::string input(1 << 20, 'x');  // the child never reads it: writing hits EPIPE
  auto run = run_line_child(sh("echo broken >&2; exit 3"), input, [](std::string_view) {});
  ASSERT_TRUE(run);
  EXPECT_FALSE(run->timed_out);
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_EQ(run->describe(), "exited with 3; stderr: broken");
}

TEST(ChildProcess, AppliesTheMemoryLimit) {
  ChildSpec spec = sh("exec python3 -c 'x = bytearray(1 << 30)'");
  spec.limits.address_space_bytes = 256ll << 20;
  auto run = run_line_child(spec, "", [](std::string_view) {});
  ASSERT_TRUE(run);
  EXPECT_NE(run->exit_code, 0);
  EXPECT_NE(run->stderr_tail.find("MemoryError"), std::string::npos) << run->stderr_tail;
}

TEST(ChildProcess, AMissingProgramIsAnErrorNamingIt) {
  auto run = run_line_child({.argv = {"/nonexistent/python9"}}, "x\n", [](std::string_view) {});
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, "task.child_start");
  EXPECT_NE(run.error().message.find("/nonexistent/python9"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent
