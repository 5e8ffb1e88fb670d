#include "core/content_hash.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(ContentHash, IsBlake2b256InHex) {
  // RFC 7693 has BLAKE2b-512 vectors; this is BLAKE2b-256("abc") as b2sum -l 256 prints it.
  EXPECT_EQ(content_hash("abc"),
            "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
  EXPECT_EQ(content_hash("").size(), 64u);
}

TEST(ContentHash, PartsAreFramed) {
  EXPECT_NE(ContentHasher().add("a").add("bc").hex(), ContentHasher().add("ab").add("c").hex());
  EXPECT_EQ(ContentHasher().add("x").add(std::uint64_t{7}).hex(),
            ContentHasher().add("x").add(std::uint64_t{7}).hex());
}

}  // namespace
}  // namespace cuda_agent
