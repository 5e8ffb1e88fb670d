#include "actors/weight_sync.h"

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/log.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

Error weights_error(ErrorCategory category, const char* code, std::string message) {
  return make_error(category, code, std::move(message));
}

std::string v_str(PolicyVersion v) { return std::to_string(v.value()); }

// A frame that sends `bytes` from their shared home, without a copy.
zmq::message_t shared_frame(std::shared_ptr<const std::string> bytes) {
  auto* keep = new std::shared_ptr<const std::string>(std::move(bytes));
  return zmq::message_t(
      const_cast<char*>((*keep)->data()), (*keep)->size(),
      [](void*, void* hint) { delete static_cast<std::shared_ptr<const std::string>*>(hint); },
      keep);
}

}  // namespace

std::uint64_t weight_checksum(std::string_view bytes) {
  return XXH64(bytes.data(), bytes.size(), 0);
}

bool ShardPlan::serves(std::uint32_t rank, std::uint32_t index) const {
  const std::uint32_t w = std::max<std::uint32_t>(world, 1);
  return (index % w + w - rank % w) % w < std::max<std::uint32_t>(replicas, 1);
}

std::vector<std::uint32_t> ShardPlan::ranks_of(std::uint32_t index) const {
  const std::uint32_t w = std::max<std::uint32_t>(world, 1);
  std::vector<std::uint32_t> out;
  for (std::uint32_t k = 0; k < std::min(std::max<std::uint32_t>(replicas, 1), w); ++k) {
    out.push_back((index % w + w - k) % w);
  }
  return out;
}

void seal_manifest(WeightManifest& manifest,
                   const std::vector<std::shared_ptr<const std::string>>& data) {
  manifest.total_bytes = 0;
  for (std::size_t i = 0; i < manifest.buckets.size() && i < data.size(); ++i) {
    WeightBucketInfo& b = manifest.buckets[i];
    b.index = static_cast<std::uint32_t>(i);
    b.size_bytes = data[i]->size();
    b.checksum = weight_checksum(*data[i]);
    b.checksum_algorithm = std::string(kWeightChecksumXxh64);
    manifest.total_bytes += b.size_bytes;
  }
}

PublishedVersion shard_of(const PublishedVersion& all, const ShardPlan& plan, std::uint32_t rank) {
  PublishedVersion out = all;
  for (std::uint32_t i = 0; i < out.data.size(); ++i) {
    if (!plan.serves(rank, i)) out.data[i] = nullptr;
  }
  return out;
}

// ---- VersionRetention ---------------------------------------------------------------------------

void VersionRetention::engine_joined(const WorkerId& engine, PolicyVersion loaded) {
  engines_[engine] = loaded;
}
void VersionRetention::engine_loaded(const WorkerId& engine, PolicyVersion loaded) {
  engines_[engine] = loaded;
}
void VersionRetention::engine_lost(const WorkerId& engine) { engines_.erase(engine); }
void VersionRetention::published(PolicyVersion version) { versions_.insert(version); }

std::vector<PolicyVersion> VersionRetention::take_releasable() {
  std::vector<PolicyVersion> out;
  if (versions_.empty()) return out;
  const PolicyVersion newest = *versions_.rbegin();
  for (auto it = versions_.begin(); it != versions_.end();) {
    bool needed = *it == newest;
    for (const auto& [engine, loaded] : engines_) needed = needed || loaded < *it;
    if (needed) {
      ++it;
    } else {
      out.push_back(*it);
      it = versions_.erase(it);
    }
  }
  return out;
}

// ---- WeightPublisher ----------------------------------------------------------------------------

struct WeightPublisher::Impl {
  struct Held {
    PublishedVersion version;
    std::shared_ptr<const std::string> manifest_bytes;
  };

  explicit Impl(WeightPublisherOptions o)
      : options(std::move(o)),
        context(std::max(options.io_threads, 1)),
        router(context, zmq::socket_type::router) {}

  Status bind();
  void run();
  void on_request();
  void on_zap();
  void reply(zmq::message_t& peer, const WeightFetchReply& r,
             std::optional<zmq::message_t> payload);

  WeightPublisherOptions options;
  zmq::context_t context;
  zmq::socket_t router;
  std::optional<zmq::socket_t> zap;
  std::set<std::string> allowed_keys;  // raw 32-byte keys
  std::string bound;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> served{0};
  std::map<std::pair<std::uint64_t, std::uint32_t>, int> serve_counts;  // thread only
  bool hung = false;                                                    // thread only (test)

  mutable std::mutex mutex;
  std::map<PolicyVersion, std::shared_ptr<const Held>> versions;  // under mutex
};

Status WeightPublisher::Impl::bind() {
  try {
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::router_mandatory, false);
    if (options.curve) {
      for (const auto& key : options.curve->allowed_client_public_z85) {
        std::uint8_t raw[32];
        if (key.size() != 40 || !zmq_z85_decode(raw, key.c_str())) {
          return weights_error(ErrorCategory::kInvalidInput, "weights.curve_key",
                               "allowed engine key '" + key + "' is not a Z85 public key");
        }
        allowed_keys.insert(std::string(reinterpret_cast<char*>(raw), 32));
      }
      zap.emplace(context, zmq::socket_type::rep);
      zap->bind("inproc://zeromq.zap.01");
      RETURN_IF_ERROR(apply_curve_server(router, *options.curve, "weights"));
    }
    router.bind(options.endpoint);
    bound = router.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return zmq_failure("binding the weight publisher on " + options.endpoint, e);
  }
  return Status::ok();
}

void WeightPublisher::Impl::on_zap() {
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  if (!recv_multipart(*zap, parts, 8, dropped)) return;
  // ZAP 1.0 (RFC 27): version, request id, domain, address, identity, mechanism, credentials.
  const bool allowed = parts.size() >= 7 && view(parts[0]) == "1.0" && view(parts[5]) == "CURVE" &&
                       parts[6].size() == 32 && allowed_keys.count(std::string(view(parts[6])));
  zap->send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
  zap->send(parts.size() > 1 ? zmq::buffer(view(parts[1])) : zmq::const_buffer(),
            zmq::send_flags::sndmore);
  zap->send(allowed ? zmq::str_buffer("200") : zmq::str_buffer("400"), zmq::send_flags::sndmore);
  zap->send(allowed ? zmq::str_buffer("OK") : zmq::str_buffer("key not allowed"),
            zmq::send_flags::sndmore);
  zap->send(zmq::const_buffer(), zmq::send_flags::sndmore);
  zap->send(zmq::const_buffer(), zmq::send_flags::none);
}

void WeightPublisher::Impl::reply(zmq::message_t& peer, const WeightFetchReply& r,
                                  std::optional<zmq::message_t> payload) {
  zmq::message_t id;
  id.copy(peer);
  router.send(id, zmq::send_flags::sndmore);
  router.send(take_frame(encode_weight_fetch_reply(r)),
              payload ? zmq::send_flags::sndmore : zmq::send_flags::none);
  if (payload) router.send(*payload, zmq::send_flags::none);
}

void WeightPublisher::Impl::on_request() {
  std::vector<zmq::message_t> parts;
  std::size_t dropped = 0;
  if (!recv_multipart(router, parts, 2, dropped) || parts.size() != 2 || dropped) return;
  auto request = decode_weight_fetch_request(view(parts[1]));
  if (!request || hung) return;  // not ours: no answer (the sender's request times out)
  WeightFetchReply r{
      request->request_id, request->version, request->manifest_only, request->bucket_index, 0,
      Status::ok()};
  auto refuse = [&](ErrorCategory c, const char* code, std::string message) {
    r.outcome = weights_error(c, code, std::move(message));
    reply(parts[0], r, std::nullopt);
  };
  if (!options.run_id.value().empty() && request->run_id != options.run_id) {
    return refuse(ErrorCategory::kInvalidInput, "weights.wrong_run",
                  "this publisher serves run '" + options.run_id.value() + "', not '" +
                      request->run_id.value() + "'");
  }
  std::shared_ptr<const Held> held;
  {
    std::lock_guard lock(mutex);
    auto it = versions.find(request->version);
    if (it != versions.end()) held = it->second;
  }
  if (!held) {
    return refuse(ErrorCategory::kNotFound, "weights.not_held",
                  "this rank holds no version " + v_str(request->version));
  }
  served.fetch_add(1);
  if (request->manifest_only) {
    r.payload_bytes = held->manifest_bytes->size();
    return reply(parts[0], r, shared_frame(held->manifest_bytes));
  }
  const std::uint32_t i = request->bucket_index;
  if (i >= held->version.data.size() || !held->version.data[i]) {
    return refuse(ErrorCategory::kNotFound, "weights.not_held",
                  "this rank does not serve bucket " + std::to_string(i) + " of version " +
                      v_str(request->version));
  }
  std::shared_ptr<const std::string> data = held->version.data[i];
  if (options.fault_hook) {
    int& count = serve_counts[{request->version.value(), i}];
    switch (options.fault_hook(request->version, i, count++)) {
      case ServeFault::kNone: break;
      case ServeFault::kFlipByte: {
        auto copy = std::make_shared<std::string>(*data);
        if (!copy->empty()) (*copy)[copy->size() / 2] ^= 0x10;
        data = std::move(copy);
        break;
      }
      case ServeFault::kTruncate:
        data = std::make_shared<const std::string>(data->substr(0, data->size() / 2));
        break;
      case ServeFault::kDie:
        stop = true;
        router.close();
        return;
      case ServeFault::kHang: hung = true; return;
    }
  }
  r.payload_bytes = data->size();
  reply(parts[0], r, shared_frame(std::move(data)));
}

void WeightPublisher::Impl::run() {
  name_this_thread("weight-pub");
  while (!stop) {
    std::vector<zmq::pollitem_t> items = {{router.handle(), 0, ZMQ_POLLIN, 0}};
    if (zap) items.push_back({zap->handle(), 0, ZMQ_POLLIN, 0});
    try {
      zmq::poll(items, std::chrono::milliseconds(20));
      if (zap && (items[1].revents & ZMQ_POLLIN)) on_zap();
      if (items[0].revents & ZMQ_POLLIN) {
        for (int k = 0; k < 64 && !stop && (router.get(zmq::sockopt::events) & ZMQ_POLLIN); ++k) {
          on_request();
        }
      }
    } catch (const zmq::error_t& e) {
      if (stop) return;
      log_warn("weight publisher socket error", {{"endpoint", bound}, {"error", e.what()}});
    }
  }
}

WeightPublisher::WeightPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Expected<std::unique_ptr<WeightPublisher>> WeightPublisher::start(WeightPublisherOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->bind());
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<WeightPublisher>(new WeightPublisher(std::move(impl)));
}

WeightPublisher::~WeightPublisher() {
  impl_->stop = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

const std::string& WeightPublisher::endpoint() const { return impl_->bound; }

Status WeightPublisher::publish(PublishedVersion version) {
  const WeightManifest& m = version.manifest;
  if (version.data.size() != m.buckets.size()) {
    return weights_error(ErrorCategory::kInvalidInput, "weights.bad_manifest",
                         "version " + v_str(m.version) + ": " +
                             std::to_string(version.data.size()) + " bucket slots for " +
                             std::to_string(m.buckets.size()) + " buckets");
  }
  for (std::size_t i = 0; i < m.buckets.size(); ++i) {
    if (m.buckets[i].index != i ||
        (version.data[i] && version.data[i]->size() != m.buckets[i].size_bytes)) {
      return weights_error(ErrorCategory::kInvalidInput, "weights.bad_manifest",
                           "version " + v_str(m.version) + " bucket " + std::to_string(i) +
                               ": index or size disagrees with the manifest");
    }
  }
  auto held = std::make_shared<Impl::Held>();
  held->manifest_bytes = std::make_shared<const std::string>(encode_weight_manifest(m));
  held->version = std::move(version);
  std::lock_guard lock(impl_->mutex);
  impl_->versions[held->version.manifest.version] = std::move(held);
  return Status::ok();
}

void WeightPublisher::drop(PolicyVersion version) {
  std::lock_guard lock(impl_->mutex);
  impl_->versions.erase(version);
}

std::vector<PolicyVersion> WeightPublisher::held_versions() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<PolicyVersion> out;
  for (const auto& [v, held] : impl_->versions) out.push_back(v);
  return out;
}

std::uint64_t WeightPublisher::served() const { return impl_->served.load(); }

}  // namespace cuda_agent
