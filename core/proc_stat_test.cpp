#include "core/proc_stat.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace cuda_agent {
namespace {

TEST(ProcStat, ParsesACommandWithSpacesAndParentheses) {
  const std::string text =
      "4242 (a (b) c) S 17 4242 4242 0 -1 4194304 10 0 0 0 250 50 -3 0 20 0 1 0 987654 0 0\n";
  const auto p = parse_proc_stat(4242, text);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->comm, "a (b) c");
  EXPECT_EQ(p->state, 'S');
  EXPECT_EQ(p->ppid, 17);
  EXPECT_EQ(p->pgid, 4242);
  EXPECT_EQ(p->utime, 250u);
  EXPECT_EQ(p->stime, 50u);
  EXPECT_EQ(p->start, 987654u);
  EXPECT_TRUE(p->live());
}

TEST(ProcStat, RefusesTruncatedText) {
  EXPECT_FALSE(parse_proc_stat(1, ""));
  EXPECT_FALSE(parse_proc_stat(1, "1 (init"));
  EXPECT_FALSE(parse_proc_stat(1, "1 (init) S 0 1 1 0 -1"));  // no CPU times nor start time
}

TEST(ProcStat, ReadsItselfAndTellsAReapedChildIsGone) {
  const auto self = read_proc_stat(::getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(self->ppid, ::getppid());
  EXPECT_TRUE(self->live());
  EXPECT_GE(self->cpu_seconds(), 0.0);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_TRUE(read_proc_stat(child));
  const auto all = all_processes();
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const ProcStat& p) {
    return p.pid == child && p.ppid == ::getpid();
  }));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(read_proc_stat(child));  // not a throw: the process is gone
  EXPECT_FALSE(read_proc_stat(0));
}

}  // namespace
}  // namespace cuda_agent
