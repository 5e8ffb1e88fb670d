#include "core/malloc_tuning.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace cuda_agent {
namespace {

// A GLIBC_TUNABLES with a malloc setting is the operator's choice and is left alone.
TEST(MallocTuning, LeavesAnEnvironmentMallocSettingAlone) {
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576", 1);
  EXPECT_EQ(tune_malloc_for_large_messages(), MallocTuning::kLeftToEnvironment);
  ::unsetenv("GLIBC_TUNABLES");
}

// Tuned, a 1 MiB block comes from the arena instead of a fresh mmap (mallinfo2's hblks counts
// the mmapped blocks in use), so its pages stay mapped from one message to the next.
TEST(MallocTuning, AMebibyteBlockComesFromTheArena) {
  ::unsetenv("GLIBC_TUNABLES");
  ASSERT_EQ(tune_malloc_for_large_messages(), MallocTuning::kApplied);
  const std::size_t before = mallinfo2().hblks;
  char* block = static_cast<char*>(std::malloc(1 << 20));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, 1 << 20);
  EXPECT_EQ(mallinfo2().hblks, before) << "the 1 MiB block was mmapped";
  std::free(block);
  char* big = static_cast<char*>(std::malloc(48 << 20));  // above 32 MiB: still mmapped
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(mallinfo2().hblks, before + 1);
  std::free(big);
}

}  // namespace
}  // namespace cuda_agent
