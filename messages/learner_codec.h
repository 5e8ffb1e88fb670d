// The learner protocol (messages/learner.capnp) as plain C++ types, and its codec: versioned policy
// weights, learner -> rollout engines, when they share no NCCL communicator (DESIGN.md section 3).
// A version is one WeightManifest plus one WeightBucket per WeightBucketInfo; the receiver checks
// each bucket's checksum and applies the version only onto its base version. A
// VersionAnnouncement tells the coordinator and engines that a version is ready.
//
//   std::string frame = encode_weight_manifest(manifest);
//   Expected<WeightManifest> back = decode_weight_manifest(frame);
//
// Buckets are large: pass DecodeLimits{max_bytes} above the bucket size to decode_weight_bucket
// (the default limit is 64 MiB); one bucket's data must stay below 512 MiB (a Cap'n Proto limit).
// Decoding never trusts its input: truncated, garbage, oversized, another message type
// ("wire.wrong_type") or a newer format version ("wire.version") give an Error of category
// invalid_input, never an exception. A TensorDType from a newer peer decodes to kUnknown (the
// receiver cannot apply that version).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"

namespace cuda_agent {

/// Element type of a weight tensor: the torch dtype of the same name (kFloat8E4M3 is
/// torch.float8_e4m3fn; kBool is one byte per element).
enum class TensorDType : std::uint8_t {
  kUnknown = 0,  ///< a dtype newer than this build
  kFloat32 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kFloat64 = 4,
  kInt64 = 5,
  kInt32 = 6,
  kInt16 = 7,
  kInt8 = 8,
  kUInt8 = 9,
  kBool = 10,
  kFloat8E4M3 = 11,
  kFloat8E5M2 = 12,
};

/// One tensor's place in a bucket.
struct WeightTensor {
  std::string name;                           ///< parameter name as in the model's state dict
  TensorDType dtype = TensorDType::kUnknown;  ///< element type
  std::vector<std::int64_t> shape;            ///< outermost first; empty for a scalar
  std::uint64_t offset_bytes = 0;             ///< where its bytes start in the bucket's data
  std::uint64_t size_bytes = 0;               ///< its length (row-major, contiguous)
  /// A tensor larger than a bucket is split into pieces over consecutive buckets: where this
  /// piece starts in the whole tensor's bytes (0 for a whole tensor). size_bytes is the piece's.
  std::uint64_t piece_offset_bytes = 0;
};

/// One bucket of a version.
struct WeightBucketInfo {
  std::uint32_t index = 0;            ///< 0-based, dense
  std::vector<WeightTensor> tensors;  ///< the tensors in the bucket, by offset
  std::uint64_t size_bytes = 0;       ///< length of the bucket's data
  std::uint64_t checksum = 0;         ///< of the bucket's data, by checksum_algorithm
  std::string checksum_algorithm;     ///< "xxh64", ...; a receiver rejects one it does not know
};

/// Everything an engine needs to receive and check one version.
struct WeightManifest {
  RunId run_id;                           ///< the run it belongs to
  PolicyVersion version;                  ///< the version these weights are
  PolicyVersion base_version;             ///< the version an engine must hold to apply this one
  bool full_snapshot = false;             ///< every tensor is here; applies onto any version
  std::uint64_t total_bytes = 0;          ///< sum of the buckets' sizes
  std::vector<WeightBucketInfo> buckets;  ///< one per WeightBucket, by index
};

/// The data of one bucket.
struct WeightBucket {
  PolicyVersion version;    ///< WeightManifest::version it belongs to
  std::uint32_t index = 0;  ///< WeightBucketInfo::index
  std::string data;         ///< the tensors' bytes at their offsets
};

/// A version is ready.
struct VersionAnnouncement {
  RunId run_id;                        ///< the run it belongs to
  PolicyVersion version;               ///< the new version
  PolicyVersion base_version;          ///< WeightManifest::base_version
  std::uint64_t total_bytes = 0;       ///< WeightManifest::total_bytes
  std::uint32_t bucket_count = 0;      ///< number of buckets
  std::int64_t published_unix_ms = 0;  ///< ms since the Unix epoch (UTC)
};

std::string encode_weight_manifest(const WeightManifest& manifest);
Expected<WeightManifest> decode_weight_manifest(std::string_view bytes,
                                                const DecodeLimits& limits = {});

std::string encode_weight_bucket(const WeightBucket& bucket);
Expected<WeightBucket> decode_weight_bucket(std::string_view bytes,
                                            const DecodeLimits& limits = {});

std::string encode_version_announcement(const VersionAnnouncement& announcement);
Expected<VersionAnnouncement> decode_version_announcement(std::string_view bytes,
                                                          const DecodeLimits& limits = {});

// --- Weight fetch (issue 23): an engine pulls a version from the learner ranks serving it
// (actors/weight_sync.h). The request is one frame; the reply is a WeightFetchReply frame followed,
// when it is ok, by one payload frame: the encoded WeightManifest, or the bucket's raw bytes.

/// An engine asks a learner rank for one version's manifest or one of its buckets.
struct WeightFetchRequest {
  RequestId request_id;        ///< echoed in the reply; replies to older requests are ignored
  RunId run_id;                ///< the run; a rank refuses another run's request
  PolicyVersion version;       ///< the version wanted
  bool manifest_only = false;  ///< true: the manifest; false: bucket `bucket_index`
  std::uint32_t bucket_index = 0;
};

/// A rank's answer: ok (a payload frame of payload_bytes follows) or an Error.
struct WeightFetchReply {
  RequestId request_id;        ///< WeightFetchRequest::request_id
  PolicyVersion version;       ///< WeightFetchRequest::version
  bool manifest_only = false;  ///< WeightFetchRequest::manifest_only
  std::uint32_t bucket_index = 0;
  std::uint64_t payload_bytes = 0;  ///< length of the payload frame (0 on error)
  Status outcome;                   ///< ok, or why the rank did not serve it
};

std::string encode_weight_fetch_request(const WeightFetchRequest& request);
Expected<WeightFetchRequest> decode_weight_fetch_request(std::string_view bytes,
                                                         const DecodeLimits& limits = {});

std::string encode_weight_fetch_reply(const WeightFetchReply& reply);
Expected<WeightFetchReply> decode_weight_fetch_reply(std::string_view bytes,
                                                     const DecodeLimits& limits = {});

}  // namespace cuda_agent
