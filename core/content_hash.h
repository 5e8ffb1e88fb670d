// Content hashes: BLAKE2b-256 (libsodium's crypto_generichash) as 64 lower-case hex digits. Used
// wherever something is content-addressed: compile-farm artifacts and object cache keys, task
// ids. Not a password hash; collisions are what it guards against.
//
//   std::string h = content_hash("bytes");
//   ContentHasher hasher;                    // several parts; each part is length-prefixed, so
//   hasher.add("a").add("bc");               // ("a","bc") and ("ab","c") hash differently
//   std::string key = hasher.hex();
//
// Threading: a ContentHasher belongs to one thread; content_hash() is safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace cuda_agent {

/// BLAKE2b-256 of `bytes` as 64 lower-case hex digits.
std::string content_hash(std::string_view bytes);

/// Hashes a sequence of parts, each framed by its length.
class ContentHasher {
 public:
  ContentHasher();
  ContentHasher& add(std::string_view part);
  ContentHasher& add(std::uint64_t number);
  /// The digest as hex. The hasher must not be used afterwards.
  std::string hex();

 private:
  alignas(64) std::array<unsigned char, 384> state_;  // crypto_generichash_state
};

}  // namespace cuda_agent
