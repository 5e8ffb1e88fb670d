#include "messages/common_codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <vector>

#include "messages/common.capnp.h"

namespace cuda_agent {
namespace {

wire::ErrorCategory to_wire(ErrorCategory c) {
  switch (c) {
    case ErrorCategory::kInvalidInput: return wire::ErrorCategory::INVALID_INPUT;
    case ErrorCategory::kNotFound: return wire::ErrorCategory::NOT_FOUND;
    case ErrorCategory::kIo: return wire::ErrorCategory::IO;
    case ErrorCategory::kTimeout: return wire::ErrorCategory::TIMEOUT;
    case ErrorCategory::kUnavailable: return wire::ErrorCategory::UNAVAILABLE;
    case ErrorCategory::kPolicy: return wire::ErrorCategory::POLICY;
    case ErrorCategory::kInternal: return wire::ErrorCategory::INTERNAL;
  }
  return wire::ErrorCategory::INTERNAL;
}

ErrorCategory from_wire(wire::ErrorCategory c) {
  switch (c) {
    case wire::ErrorCategory::INVALID_INPUT: return ErrorCategory::kInvalidInput;
    case wire::ErrorCategory::NOT_FOUND: return ErrorCategory::kNotFound;
    case wire::ErrorCategory::IO: return ErrorCategory::kIo;
    case wire::ErrorCategory::TIMEOUT: return ErrorCategory::kTimeout;
    case wire::ErrorCategory::UNAVAILABLE: return ErrorCategory::kUnavailable;
    case wire::ErrorCategory::POLICY: return ErrorCategory::kPolicy;
    case wire::ErrorCategory::INTERNAL: return ErrorCategory::kInternal;
  }
  return ErrorCategory::kInternal;  // an enumerant added by a newer peer
}

std::string to_bytes(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

Error malformed(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "wire.malformed", what);
}

// Reads one flat message and applies `fn` to its root reader. ZeroMQ frames are not guaranteed
// 8-byte aligned, which Cap'n Proto readers need, so the bytes are copied into words first.
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
  std::vector<capnp::word> words(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.data(), bytes.data(), bytes.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords =
      limits.traversal_words ? limits.traversal_words : 2 * words.size() + 64;
  options.nestingLimit = 16;
  // Cap'n Proto reports malformed input by throwing kj::Exception; this is the adapter that
  // turns it into an Error.
  try {
    capnp::FlatArrayMessageReader reader(
        kj::ArrayPtr<const capnp::word>(words.data(), words.size()), options);
    return fn(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    return malformed(std::string(what) + ": " + e.getDescription().cStr());
  }
}

}  // namespace

std::string encode_error(const Error& error) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Error>();
  root.setCategory(to_wire(error.category));
  root.setCode(error.code);
  root.setMessage(error.message);
  return to_bytes(message);
}

Expected<Error> decode_error(std::string_view bytes, const DecodeLimits& limits) {
  return read_root<wire::Error>(
      bytes, limits, "Error", [](wire::Error::Reader r) -> Expected<Error> {
        return Expected<Error>(std::in_place, Error{from_wire(r.getCategory()), r.getCode().cStr(),
                                                    r.getMessage().cStr()});
      });
}

std::string encode_request_header(const RequestHeader& header) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::RequestHeader>();
  root.setFormatVersion(wire::FORMAT_VERSION);
  root.setRequestId(header.request_id.value());
  root.setRunId(header.run_id.value());
  root.setPolicyVersion(header.policy_version.value());
  root.setDeadlineUnixMs(header.deadline_unix_ms);
  return to_bytes(message);
}

Expected<RequestHeader> decode_request_header(std::string_view bytes, const DecodeLimits& limits) {
  return read_root<wire::RequestHeader>(
      bytes, limits, "RequestHeader", [](wire::RequestHeader::Reader r) -> Expected<RequestHeader> {
        if (r.getFormatVersion() > wire::FORMAT_VERSION) {
          return make_error(
              ErrorCategory::kInvalidInput, "wire.version",
              "RequestHeader: format version " + std::to_string(r.getFormatVersion()) +
                  " is newer than this build's " + std::to_string(wire::FORMAT_VERSION));
        }
        RequestHeader h;
        h.format_version = r.getFormatVersion();
        h.request_id = RequestId{r.getRequestId().cStr()};
        h.run_id = RunId{r.getRunId().cStr()};
        h.policy_version = PolicyVersion{r.getPolicyVersion()};
        h.deadline_unix_ms = r.getDeadlineUnixMs();
        return h;
      });
}

}  // namespace cuda_agent
