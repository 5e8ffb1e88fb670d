// The codec of the coordinator's protocol (messages/coordinator.capnp): one CoordinatorFrame
// (messages/coordinator_protocol.h) per ZeroMQ message on the coordinator's socket. The
// process's gateway (DESIGN.md section 3) is its user; nothing else touches these bytes.
//
//   std::string bytes = encode_coordinator_frame(
//       CoordinatorFrame{"r-7", RunId{"run-1"}, Heartbeat{WorkerId{"rollout-3"}}});
//   Expected<CoordinatorFrame> frame = decode_coordinator_frame(bytes);
//   if (!frame) ...   // frame.error().code: "wire.malformed", "wire.wrong_type", ...
//
// TrajectorySubmission::episode travels as the run store's encoded EpisodeRecord
// (messages/store_codec.h), so the coordinator stores what the worker sent.
//
// Decoding never trusts its input: truncated, garbage or oversized bytes, another message type
// ("wire.wrong_type") or a newer format version ("wire.version") give an Error of category
// invalid_input, never an exception. A body kind this build does not know (a newer peer) gives
// "wire.unknown_body", naming the union member's number. A MemberRole or SubmitStatus this build
// does not name is refused ("wire.malformed", naming the field): the receiver could not act on it.
// A stage number this build does not name survives unchanged, as in the run store. A corrupt
// embedded EpisodeRecord is "wire.malformed" naming TrajectorySubmission.episode.
//
// Threading: free functions without shared state; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "messages/common_codec.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

std::string encode_coordinator_frame(const CoordinatorFrame& frame);
Expected<CoordinatorFrame> decode_coordinator_frame(std::string_view bytes,
                                                    const DecodeLimits& limits = {});

}  // namespace cuda_agent
