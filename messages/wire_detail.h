// Internal to messages/: what every protocol codec (compile, bench, trajectory, learner, cluster)
// shares on top of capnp_io.h. Not a public header: it includes Cap'n Proto.
//
// Every root message of those protocols starts with `schemaId` (its Cap'n Proto type id), so a
// frame of another message type is rejected ("wire.wrong_type") instead of being read as garbage,
// and carries the format version, in its RequestHeader (requests) or in `formatVersion` (all
// others); a version newer than this build is rejected ("wire.version").
//
// Enums: each C++ enum mirrors its wire enum value for value, `kUnknown` = 0 = wire `unknown`
// (checked by static_assert in each codec). A value from a newer peer that this build does not
// know decodes to kUnknown; the receiver decides whether that is an error.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "messages/capnp_io.h"
#include "messages/common.capnp.h"
#include "messages/common_codec.h"

namespace cuda_agent::wire_detail {

/// ErrorCategory <-> wire::ErrorCategory, for every codec. An enumerant from a newer peer maps to
/// kInternal.
wire::ErrorCategory category_to_wire(ErrorCategory c);
ErrorCategory category_from_wire(wire::ErrorCategory c);

/// The C++ enum `cpp` and the wire enumerant `wire` have the same value.
#define CA_SAME_ENUM(cpp, wire)                                                      \
  static_assert(static_cast<std::uint16_t>(cpp) == static_cast<std::uint16_t>(wire), \
                #cpp " and " #wire " differ")

/// A Text value holding all of `s` (embedded NULs included).
inline capnp::Text::Reader text(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}
/// All bytes of a Text value (not cut at an embedded NUL).
inline std::string str(capnp::Text::Reader r) { return std::string(r.begin(), r.size()); }
/// A Data value holding the bytes of `s`, and back.
inline capnp::Data::Reader as_data(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
inline std::string from_data(capnp::Data::Reader r) {
  return std::string(reinterpret_cast<const char*>(r.begin()), r.size());
}

void set_texts(capnp::List<capnp::Text>::Builder out, const std::vector<std::string>& in);
std::vector<std::string> get_texts(capnp::List<capnp::Text>::Reader in);

/// Fills a primitive list that was initialised to in.size() elements.
template <class T, class ListBuilder>
void set_values(ListBuilder out, const std::vector<T>& in) {
  for (unsigned i = 0; i < out.size(); ++i) out.set(i, in[i]);
}
template <class T, class ListReader>
std::vector<T> get_values(ListReader in) {
  std::vector<T> out;
  out.reserve(in.size());
  for (auto v : in) out.push_back(v);
  return out;
}

/// Wire enum -> C++ enum with the same values; values past `last` (a newer peer's) -> kUnknown.
template <class Cpp, class Wire>
Cpp enum_from_wire(Wire w, Cpp last) {
  const auto v = static_cast<std::uint16_t>(w);
  return v <= static_cast<std::uint16_t>(last) ? static_cast<Cpp>(v) : Cpp::kUnknown;
}
template <class Wire, class Cpp>
Wire enum_to_wire(Cpp c) {
  return static_cast<Wire>(static_cast<std::uint16_t>(c));
}

void set_error(wire::Error::Builder out, const Error& error);
Error get_error(wire::Error::Reader in);

/// Fills a header; the format version is always this build's.
void set_header(wire::RequestHeader::Builder out, const RequestHeader& header);

/// "wire.version" when `format_version` is newer than this build's, else ok.
Status check_version(std::uint16_t format_version, const char* what);
/// "wire.wrong_type" unless `schema_id` is `expected`.
Status check_schema_id(std::uint64_t schema_id, std::uint64_t expected, const char* what);
/// "wire.malformed" for a union member this build does not know.
Error unknown_variant(unsigned which, const char* what);

/// Stamps a non-request root (schemaId + formatVersion).
template <class Builder>
void stamp(Builder root) {
  root.setSchemaId(capnp::typeId<typename Builder::Builds>());
  root.setFormatVersion(wire::FORMAT_VERSION);
}
/// Checks the stamp of a non-request root.
template <class Reader>
Status check_stamp(Reader root, const char* what) {
  RETURN_IF_ERROR(
      check_schema_id(root.getSchemaId(), capnp::typeId<typename Reader::Reads>(), what));
  return check_version(root.getFormatVersion(), what);
}

/// Stamps a request root (schemaId + header).
template <class Builder>
void stamp_request(Builder root, const RequestHeader& header) {
  root.setSchemaId(capnp::typeId<typename Builder::Builds>());
  set_header(root.initHeader(), header);
}
/// Checks a request root's schema id and reads its header (present, version not newer).
template <class Reader>
Expected<RequestHeader> read_request_header(Reader root, const char* what) {
  RETURN_IF_ERROR(
      check_schema_id(root.getSchemaId(), capnp::typeId<typename Reader::Reads>(), what));
  if (!root.hasHeader()) return capnp_io::malformed(std::string(what) + ": no request header");
  auto h = root.getHeader();
  RETURN_IF_ERROR(check_version(h.getFormatVersion(), what));
  RequestHeader out;
  out.format_version = h.getFormatVersion();
  out.request_id = RequestId{str(h.getRequestId())};
  out.run_id = RunId{str(h.getRunId())};
  out.policy_version = PolicyVersion{h.getPolicyVersion()};
  out.deadline_unix_ms = h.getDeadlineUnixMs();
  return out;
}

/// Encodes a reply {schemaId, formatVersion, requestId, union {result, error}};
/// `set_result(builder, value)` fills the result.
template <class WireReply, class CppReply, class SetResult>
std::string encode_reply(const CppReply& reply, SetResult&& set_result) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<WireReply>();
  stamp(root);
  root.setRequestId(text(reply.request_id.value()));
  if (reply.outcome) {
    set_result(root.initResult(), *reply.outcome);
  } else {
    set_error(root.initError(), reply.outcome.error());
  }
  return capnp_io::to_bytes(message);
}

/// Decodes a reply encoded by encode_reply; `get_result(reader)` returns the C++ result.
template <class WireReply, class CppReply, class GetResult>
Expected<CppReply> decode_reply(std::string_view bytes, const DecodeLimits& limits,
                                const char* what, GetResult&& get_result) {
  return capnp_io::read_root<WireReply>(bytes, limits, what,
                                        [&](typename WireReply::Reader r) -> Expected<CppReply> {
                                          RETURN_IF_ERROR(check_stamp(r, what));
                                          CppReply out;
                                          out.request_id = RequestId{str(r.getRequestId())};
                                          switch (r.which()) {
                                            case WireReply::RESULT:
                                              out.outcome = get_result(r.getResult());
                                              break;
                                            case WireReply::ERROR:
                                              out.outcome = get_error(r.getError());
                                              break;
                                            default: return unknown_variant(r.which(), what);
                                          }
                                          return out;
                                        });
}

}  // namespace cuda_agent::wire_detail
