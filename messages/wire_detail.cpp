#include "messages/wire_detail.h"

#include <cstdio>

namespace cuda_agent::wire_detail {

void set_texts(capnp::List<capnp::Text>::Builder out, const std::vector<std::string>& in) {
  for (unsigned i = 0; i < out.size(); ++i) out.set(i, text(in[i]));
}

std::vector<std::string> get_texts(capnp::List<capnp::Text>::Reader in) {
  std::vector<std::string> out;
  out.reserve(in.size());
  for (auto t : in) out.push_back(str(t));
  return out;
}

wire::ErrorCategory category_to_wire(ErrorCategory c) {
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

ErrorCategory category_from_wire(wire::ErrorCategory c) {
  switch (c) {
    case wire::ErrorCategory::INVALID_INPUT: return ErrorCategory::kInvalidInput;
    case wire::ErrorCategory::NOT_FOUND: return ErrorCategory::kNotFound;
    case wire::ErrorCategory::IO: return ErrorCategory::kIo;
    case wire::ErrorCategory::TIMEOUT: return ErrorCategory::kTimeout;
    case wire::ErrorCategory::UNAVAILABLE: return ErrorCategory::kUnavailable;
    case wire::ErrorCategory::POLICY: return ErrorCategory::kPolicy;
    case wire::ErrorCategory::INTERNAL: return ErrorCategory::kInternal;
  }
  return ErrorCategory::kInternal;  // a category added by a newer peer
}

void set_error(wire::Error::Builder out, const Error& error) {
  out.setCategory(category_to_wire(error.category));
  out.setCode(text(error.code));
  out.setMessage(text(error.message));
}

Error get_error(wire::Error::Reader in) {
  return Error{category_from_wire(in.getCategory()), str(in.getCode()), str(in.getMessage())};
}

void set_header(wire::RequestHeader::Builder out, const RequestHeader& header) {
  out.setFormatVersion(wire::FORMAT_VERSION);
  out.setRequestId(text(header.request_id.value()));
  out.setRunId(text(header.run_id.value()));
  out.setPolicyVersion(header.policy_version.value());
  out.setDeadlineUnixMs(header.deadline_unix_ms);
}

Status check_version(std::uint16_t format_version, const char* what) {
  if (format_version <= wire::FORMAT_VERSION) return Status::ok();
  return make_error(ErrorCategory::kInvalidInput, "wire.version",
                    std::string(what) + ": format version " + std::to_string(format_version) +
                        " is newer than this build's " + std::to_string(wire::FORMAT_VERSION));
}

Status check_schema_id(std::uint64_t schema_id, std::uint64_t expected, const char* what) {
  if (schema_id == expected) return Status::ok();
  char buf[96];
  std::snprintf(buf, sizeof buf, ": schema id %016llx, expected %016llx (another message type)",
                static_cast<unsigned long long>(schema_id),
                static_cast<unsigned long long>(expected));
  return make_error(ErrorCategory::kInvalidInput, "wire.wrong_type", std::string(what) + buf);
}

Error unknown_variant(unsigned which, const char* what) {
  return capnp_io::malformed(std::string(what) + ": union member " + std::to_string(which) +
                             " is unknown to this build (a newer peer?)");
}

}  // namespace cuda_agent::wire_detail
