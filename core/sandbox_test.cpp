#include "core/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/proc_stat.h"

namespace cuda_agent {
namespace {

SandboxSpec shell(std::string script) {
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", std::move(script)};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.work_dir = std::filesystem::temp_directory_path().string();
  spec.limits.wall_ms = 10'000;
  return spec;
}

TEST(Sandbox, CapturesOutputAndExitCode) {
  auto r = run_sandboxed(shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, SandboxOutcome::kExited);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_NE(r->output.find("out\n"), std::string::npos);
  EXPECT_NE(r->output.find("err\n"), std::string::npos);
}

TEST(Sandbox, PassesStdinAndOnlyTheGivenEnvironment) {
  auto spec = shell("cat; echo \"[$HOME][$SECRET]\"");
  spec.stdin_data = std::string(200'000, 'x');  // larger than a pipe buffer
  ::setenv("SECRET", "leaked", 1);
  auto r = run_sandboxed(spec);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->output.size(), 200'000u + std::string("[][]\n").size());
  EXPECT_NE(r->output.find("[][]"), std::string::npos);
}

// The program sees its stdio (and fd 3 where given) and nothing else of this process, even
// descriptors opened here without O_CLOEXEC.
std::string open_fds_line() { return "ls /proc/self/fd | sort -n | tr '\\n' ' '"; }

TEST(Sandbox, InheritsNoDescriptorOfTheParent) {
  UniqueFd leaky(::open("/dev/null", O_RDONLY));  // no O_CLOEXEC, as a library might
  ASSERT_GE(leaky.fd, 3);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  auto r = run_sandboxed(shell(open_fds_line()));
  ASSERT_TRUE(r) << r.error().to_string();
  // 0-2, and 3 for the directory `ls` itself opens to list /proc/self/fd.
  EXPECT_EQ(r->output, "0 1 2 3 ") << "inherited descriptors";

  auto p = SandboxedProcess::start(shell(open_fds_line()), b.fd);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_GE(p->pidfd(), 0) << "no pidfd on this kernel";
  pollfd exited{.fd = p->pidfd(), .events = POLLIN, .revents = 0};
  ASSERT_EQ(::poll(&exited, 1, 10'000), 1) << "ls did not finish within 10 s";
  SandboxResult done = p->stop();
  EXPECT_EQ(done.outcome, SandboxOutcome::kExited);
  EXPECT_EQ(done.output, "0 1 2 3 4 ") << "fd 3 is the control fd, 4 is ls's directory";
}

TEST(Sandbox, KillsTheWholeGroupAtTheWallDeadline) {
  auto spec = shell("sleep 30 & sleep 30; echo never");
  spec.limits.wall_ms = 300;
  auto r = run_sandboxed(spec);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, SandboxOutcome::kWallTimeout);
  EXPECT_LT(r->wall_seconds, 5.0);
  EXPECT_EQ(r->output.find("never"), std::string::npos);
}

TEST(Sandbox, StopsAnOutputFlood) {
  auto spec = shell("yes flood");
  spec.limits.output_bytes = 1 << 20;
  auto r = run_sandboxed(spec);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, SandboxOutcome::kOutputLimit);
  EXPECT_EQ(r->output.size(), 1u << 20);
}

TEST(Sandbox, EnforcesTheCpuLimit) {
  auto spec = shell("while :; do :; done");
  spec.limits.cpu_seconds = 1;
  auto r = run_sandboxed(spec);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, SandboxOutcome::kCpuLimit) << to_string(r->outcome);
}

TEST(Sandbox, EnforcesTheFileSizeLimit) {
  auto dir =
      std::filesystem::temp_directory_path() / ("sandbox_fsize_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto spec = shell("exec head -c 3000000 /dev/zero > big");
  spec.work_dir = dir.string();
  spec.limits.file_bytes = 1 << 20;
  auto r = run_sandboxed(spec);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, SandboxOutcome::kFileLimit) << to_string(r->outcome) << r->output;
  EXPECT_LE(std::filesystem::file_size(dir / "big"), 1u << 20);
  std::filesystem::remove_all(dir);
}

TEST(Sandbox, ReportsAProgramThatCannotStart) {
  SandboxSpec spec = shell("");
  spec.argv = {"/nonexistent/program"};
  auto r = run_sandboxed(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "sandbox.spawn");
  EXPECT_NE(r.error().message.find("executing the program for '/nonexistent/program'"),
            std::string::npos)
      << r.error().message;
  spec.argv = {"relative"};
  EXPECT_FALSE(run_sandboxed(spec));
}

TEST(Sandbox, IsolatesTheNetworkWhereAllowed) {
  auto r = run_sandboxed(shell("cat /proc/net/dev | wc -l"));
  ASSERT_TRUE(r) << r.error().to_string();
  if (!r->network_isolated) GTEST_SKIP() << "this machine does not allow network namespaces";
  // Two header lines and the loopback device only.
  EXPECT_EQ(r->output, "3\n");
}

TEST(Sandbox, DropsToAnUnprivilegedUserAsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: cannot switch users";
  auto spec = shell("id -u; id -g; touch /root/sandbox_probe 2>/dev/null && echo wrote");
  spec.run_as = RunAs{61234, 61234};
  auto r = run_sandboxed(spec);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->output, "61234\n61234\n");
}

/// Processes of process group `pgid` that are not zombies (from /proc/<pid>/stat).
int live_members_of_group(pid_t pgid) {
  const auto all = all_processes();
  return static_cast<int>(std::count_if(
      all.begin(), all.end(), [&](const ProcStat& p) { return p.pgid == pgid && p.live(); }));
}

TEST(SandboxedProcess, GetsTheControlFdAsFd3AndIsKilledWithItsGroupOnStop) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd mine(sv[0]), theirs(sv[1]);
  auto spec = shell("read x <&3; echo \"got $x\"; echo ack >&3; sleep 30 & sleep 30");
  auto p = SandboxedProcess::start(spec, theirs.fd);
  ASSERT_TRUE(p) << p.error().to_string();
  theirs.reset();
  ASSERT_EQ(::write(mine.fd, "hello\n", 6), 6);
  char buf[16] = {};
  ASSERT_GT(::read(mine.fd, buf, sizeof buf - 1), 0);  // blocks until the child answers
  EXPECT_EQ(std::string(buf), "ack\n");
  EXPECT_TRUE(p->running());
  EXPECT_FALSE(p->exited());
  const pid_t group = p->pid();
  SandboxResult r = p->stop();
  EXPECT_EQ(r.outcome, SandboxOutcome::kSignalled);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_NE(r.output.find("got hello"), std::string::npos) << r.output;
  // The background sleep went with it: nothing of the group is left but, at most, a zombie
  // waiting for its new parent to reap it (SIGKILL takes effect asynchronously: bounded wait).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (live_members_of_group(group) > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(live_members_of_group(group), 0);
  EXPECT_FALSE(p->running());
}

TEST(SandboxedProcess, ReportsAFailedExec) {
  SandboxSpec spec = shell("");
  spec.argv = {"/nonexistent/program"};
  auto p = SandboxedProcess::start(spec, -1);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, "sandbox.spawn");
}

// The helper process of Sandbox.TheWholeGroupDiesWithTheProcessThatStartedIt (this binary run
// again with CA_SANDBOX_GUARD_HELPER=<file>): a sandboxed shell leaves two background sleeps in
// its group, as nvcc leaves cicc and ptxas, writes its group id to <file> and waits; the test
// SIGKILLs this process meanwhile.
TEST(SandboxGroupGuardHelper, StartsAGroupAndWaits) {
  const char* file = std::getenv("CA_SANDBOX_GUARD_HELPER");
  if (file == nullptr) GTEST_SKIP() << "only run by Sandbox.TheWholeGroupDiesWith...";
  auto spec = shell(std::string("sleep 120 & sleep 120 & echo $$ > ") + file + ".tmp && mv " +
                    file + ".tmp " + file + " && wait");
  spec.limits.wall_ms = 60'000;  // if the test never kills us
  (void)run_sandboxed(spec);
}

// Issue 27 item 5: a compile worker killed outright must not leave nvcc's children running. The
// parent-death signal only reaches the group's first process; the group guard kills the rest.
TEST(Sandbox, TheWholeGroupDiesWithTheProcessThatStartedIt) {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("ca_guard_" + std::to_string(::getpid()));
  fs::remove(file);
  // Everything exec needs is built before fork (this process may have threads).
  std::vector<std::string> env_strings = {"CA_SANDBOX_GUARD_HELPER=" + file.string()};
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=SandboxGroupGuardHelper.*";
  char* argv[] = {self.data(), filter.data(), nullptr};
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  // The helper's shell reports its group once both sleeps run (bounded wait).
  pid_t group = 0;
  const auto started_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < started_by) {
    std::ifstream in(file);
    if (in >> group && group > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(group, 0) << "the helper did not start its sandboxed group";
  // The `mv` that wrote the file may still be exiting: wait (bounded) for the three that stay.
  const auto settled_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (live_members_of_group(group) != 3 && std::chrono::steady_clock::now() < settled_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(live_members_of_group(group), 3) << "the shell and its two sleeps";

  ASSERT_EQ(::kill(helper, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (live_members_of_group(group) > 0 && std::chrono::steady_clock::now() < gone_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(live_members_of_group(group), 0)
      << "processes of the killed helper's sandboxed group outlived it by 5 s";
  ::kill(-group, SIGKILL);  // whatever the failure left behind
  fs::remove(file);
}

}  // namespace
}  // namespace cuda_agent

namespace cuda_agent {
namespace {

// A harness's result.json is read as untrusted: links, fifos, devices and hard links are refused
// without being read or blocking, a regular file is read whole.
TEST(ReadUntrustedFile, ReadsOnlyARegularFileWithOneLink) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ca_untrusted_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path secret = dir / "outside.txt";
  std::ofstream(secret) << "host secret";
  std::ofstream(dir / "result.json") << R"({"ok":true})";
  auto ok = read_untrusted_file((dir / "result.json").string());
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(*ok, R"({"ok":true})");

  fs::create_symlink(secret, dir / "link.json");
  auto link = read_untrusted_file((dir / "link.json").string());
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().code, "sandbox.not_regular_file");
  EXPECT_EQ(link.error().message.find("host secret"), std::string::npos);

  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto fifo = read_untrusted_file((dir / "fifo.json").string());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));  // did not block
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, "sandbox.not_regular_file");

  fs::create_hard_link(secret, dir / "hard.json");
  auto hard = read_untrusted_file((dir / "hard.json").string());
  ASSERT_FALSE(hard);
  EXPECT_EQ(hard.error().code, "sandbox.not_regular_file");

  auto dev = read_untrusted_file("/dev/zero");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, "sandbox.not_regular_file");

  auto missing = read_untrusted_file((dir / "none.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "sandbox.no_file");

  auto big = read_untrusted_file((dir / "result.json").string(), 4);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, "sandbox.file_too_large");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
