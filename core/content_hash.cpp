#include "core/content_hash.h"

#include <sodium.h>

#include <cstdio>
#include <cstdlib>

namespace cuda_agent {
namespace {

constexpr std::size_t kDigestBytes = 32;

crypto_generichash_state* state_of(std::array<unsigned char, 384>& raw) {
  static_assert(sizeof(crypto_generichash_state) <= 384, "grow ContentHasher::state_");
  return reinterpret_cast<crypto_generichash_state*>(raw.data());
}

std::string to_hex(const unsigned char* digest) {
  std::string out(kDigestBytes * 2, '0');
  sodium_bin2hex(out.data(), out.size() + 1, digest, kDigestBytes);
  return out;
}

}  // namespace

std::string content_hash(std::string_view bytes) {
  unsigned char digest[kDigestBytes];
  crypto_generichash(digest, sizeof digest, reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size(), nullptr, 0);
  return to_hex(digest);
}

ContentHasher::ContentHasher() {
  crypto_generichash_init(state_of(state_), nullptr, 0, kDigestBytes);
}

ContentHasher& ContentHasher::add(std::string_view part) {
  add(static_cast<std::uint64_t>(part.size()));
  crypto_generichash_update(state_of(state_), reinterpret_cast<const unsigned char*>(part.data()),
                            part.size());
  return *this;
}

ContentHasher& ContentHasher::add(std::uint64_t number) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(number >> (8 * i));
  crypto_generichash_update(state_of(state_), le, sizeof le);
  return *this;
}

std::string ContentHasher::hex() {
  unsigned char digest[kDigestBytes];
  crypto_generichash_final(state_of(state_), digest, sizeof digest);
  return to_hex(digest);
}

}  // namespace cuda_agent
