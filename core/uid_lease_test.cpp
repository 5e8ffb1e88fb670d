// UidLease: distinct uids while leases are held (in one process and across processes), reuse
// after release, a clear error when the range is exhausted or the lock directory is unusable.
#include "core/uid_lease.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

namespace cuda_agent {
namespace {

std::string fresh_dir(const char* name) {
  auto d = std::filesystem::temp_directory_path() /
           (std::string("uid-lease-") + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

TEST(UidLease, HeldLeasesGiveDistinctUidsAndAReleasedOneIsReused) {
  const std::string dir = fresh_dir("held");
  auto a = UidLease::acquire(61000, 5, 8, dir);
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_EQ(a->uid(), 61005u);
  auto b = UidLease::acquire(61000, 5, 8, dir);  // same start: the next free one
  ASSERT_TRUE(b);
  EXPECT_EQ(b->uid(), 61006u);
  { UidLease gone = std::move(*a); }  // released
  auto c = UidLease::acquire(61000, 5, 8, dir);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->uid(), 61005u);
  std::filesystem::remove_all(dir);
}

TEST(UidLease, ALeaseHeldByAnotherProcessIsSkippedUntilThatProcessDies) {
  const std::string dir = fresh_dir("proc");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto l = UidLease::acquire(61000, 0, 4, dir);
    char ok = l && l->uid() == 61000u ? 1 : 0;
    (void)!::write(ready[1], &ok, 1);
    ::pause();  // holds the lease until killed
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 1);
  auto mine = UidLease::acquire(61000, 0, 4, dir);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->uid(), 61001u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto after = UidLease::acquire(61000, 0, 4, dir);  // the dead holder's lease is free
  ASSERT_TRUE(after);
  EXPECT_EQ(after->uid(), 61000u);
  ::close(ready[0]);
  ::close(ready[1]);
  std::filesystem::remove_all(dir);
}

TEST(UidLease, ExhaustedRangeAndBadLockDirAreTypedErrors) {
  const std::string dir = fresh_dir("full");
  auto a = UidLease::acquire(61000, 0, 2, dir);
  auto b = UidLease::acquire(61000, 0, 2, dir);
  ASSERT_TRUE(a && b);
  auto c = UidLease::acquire(61000, 0, 2, dir);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, "uid.exhausted");
  EXPECT_EQ(c.error().category, ErrorCategory::kUnavailable);
  const std::string file = dir + "/not-a-dir";
  std::ofstream(file) << "x";
  auto d = UidLease::acquire(61000, 0, 2, file);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, "uid.lock_dir");
  EXPECT_NE(d.error().message.find(file), std::string::npos);
  auto e = UidLease::acquire(61000, 0, 0, dir);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "uid.range");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
