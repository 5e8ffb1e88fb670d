# The learner protocol: versioned policy weights, learner -> rollout engines, when they share no
# NCCL communicator (DESIGN.md section 3). A version is a manifest plus its checksummed buckets; an
# engine applies it only onto its base version.
# Add-only once released: new fields get new ordinals at the end; nothing is renamed, renumbered or
# removed. Codec: messages/learner_codec.h.
@0xf6659b72ec6aa63b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

# Element type of a tensor.
enum TensorDType {
  unknown @0;    # a dtype newer than this build; the receiver cannot apply the version
  float32 @1;    # torch.float32
  float16 @2;    # torch.float16
  bfloat16 @3;   # torch.bfloat16
  float64 @4;    # torch.float64
  int64 @5;      # torch.int64
  int32 @6;      # torch.int32
  int16 @7;      # torch.int16
  int8 @8;       # torch.int8
  uint8 @9;      # torch.uint8
  bool @10;      # torch.bool, one byte per element
  float8e4m3 @11; # torch.float8_e4m3fn
  float8e5m2 @12; # torch.float8_e5m2
}

# One tensor's place in a bucket.
struct WeightTensor {
  name @0 :Text;           # parameter name as in the model's state dict
  dtype @1 :TensorDType;  # element type
  shape @2 :List(Int64);   # sizes, outermost first; empty for a scalar
  offsetBytes @3 :UInt64;  # where its bytes start in the bucket's data (row-major, contiguous)
  sizeBytes @4 :UInt64;    # its length in bytes (of this piece, when split)
  pieceOffsetBytes @5 :UInt64;  # a tensor larger than a bucket is split into pieces over
                                # consecutive buckets: where this piece starts in the whole
                                # tensor's bytes (0 for a whole tensor or its first piece)
}

# One bucket of a version: a group of tensors sent as one WeightBucket.
struct WeightBucketInfo {
  index @0 :UInt32;                # 0-based, dense
  tensors @1 :List(WeightTensor);  # the tensors in the bucket, by offset
  sizeBytes @2 :UInt64;            # length of the bucket's data
  checksum @3 :UInt64;             # of the bucket's data, by checksumAlgorithm
  checksumAlgorithm @4 :Text;      # e.g. "xxh64"; the receiver rejects one it does not know
}

# Everything an engine needs to receive and check one version.
struct WeightManifest {
  schemaId @0 :UInt64;        # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;   # the sender's Common.formatVersion
  runId @2 :Text;            # the run it belongs to
  version @3 :UInt64;         # the policy version these weights are
  baseVersion @4 :UInt64;     # the version an engine must hold to apply this one
  fullSnapshot @5 :Bool;      # true: every tensor is here and applies onto any version
  totalBytes @6 :UInt64;      # sum of the buckets' sizes
  buckets @7 :List(WeightBucketInfo);  # one per WeightBucket, by index
}

# The data of one bucket.
struct WeightBucket {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  version @2 :UInt64;        # WeightManifest.version it belongs to
  index @3 :UInt32;          # WeightBucketInfo.index
  data @4 :Data;             # the tensors' bytes at their offsets (< 512 MiB: a Data limit)
}

# The learner tells the coordinator and engines that a version is ready.
struct VersionAnnouncement {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  runId @2 :Text;            # the run it belongs to
  version @3 :UInt64;        # the new policy version
  baseVersion @4 :UInt64;    # WeightManifest.baseVersion
  totalBytes @5 :UInt64;     # WeightManifest.totalBytes
  bucketCount @6 :UInt32;    # number of buckets
  publishedUnixMs @7 :Int64; # when it was published, ms since the Unix epoch (UTC)
}

# --- Weight fetch (issue 23): an engine pulls one version from the learner ranks that serve it.
# A rank answers on a ROUTER socket; the engine sends a WeightFetchRequest frame and receives a
# WeightFetchReply frame followed, on success, by one more frame with the payload: the encoded
# WeightManifest, or the bucket's raw data (not a WeightBucket, so a large bucket is sent from the
# rank's memory and read by the engine in place, without a copy).

using Common = import "common.capnp";

# An engine asks a learner rank for one version's manifest or one of its buckets.
struct WeightFetchRequest {
  schemaId @0 :UInt64;       # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;  # the sender's Common.formatVersion
  requestId @2 :Text;        # echoed in the reply; a reply to an older request is ignored
  runId @3 :Text;            # the run it belongs to; another run's request is refused
  version @4 :UInt64;        # the policy version wanted
  manifestOnly @5 :Bool;     # true: the manifest; false: bucket bucketIndex
  bucketIndex @6 :UInt32;    # WeightBucketInfo.index (ignored when manifestOnly)
}

# A rank's answer. On success one payload frame follows (payloadBytes long).
struct WeightFetchReply {
  schemaId @0 :UInt64;        # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;   # the sender's Common.formatVersion
  requestId @2 :Text;         # WeightFetchRequest.requestId
  version @3 :UInt64;         # WeightFetchRequest.version
  manifestOnly @4 :Bool;      # WeightFetchRequest.manifestOnly
  bucketIndex @5 :UInt32;     # WeightFetchRequest.bucketIndex
  payloadBytes @6 :UInt64;    # length of the payload frame the rank sent (0 on error)
  union {
    ok @7 :Void;              # the payload frame follows
    error @8 :Common.Error;        # e.g. weights.not_held: this rank lacks it
  }
}
