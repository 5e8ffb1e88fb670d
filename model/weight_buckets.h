// A Transformer's weights as weight-sync buckets and back (issue 23), the torch side of
// actors/weight_sync.h.
//
//   Learner:  ASSIGN_OR_RETURN(PublishedVersion all, snapshot_weights(model, run, v, base, {}));
//             publisher->publish(shard_of(all, plan, rank));
//   Engine:   WeightStager stager(std::move(spare));        // same architecture, any contents
//             RETURN_IF_ERROR(stager.begin(manifest));      // refuses another layout, by name
//             fetcher.fetch(manifest, held, [&](auto& info, auto data) {
//               return stager.apply(info, data); }, deadline_ms);
//             ASSIGN_OR_RETURN(Transformer* next, stager.finish());
//             engine.swap_weights(...);                      // the caller's; then recycle the old
//
// Layout: parameters() in its order, each tensor's contiguous row-major bytes in its own dtype
// (bf16 stays bf16), packed into buckets of at most bucket_bytes; a tensor that does not fit in
// what is left of a bucket continues in the next one as another piece
// (WeightTensor::piece_offset_bytes), so a 1 GiB embedding travels as 256 MiB pieces.
//
// Memory: the engine's extra copy is the staged Transformer (1.0x the weights); each bucket is
// copied from the received frame straight into the staged tensors (a host-to-device copy on a
// GPU). The learner's snapshot is one host copy of the weights per version retained.
//
// Threading: snapshot_weights reads the tensors (call it between optimizer steps); a WeightStager
// is used by one thread (the fetcher's sink runs on the fetching thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "actors/weight_sync.h"
#include "core/error.h"
#include "model/transformer.h"

namespace cuda_agent {

struct WeightBucketOptions {
  /// Largest bucket. Larger buckets mean fewer round trips; smaller ones overlap transfer,
  /// checksum and copy better and bound the fetcher's in-flight memory (parallel_requests x
  /// this). Must stay below 512 MiB. Default: 256 MiB.
  std::uint64_t bucket_bytes = 256ull << 20;
};

/// TensorDType of a torch dtype; kUnknown for one the wire has no name for.
TensorDType tensor_dtype_of(at::ScalarType type);

/// Copies `model`'s parameters() into sealed buckets (sizes, xxh64 checksums, total) as version
/// `version` (a full snapshot; base_version is recorded for the engines' base check).
Expected<PublishedVersion> snapshot_weights(const Transformer& model, const RunId& run_id,
                                            PolicyVersion version, PolicyVersion base_version,
                                            const WeightBucketOptions& options = {});

/// Receives a version into a second Transformer of the engine's architecture, in place.
class WeightStager {
 public:
  explicit WeightStager(Transformer staged);

  /// Checks `manifest` against the staged model's parameters(): every tensor known, with its
  /// dtype and shape, every piece inside its tensor and bucket, and for a full snapshot every
  /// parameter covered exactly. Errors (invalid_input, "policy.weights_mismatch") name the
  /// version and the tensor. Starts a new version (forgets a half-applied one).
  Status begin(const WeightManifest& manifest);
  /// Copies one verified bucket into the staged tensors (a BucketSink).
  Status apply(const WeightBucketInfo& info, std::string_view data);
  /// After every bucket was applied: the staged model, holding the new version.
  Expected<Transformer*> finish();

  Transformer& staged() { return staged_; }
  /// Gives the staged model away (e.g. to swap it in), taking the engine's previous one in its
  /// place to stage the next version into.
  Transformer exchange(Transformer previous);

 private:
  Transformer staged_;
  std::map<std::string, at::Tensor> by_name_;
  std::optional<WeightManifest> manifest_;
  std::vector<bool> applied_;
};

}  // namespace cuda_agent
