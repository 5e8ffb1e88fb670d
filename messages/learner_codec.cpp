#include "messages/learner_codec.h"

#include "messages/learner.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using namespace wire_detail;  // NOLINT: the codec's vocabulary

CA_SAME_ENUM(TensorDType::kUnknown, wire::TensorDType::UNKNOWN);
CA_SAME_ENUM(TensorDType::kFloat32, wire::TensorDType::FLOAT32);
CA_SAME_ENUM(TensorDType::kFloat16, wire::TensorDType::FLOAT16);
CA_SAME_ENUM(TensorDType::kBFloat16, wire::TensorDType::BFLOAT16);
CA_SAME_ENUM(TensorDType::kFloat64, wire::TensorDType::FLOAT64);
CA_SAME_ENUM(TensorDType::kInt64, wire::TensorDType::INT64);
CA_SAME_ENUM(TensorDType::kInt32, wire::TensorDType::INT32);
CA_SAME_ENUM(TensorDType::kInt16, wire::TensorDType::INT16);
CA_SAME_ENUM(TensorDType::kInt8, wire::TensorDType::INT8);
CA_SAME_ENUM(TensorDType::kUInt8, wire::TensorDType::UINT8);
CA_SAME_ENUM(TensorDType::kBool, wire::TensorDType::BOOL);
CA_SAME_ENUM(TensorDType::kFloat8E4M3, wire::TensorDType::FLOAT8E4M3);
CA_SAME_ENUM(TensorDType::kFloat8E5M2, wire::TensorDType::FLOAT8E5M2);

}  // namespace

std::string encode_weight_manifest(const WeightManifest& manifest) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::WeightManifest>();
  stamp(root);
  root.setRunId(text(manifest.run_id.value()));
  root.setVersion(manifest.version.value());
  root.setBaseVersion(manifest.base_version.value());
  root.setFullSnapshot(manifest.full_snapshot);
  root.setTotalBytes(manifest.total_bytes);
  auto buckets = root.initBuckets(manifest.buckets.size());
  for (unsigned i = 0; i < manifest.buckets.size(); ++i) {
    const WeightBucketInfo& b = manifest.buckets[i];
    buckets[i].setIndex(b.index);
    auto tensors = buckets[i].initTensors(b.tensors.size());
    for (unsigned j = 0; j < b.tensors.size(); ++j) {
      const WeightTensor& t = b.tensors[j];
      tensors[j].setName(text(t.name));
      tensors[j].setDtype(enum_to_wire<wire::TensorDType>(t.dtype));
      set_values(tensors[j].initShape(t.shape.size()), t.shape);
      tensors[j].setOffsetBytes(t.offset_bytes);
      tensors[j].setSizeBytes(t.size_bytes);
      tensors[j].setPieceOffsetBytes(t.piece_offset_bytes);
    }
    buckets[i].setSizeBytes(b.size_bytes);
    buckets[i].setChecksum(b.checksum);
    buckets[i].setChecksumAlgorithm(text(b.checksum_algorithm));
  }
  return capnp_io::to_bytes(message);
}

Expected<WeightManifest> decode_weight_manifest(std::string_view bytes,
                                                const DecodeLimits& limits) {
  static constexpr const char* kWhat = "WeightManifest";
  return capnp_io::read_root<wire::WeightManifest>(
      bytes, limits, kWhat, [](wire::WeightManifest::Reader r) -> Expected<WeightManifest> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        WeightManifest out;
        out.run_id = RunId{str(r.getRunId())};
        out.version = PolicyVersion{r.getVersion()};
        out.base_version = PolicyVersion{r.getBaseVersion()};
        out.full_snapshot = r.getFullSnapshot();
        out.total_bytes = r.getTotalBytes();
        for (auto b : r.getBuckets()) {
          WeightBucketInfo info;
          info.index = b.getIndex();
          for (auto t : b.getTensors()) {
            info.tensors.push_back(WeightTensor{
                str(t.getName()), enum_from_wire(t.getDtype(), TensorDType::kFloat8E5M2),
                get_values<std::int64_t>(t.getShape()), t.getOffsetBytes(), t.getSizeBytes(),
                t.getPieceOffsetBytes()});
          }
          info.size_bytes = b.getSizeBytes();
          info.checksum = b.getChecksum();
          info.checksum_algorithm = str(b.getChecksumAlgorithm());
          out.buckets.push_back(std::move(info));
        }
        return out;
      });
}

std::string encode_weight_bucket(const WeightBucket& bucket) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::WeightBucket>();
  stamp(root);
  root.setVersion(bucket.version.value());
  root.setIndex(bucket.index);
  root.setData(as_data(bucket.data));
  return capnp_io::to_bytes(message);
}

Expected<WeightBucket> decode_weight_bucket(std::string_view bytes, const DecodeLimits& limits) {
  static constexpr const char* kWhat = "WeightBucket";
  return capnp_io::read_root<wire::WeightBucket>(
      bytes, limits, kWhat, [](wire::WeightBucket::Reader r) -> Expected<WeightBucket> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        WeightBucket out;
        out.version = PolicyVersion{r.getVersion()};
        out.index = r.getIndex();
        out.data = from_data(r.getData());
        return out;
      });
}

std::string encode_version_announcement(const VersionAnnouncement& announcement) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::VersionAnnouncement>();
  stamp(root);
  root.setRunId(text(announcement.run_id.value()));
  root.setVersion(announcement.version.value());
  root.setBaseVersion(announcement.base_version.value());
  root.setTotalBytes(announcement.total_bytes);
  root.setBucketCount(announcement.bucket_count);
  root.setPublishedUnixMs(announcement.published_unix_ms);
  return capnp_io::to_bytes(message);
}

Expected<VersionAnnouncement> decode_version_announcement(std::string_view bytes,
                                                          const DecodeLimits& limits) {
  static constexpr const char* kWhat = "VersionAnnouncement";
  return capnp_io::read_root<wire::VersionAnnouncement>(
      bytes, limits, kWhat,
      [](wire::VersionAnnouncement::Reader r) -> Expected<VersionAnnouncement> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        VersionAnnouncement out;
        out.run_id = RunId{str(r.getRunId())};
        out.version = PolicyVersion{r.getVersion()};
        out.base_version = PolicyVersion{r.getBaseVersion()};
        out.total_bytes = r.getTotalBytes();
        out.bucket_count = r.getBucketCount();
        out.published_unix_ms = r.getPublishedUnixMs();
        return out;
      });
}

std::string encode_weight_fetch_request(const WeightFetchRequest& request) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::WeightFetchRequest>();
  stamp(root);
  root.setRequestId(text(request.request_id.value()));
  root.setRunId(text(request.run_id.value()));
  root.setVersion(request.version.value());
  root.setManifestOnly(request.manifest_only);
  root.setBucketIndex(request.bucket_index);
  return capnp_io::to_bytes(message);
}

Expected<WeightFetchRequest> decode_weight_fetch_request(std::string_view bytes,
                                                         const DecodeLimits& limits) {
  static constexpr const char* kWhat = "WeightFetchRequest";
  return capnp_io::read_root<wire::WeightFetchRequest>(
      bytes, limits, kWhat, [](wire::WeightFetchRequest::Reader r) -> Expected<WeightFetchRequest> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        WeightFetchRequest out;
        out.request_id = RequestId{str(r.getRequestId())};
        out.run_id = RunId{str(r.getRunId())};
        out.version = PolicyVersion{r.getVersion()};
        out.manifest_only = r.getManifestOnly();
        out.bucket_index = r.getBucketIndex();
        return out;
      });
}

std::string encode_weight_fetch_reply(const WeightFetchReply& reply) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::WeightFetchReply>();
  stamp(root);
  root.setRequestId(text(reply.request_id.value()));
  root.setVersion(reply.version.value());
  root.setManifestOnly(reply.manifest_only);
  root.setBucketIndex(reply.bucket_index);
  root.setPayloadBytes(reply.payload_bytes);
  if (reply.outcome) {
    root.setOk();
  } else {
    set_error(root.initError(), reply.outcome.error());
  }
  return capnp_io::to_bytes(message);
}

Expected<WeightFetchReply> decode_weight_fetch_reply(std::string_view bytes,
                                                     const DecodeLimits& limits) {
  static constexpr const char* kWhat = "WeightFetchReply";
  return capnp_io::read_root<wire::WeightFetchReply>(
      bytes, limits, kWhat, [](wire::WeightFetchReply::Reader r) -> Expected<WeightFetchReply> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        WeightFetchReply out;
        out.request_id = RequestId{str(r.getRequestId())};
        out.version = PolicyVersion{r.getVersion()};
        out.manifest_only = r.getManifestOnly();
        out.bucket_index = r.getBucketIndex();
        out.payload_bytes = r.getPayloadBytes();
        switch (r.which()) {
          case wire::WeightFetchReply::OK: break;
          case wire::WeightFetchReply::ERROR: out.outcome = get_error(r.getError()); break;
          default: return unknown_variant(static_cast<unsigned>(r.which()), kWhat);
        }
        return out;
      });
}

}  // namespace cuda_agent
