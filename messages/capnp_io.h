// Internal to messages/: the one way codecs turn Cap'n Proto messages into bytes and back.
// Every decoder goes through read_root, so size limits, alignment, traversal limits and the
// translation of kj::Exception into an Error are done once.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "messages/common_codec.h"

namespace cuda_agent::capnp_io {

/// One flat (unpacked) message as bytes, written straight into the string (no intermediate
/// array).
inline std::string to_bytes(capnp::MessageBuilder& message) {
  std::string out(capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word), '\0');
  kj::ArrayOutputStream stream(kj::arrayPtr(reinterpret_cast<kj::byte*>(out.data()), out.size()));
  capnp::writeMessage(stream, message);
  return out;
}

inline Error malformed(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "wire.malformed", what);
}

/// Reads one flat message and applies `fn` to its root reader; `fn` returns Expected<...>.
/// ZeroMQ frames are not guaranteed 8-byte aligned, which Cap'n Proto readers need, so the bytes
/// are copied into words first. `what` names the message in errors.
template <class Root, class Fn>
auto read_root(std::string_view bytes, const DecodeLimits& limits, const char* what, Fn&& fn)
    -> decltype(fn(std::declval<typename Root::Reader>())) {
  if (bytes.size() > limits.max_bytes) {
    return make_error(ErrorCategory::kInvalidInput, "wire.too_large",
                      std::string(what) + ": " + std::to_string(bytes.size()) +
                          " bytes exceeds the limit of " + std::to_string(limits.max_bytes));
  }
  if (bytes.size() % sizeof(capnp::word) != 0 || bytes.empty()) {
    return malformed(std::string(what) + ": " + std::to_string(bytes.size()) +
                     " bytes is not a whole number of 8-byte words");
  }
  // Aligned frames are read in place; small unaligned ones are copied to the stack, the rest to
  // the heap (an allocation per decode showed in the broker's profile).
  const std::size_t n_words = bytes.size() / sizeof(capnp::word);
  const capnp::word* data = reinterpret_cast<const capnp::word*>(bytes.data());
  constexpr std::size_t kStackWords = 64;
  capnp::word stack[kStackWords];
  std::vector<capnp::word> heap;
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(capnp::word) != 0) {
    capnp::word* copy = stack;
    if (n_words > kStackWords) {
      heap.resize(n_words);
      copy = heap.data();
    }
    std::memcpy(copy, bytes.data(), bytes.size());
    data = copy;
  }
  capnp::ReaderOptions options;
  options.traversalLimitInWords =
      limits.traversal_words ? limits.traversal_words : 2 * n_words + 64;
  options.nestingLimit = 16;
  // Cap'n Proto reports malformed input by throwing kj::Exception; this is the adapter that
  // turns it into an Error.
  try {
    capnp::FlatArrayMessageReader reader(kj::ArrayPtr<const capnp::word>(data, n_words), options);
    return fn(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    return malformed(std::string(what) + ": " + e.getDescription().cStr());
  }
}

}  // namespace cuda_agent::capnp_io
