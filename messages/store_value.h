// Internal to messages/: the framing of run store values (docs/formats/store.md, "Values") that the
// store codecs share: the 12-byte prefix, packing (raw runs for large segments), blobs referenced
// without a copy, and the one decoder that checks a value before reading it, where a kj::Exception
// becomes an Error.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <string>
#include <string_view>

#include "core/error.h"
#include "messages/store_codec.h"

namespace cuda_agent::store_value {

/// store.corrupt_value: "<kind> value: <what>".
Error corrupt(StoreRecordKind kind, const std::string& what);

/// The prefix followed by the packed message.
std::string finish(capnp::MessageBuilder& message, StoreRecordKind kind);

/// `bytes` as a Data orphan: referenced without a copy when word-aligned and a whole number of
/// words (encoded capnp messages are), else copied. `bytes` must outlive `message`.
capnp::Orphan<capnp::Data> blob(capnp::MessageBuilder& message, const std::string& bytes);

inline capnp::Text::Reader text(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}
inline std::string str(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }
inline std::string str(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

/// Checks the prefix (magic, version, kind, plausible size) and unpacks exactly the announced
/// number of words; leftover bytes are an error.
Expected<kj::Array<capnp::word>> unpack(std::string_view bytes, StoreRecordKind kind);

/// unpack(), then hands the root of kind `Root` to `fn`. Cap'n Proto reports malformed input by
/// throwing kj::Exception; this is where it becomes an Error.
template <class Root, class Fn>
Status read_value(std::string_view bytes, StoreRecordKind kind, Fn&& fn) {
  try {
    Expected<kj::Array<capnp::word>> words = unpack(bytes, kind);
    if (!words) return words.error();
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 2 * words->size() + 64;
    options.nestingLimit = 16;
    capnp::FlatArrayMessageReader reader(words->asPtr(), options);
    if (reader.getEnd() != words->end()) return corrupt(kind, "message size mismatch");
    fn(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    return corrupt(kind, e.getDescription().cStr());
  }
  return Status::ok();
}

}  // namespace cuda_agent::store_value
