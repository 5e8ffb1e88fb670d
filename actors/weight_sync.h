// Versioned weight sync, learner ranks -> policy engines, over ZeroMQ (DESIGN.md section 3,
// issue 23). Torch-free: model/weight_buckets.h turns a Transformer into buckets and back.
//
//   Learner rank r of W:                         Engine:
//     WeightPublisher pub = start({endpoint})      WeightFetcher f({endpoints of ranks 0..W-1})
//     pub.publish(manifest, buckets_of(r))   -->   ASSIGN_OR_RETURN(m, f.fetch_manifest(ann))
//     announce VersionAnnouncement                 f.fetch(m, held, sink)   // sink copies each
//     retention.loaded(engine, v) -> pub.drop(v)   report the version loaded // bucket to staging
//
// Which rank serves which bucket: ShardPlan. Rank r serves bucket i when (i - r) mod W <
// replicas, so bucket i's primary is rank i % W and, with replicas = 2, rank (i - 1) mod W holds
// a copy too. The engine learns the endpoints from the launch plan (endpoint k is rank k's) and
// the same ShardPlan; it asks the primary first, then the copies, then every other rank (a rank
// that lacks a bucket answers weights.not_held at once). A rank that disconnects or does not
// answer within request_timeout_ms is skipped for the rest of the fetch.
//
// Wire: WeightFetchRequest / WeightFetchReply (messages/learner.capnp); a reply's payload (the
// encoded manifest or the bucket's raw bytes) is a second frame, sent from the publisher's memory
// and read by the fetcher in place. Checksums are xxh64 (seed 0) of the bucket's bytes: ~5 GB/s a
// core here against BLAKE2b's ~0.3-0.6 GB/s.
//
// Threading: WeightPublisher runs its own thread; publish/drop/held_versions may be called from
// any thread. WeightFetcher is used by one thread at a time; fetch() calls the sink on that
// thread, in arrival order (not index order). VersionRetention is not thread-safe (owned by the
// learner's coordinator loop).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/pool_transport.h"
#include "core/error.h"
#include "core/ids.h"
#include "messages/learner_codec.h"

namespace cuda_agent {

/// The checksum_algorithm the publisher writes and the only one the fetcher accepts.
inline constexpr std::string_view kWeightChecksumXxh64 = "xxh64";
/// xxh64 (seed 0) of `bytes`.
std::uint64_t weight_checksum(std::string_view bytes);

/// Which learner ranks serve which buckets of a version.
struct ShardPlan {
  std::uint32_t world = 1;     ///< learner ranks serving weights
  std::uint32_t replicas = 1;  ///< ranks holding each bucket (2: one fallback copy). <= world.

  /// Whether `rank` holds bucket `index`: (index - rank) mod world < replicas.
  bool serves(std::uint32_t rank, std::uint32_t index) const;
  /// The ranks holding bucket `index`, primary (index % world) first.
  std::vector<std::uint32_t> ranks_of(std::uint32_t index) const;
};

/// A version's buckets as one rank holds them: data[i] for the buckets it serves, null for the
/// rest. The bytes are shared, not copied (the publisher sends them from here).
struct PublishedVersion {
  WeightManifest manifest;
  std::vector<std::shared_ptr<const std::string>> data;  ///< by bucket index; size = buckets
};

/// Fills each bucket's size_bytes and xxh64 checksum from `data` and the manifest's total_bytes.
void seal_manifest(WeightManifest& manifest,
                   const std::vector<std::shared_ptr<const std::string>>& data);
/// `all` with the buckets `rank` does not serve under `plan` set to null.
PublishedVersion shard_of(const PublishedVersion& all, const ShardPlan& plan, std::uint32_t rank);

/// Test hook: what a publisher does instead of serving a bucket. Never set in the product.
enum class ServeFault : std::uint8_t {
  kNone,      ///< serve it
  kFlipByte,  ///< serve a copy with one byte flipped (checksum fails)
  kTruncate,  ///< serve only the first half (size check fails)
  kDie,       ///< close the socket and stop, as a killed process would, without answering
  kHang,      ///< keep the socket open but never answer again (a stuck rank: found by timeout)
};
/// Called on the publisher's thread before each bucket is served; `served_before` counts the
/// earlier requests for this (version, index) this publisher answered.
using ServeFaultHook =
    std::function<ServeFault(PolicyVersion, std::uint32_t index, int served_before)>;

struct WeightPublisherOptions {
  /// Where to bind the ROUTER ("tcp://0.0.0.0:5600", "ipc:///run/ca/w0", "tcp://127.0.0.1:0").
  std::string endpoint = "tcp://127.0.0.1:0";
  /// The run whose requests it answers; others get weights.wrong_run. Default: any run.
  RunId run_id;
  /// CURVE server keys: when set, only allow-listed engine keys may connect.
  std::optional<CurveServerKeys> curve;
  /// ZeroMQ I/O threads; more than 1 helps only above ~2 GB/s per rank. Default: 2.
  int io_threads = 2;
  /// Test only.
  ServeFaultHook fault_hook;
};

/// Serves retained versions' manifests and buckets on one ROUTER socket. A version stays until
/// drop() (driven by VersionRetention); publishing again under the same version replaces it.
class WeightPublisher {
 public:
  static Expected<std::unique_ptr<WeightPublisher>> start(WeightPublisherOptions options);
  ~WeightPublisher();  ///< stops the thread, closes the socket (in-flight sends are dropped)
  WeightPublisher(const WeightPublisher&) = delete;
  WeightPublisher& operator=(const WeightPublisher&) = delete;

  /// The bound endpoint (with the real port for tcp://...:0).
  const std::string& endpoint() const;
  /// Makes `version` fetchable. Checks that data has one entry per bucket and that every held
  /// bucket's size matches the manifest.
  Status publish(PublishedVersion version);
  /// Frees a version (no-op when absent).
  void drop(PolicyVersion version);
  std::vector<PolicyVersion> held_versions() const;
  /// Requests answered so far (manifests + buckets), for tests and stats.
  std::uint64_t served() const;

  struct Impl;

 private:
  explicit WeightPublisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Which versions may be freed: a version is kept while it is the newest published or any live
/// engine has not yet loaded it (its loaded version is older). Engines report what they loaded;
/// an engine that stops heartbeating is declared lost and no longer holds anything back
/// (RL_INFRA_NOTES item 2: never delete a version an engine has not loaded).
class VersionRetention {
 public:
  /// A live engine and the version it holds now (from a checkpoint or a previous run).
  void engine_joined(const WorkerId& engine, PolicyVersion loaded);
  void engine_loaded(const WorkerId& engine, PolicyVersion loaded);
  void engine_lost(const WorkerId& engine);
  void published(PolicyVersion version);
  /// Versions that may be freed now; they are forgotten (returned once).
  std::vector<PolicyVersion> take_releasable();
  const std::set<PolicyVersion>& retained() const { return versions_; }

 private:
  std::map<WorkerId, PolicyVersion> engines_;
  std::set<PolicyVersion> versions_;
};

/// Receives each verified bucket: copy what you need out of `data` before returning (it is the
/// received frame). An error aborts the fetch and is returned by fetch().
using BucketSink = std::function<Status(const WeightBucketInfo& info, std::string_view data)>;

struct WeightFetcherOptions {
  /// Endpoint of each learner rank, by rank (the launch plan's order).
  std::vector<std::string> endpoints;
  ShardPlan plan;
  RunId run_id;
  /// CURVE: the engine's key pair and each rank's public key (one entry: the same for all).
  std::optional<CurveKeyPair> client_keys;
  std::vector<std::string> server_public_z85;
  /// Bucket requests in flight at once, over all ranks. Default: 4.
  int parallel_requests = 4;
  /// Fetches of one bucket that may fail verification before weights_corrupt. Default: 3.
  int max_attempts = 3;
  /// A rank that does not answer one request in this long is skipped. Default: 60 s.
  std::int64_t request_timeout_ms = 60'000;
};

struct FetchStats {
  std::uint64_t bytes = 0;       ///< verified bucket bytes delivered
  std::uint32_t retries = 0;     ///< buckets fetched again (bad checksum/size, rank lost)
  std::uint32_t ranks_lost = 0;  ///< ranks that disconnected or timed out
  double seconds = 0;            ///< first request to last bucket delivered
};

/// Fetches versions from the learner ranks. Errors (category, code):
///   policy/policy.unknown_base      not a full snapshot and its base is not the held version
///   policy/policy.weights_corrupt   a bucket failed size or checksum max_attempts times
///   unavailable/weights.unavailable no live rank holds a bucket
///   timeout/weights.deadline        the deadline passed
///   invalid_input/weights.bad_manifest  unknown checksum algorithm, inconsistent sizes
/// On any error the sink has seen only some buckets: the caller keeps its current weights.
class WeightFetcher {
 public:
  explicit WeightFetcher(WeightFetcherOptions options);
  ~WeightFetcher();

  /// The manifest of `version`, from the first rank that answers.
  Expected<WeightManifest> fetch_manifest(PolicyVersion version, std::int64_t deadline_ms);
  /// Fetches every bucket of `manifest` and hands each, verified, to `sink`. `held`: the version
  /// the caller holds now. `deadline_ms`: for the whole fetch, from now.
  Expected<FetchStats> fetch(const WeightManifest& manifest, PolicyVersion held,
                             const BucketSink& sink, std::int64_t deadline_ms);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
