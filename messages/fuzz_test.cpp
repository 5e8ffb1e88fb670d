// Property tests of every decoder in messages/ against bad input (issue 3, "Bad input"): truncated
// frames, the wrong message type, a newer format version, oversized and garbage bytes each give a
// value or a typed Error of category invalid_input; no decoder crashes or throws.
//
// The random test prints its seed; CUDA_AGENT_TEST_SEED=<seed> replays it exactly, and
// CUDA_AGENT_FUZZ_FRAMES=<n> runs more (or fewer) frames than the default 100,000.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::Decoder;
using wire_samples::Frame;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Words that make Cap'n Proto readers work: pointers with huge offsets, sizes and counts, far and
// capability pointers, all ones, and a few plausible segment tables.
std::uint64_t interesting_word(std::mt19937_64& rng) {
  switch (rng() % 10) {
    case 0: return 0;
    case 1: return ~0ull;
    case 2: return 0x7fffffffffffffffull;
    case 3: return (rng() & 0xfffffffc00000000ull) | ((rng() % 64) << 2);  // near struct pointer
    case 4: return ((rng() % (1ull << 29)) << 35) | ((rng() % 8) << 32) | ((rng() % 64) << 2) | 1;
    case 5: return (rng() & 0xffffffff00000000ull) | ((rng() % 1024) << 3) | 2;  // far pointer
    case 6: return (rng() & 0xffffffff00000000ull) | 3;                          // capability
    case 7: return (rng() % 4) | ((rng() % 4096) << 32);         // segment table: count, first size
    case 8: return static_cast<std::uint64_t>(rng() % 5) << 16;  // a format version in a word
    default: return rng();
  }
}

void put_word(std::string& f, std::size_t at, std::uint64_t w) {
  for (int b = 0; b < 8 && at + b < f.size(); ++b) f[at + b] = static_cast<char>(w >> (8 * b));
}

// One mutation of `f`; `frames` supplies material for splices between message types.
void mutate_once(std::string& f, const std::vector<Frame>& frames, std::mt19937_64& rng) {
  const std::string& other = frames[rng() % frames.size()].bytes;
  const auto pos = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  const auto aligned = [&] { return rng() % 5 != 0; };  // most edits keep whole 8-byte words
  switch (rng() % 10) {
    case 0:  // set a byte
      if (!f.empty()) f[pos(f.size())] = static_cast<char>(rng());
      break;
    case 1:  // flip a bit
      if (!f.empty()) f[pos(f.size())] ^= static_cast<char>(1u << (rng() % 8));
      break;
    case 2: {  // truncate
      std::size_t n = pos(f.size() + 1);
      f.resize(aligned() ? n / 8 * 8 : n);
      break;
    }
    case 3: {  // insert random bytes
      const std::size_t n = aligned() ? 8 * (1 + rng() % 4) : 1 + rng() % 15;
      std::string junk(n, '\0');
      for (auto& c : junk) c = static_cast<char>(rng());
      f.insert(aligned() ? pos(f.size() / 8 + 1) * 8 : pos(f.size() + 1), junk);
      break;
    }
    case 4: {  // erase a range
      if (f.empty()) break;
      const std::size_t at = aligned() ? pos(f.size() / 8) * 8 : pos(f.size());
      f.erase(at, aligned() ? 8 * (1 + rng() % 4) : 1 + rng() % 15);
      break;
    }
    case 5: {  // splice: a prefix of this frame, the rest of another type's frame
      const std::size_t cut = pos(std::min(f.size(), other.size()) / 8 + 1) * 8;
      f = f.substr(0, cut) + other.substr(std::min(cut, other.size()));
      break;
    }
    case 6:  // an interesting word at an aligned place
      if (f.size() >= 8) put_word(f, pos(f.size() / 8) * 8, interesting_word(rng));
      break;
    case 7: {  // another type's word at the same place
      const std::size_t at = pos(std::min(f.size(), other.size()) / 8) * 8;
      if (at + 8 <= f.size() && at + 8 <= other.size()) f.replace(at, 8, other, at, 8);
      break;
    }
    case 8: {  // repeat a chunk
      if (f.size() < 8) break;
      const std::size_t at = pos(f.size() / 8) * 8;
      f.insert(at, f.substr(at, 8 * (1 + rng() % 4)));
      break;
    }
    case 9: {  // garbage behind a plausible segment table
      std::string g(8 * (1 + rng() % 64), '\0');
      for (auto& c : g) c = static_cast<char>(rng());
      put_word(g, 0, interesting_word(rng) & 0x0000ffff00000003ull);
      if (rng() % 2) put_word(g, 0, static_cast<std::uint64_t>(g.size() / 8 - 1) << 32);
      f = std::move(g);
      break;
    }
  }
}

TEST(WireFuzz, EveryFrameIsRejectedByTheOtherProtocolsDecoders) {
  const std::vector<Decoder> decoders = wire_samples::all_decoders();
  for (const Frame& frame : wire_samples::sample_frames()) {
    for (const Decoder& d : decoders) {
      const Status s = d.decode(frame.bytes);
      if (d.name == frame.type) {
        EXPECT_TRUE(s) << frame.type << ": " << s.error().to_string();
      } else if (d.name != "Error" && d.name != "RequestHeader") {
        // Error and RequestHeader predate schema ids: they read any struct, as common_codec.h says.
        ASSERT_FALSE(s) << d.name << " accepted a " << frame.type;
        EXPECT_EQ(s.error().code, "wire.wrong_type") << d.name << " on a " << frame.type;
      }
    }
  }
}

// Property: any mutation of a valid frame, fed to every decoder, decodes to a value or to an Error
// of category invalid_input with a "wire." code; never a crash or an exception.
TEST(WireFuzz, MutatedFramesGiveAValueOrATypedError) {
  const std::uint64_t seed = env_or("CUDA_AGENT_TEST_SEED", std::random_device{}());
  const std::uint64_t frame_count = env_or("CUDA_AGENT_FUZZ_FRAMES", 100'000);
  std::printf("WireFuzz seed=%llu (replay: CUDA_AGENT_TEST_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);  // visible even if a decoder crashes the process
  std::mt19937_64 rng(seed);
  const std::vector<Decoder> decoders = wire_samples::all_decoders();
  const std::vector<Frame> frames = wire_samples::sample_frames();
  std::vector<std::uint64_t> accepted(decoders.size()), rejected(decoders.size());
  std::map<std::string, std::uint64_t> codes;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < frame_count; ++i) {
    std::string f = frames[rng() % frames.size()].bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) mutate_once(f, frames, rng);
    for (std::size_t d = 0; d < decoders.size(); ++d) {
      Status s;
      try {
        s = decoders[d].decode(f);
      } catch (...) {
        ADD_FAILURE() << decoders[d].name << " threw on frame " << i << " (seed " << seed << ")";
        continue;
      }
      if (s) {
        ++accepted[d];
        continue;
      }
      ++rejected[d];
      ++codes[s.error().code];
      if (s.error().category != ErrorCategory::kInvalidInput ||
          s.error().code.rfind("wire.", 0) != 0) {
        ADD_FAILURE() << decoders[d].name << " on frame " << i << " (seed " << seed
                      << "): " << s.error().to_string();
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("WireFuzz: %llu frames x %zu decoders in %.2f s\n",
              static_cast<unsigned long long>(frame_count), decoders.size(), seconds);
  for (std::size_t d = 0; d < decoders.size(); ++d) {
    std::printf("  %-20s accepted %8llu  rejected %8llu\n", decoders[d].name.c_str(),
                static_cast<unsigned long long>(accepted[d]),
                static_cast<unsigned long long>(rejected[d]));
    if (frame_count >= 10'000) {
      // The mutations reached both sides of every decoder.
      EXPECT_GT(accepted[d], 0u) << decoders[d].name;
      EXPECT_GT(rejected[d], 0u) << decoders[d].name;
    }
  }
  for (const auto& [code, n] : codes) {
    std::printf("  %-20s %llu\n", code.c_str(), static_cast<unsigned long long>(n));
  }
}

}  // namespace
}  // namespace cuda_agent
