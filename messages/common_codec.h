// Codecs between the common wire types (messages/common.capnp) and plain C++ types. Codecs in
// messages/ are the only code that touches capnp builders and readers.
//
// Byte buffers are std::string / std::string_view (this library is built as C++17; see
// messages/CMakeLists.txt). Decoding never trusts its input: truncated, garbage or oversized bytes
// give an Error (category invalid_input, code "wire.malformed" / "wire.too_large" /
// "wire.version"), never an exception or a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/ids.h"

namespace cuda_agent {

/// The plain form of wire::RequestHeader.
struct RequestHeader {
  std::uint16_t format_version = 0;
  RequestId request_id;
  RunId run_id;
  PolicyVersion policy_version;
  std::int64_t deadline_unix_ms = 0;
};

/// Limits applied to every decode.
struct DecodeLimits {
  /// Largest message accepted. Default: 64 MiB.
  std::size_t max_bytes = 64u << 20;
  /// Cap'n Proto traversal limit in 8-byte words (guards against amplification). Default: 2x size.
  std::uint64_t traversal_words = 0;
};

/// One flat Cap'n Proto message (unpacked framing) holding an Error.
std::string encode_error(const Error& error);
Expected<Error> decode_error(std::string_view bytes, const DecodeLimits& limits = {});

/// One flat message holding a RequestHeader; the current formatVersion is filled in on encode.
std::string encode_request_header(const RequestHeader& header);
/// Rejects a header whose format version is newer than this build understands.
Expected<RequestHeader> decode_request_header(std::string_view bytes,
                                              const DecodeLimits& limits = {});

}  // namespace cuda_agent
