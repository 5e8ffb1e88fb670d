// Test-only (linked into messages_test): realistic values of every wire protocol, the list of all
// decoders, and byte-level helpers to forge frames from a newer peer without Cap'n Proto (tests
// are C++20 and must not include capnp headers).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "messages/bench_codec.h"
#include "messages/cluster_codec.h"
#include "messages/common_codec.h"
#include "messages/compile_codec.h"
#include "messages/coordinator_codec.h"
#include "messages/learner_codec.h"
#include "messages/trajectory_codec.h"

namespace cuda_agent::wire_samples {

RequestHeader header(std::string request_id);

CompileRequest compile_request();
CompileResult compile_result();
BenchRequest bench_request();
BenchResult bench_result();
AuditRecord audit_record();
/// An episode of `turns` turns (system, user, then assistant and tool alternating) holding
/// `tokens` tokens in all, with tool calls and results, ids and logprobs drawn from `seed`.
Episode episode(int turns, int tokens, std::uint64_t seed = 1);
WeightManifest weight_manifest();
WeightBucket weight_bucket(std::size_t size_bytes);
VersionAnnouncement version_announcement();
ClusterRegister cluster_register();
ClusterHeartbeat cluster_heartbeat();
ClusterMembership cluster_membership();
ClusterCommand cluster_command();
/// One CoordinatorFrame of every body kind, in the variant's order, every field set to a value
/// other than its default.
std::vector<CoordinatorFrame> coordinator_frames();

/// One decoder of the wire: decodes `bytes`, returns ok or the decoder's error.
struct Decoder {
  std::string name;
  std::function<Status(std::string_view)> decode;
};
/// Every decoder of messages/ (common, compile, bench, trajectory, learner, cluster,
/// coordinator).
std::vector<Decoder> all_decoders();

/// A valid frame and the name of the decoder (Decoder::name) it is for.
struct Frame {
  std::string type;
  std::string bytes;
};
/// Valid frames of every message type, replies both with a result and with an error (small
/// values, so that mutations hit structure often).
std::vector<Frame> sample_frames();

/// Byte offset of the format version in a frame written by this build's encoders: in the root's
/// data section (`request` false) or in its RequestHeader (`request` true). Follows the root and
/// header pointers of the flat message (Cap'n Proto encoding spec).
std::size_t format_version_offset(const std::string& frame, bool request);
/// `frame` with its format version set to `version`.
std::string with_format_version(std::string frame, bool request, std::uint16_t version);
/// A request `frame` whose RequestHeader pointer is null (as from a sender that never set it).
std::string without_request_header(std::string frame);

}  // namespace cuda_agent::wire_samples
