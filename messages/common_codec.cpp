#include "messages/common_codec.h"

#include "messages/capnp_io.h"
#include "messages/common.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
std::string encode_error(const Error& error) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Error>();
  root.setCategory(wire_detail::category_to_wire(error.category));
  root.setCode(error.code);
  root.setMessage(error.message);
  return capnp_io::to_bytes(message);
}

Expected<Error> decode_error(std::string_view bytes, const DecodeLimits& limits) {
  return capnp_io::read_root<wire::Error>(
      bytes, limits, "Error", [](wire::Error::Reader r) -> Expected<Error> {
        return Expected<Error>(std::in_place,
                               Error{wire_detail::category_from_wire(r.getCategory()),
                                     r.getCode().cStr(), r.getMessage().cStr()});
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
