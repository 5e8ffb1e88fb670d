#include "messages/common_codec.h"

#include "messages/capnp_io.h"
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

}  // namespace

std::string encode_error(const Error& error) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Error>();
  root.setCategory(to_wire(error.category));
  root.setCode(error.code);
  root.setMessage(error.message);
  return capnp_io::to_bytes(message);
}

Expected<Error> decode_error(std::string_view bytes, const DecodeLimits& limits) {
  return capnp_io::read_root<wire::Error>(
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
  return capnp_io::to_bytes(message);
}

Expected<RequestHeader> decode_request_header(std::string_view bytes, const DecodeLimits& limits) {
  return capnp_io::read_root<wire::RequestHeader>(
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
