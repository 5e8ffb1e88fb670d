// WeightFetcher (actors/weight_sync.h): one DEALER per learner rank, each watched by a socket
// monitor so a rank that disconnects mid-transfer is dropped at once instead of at its timeout.
#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>

#include "actors/weight_sync.h"
#include "core/log.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

Error fetch_error(ErrorCategory category, const char* code, std::string message) {
  return make_error(category, code, std::move(message));
}

}  // namespace

struct WeightFetcher::Impl {
  struct Rank {
    zmq::socket_t dealer;
    zmq::socket_t monitor;
    bool disconnected = false;  // the last monitor event was a disconnect
  };
  struct Pending {
    std::uint32_t bucket;
    std::uint32_t rank;
    Clock::time_point timeout;
  };

  explicit Impl(WeightFetcherOptions o) : options(std::move(o)), context(1) {}
  Status connect();
  void drain_monitor(std::uint32_t r, std::vector<std::uint32_t>* lost);
  std::string next_id() {
    return "wf-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "-" +
           std::to_string(++sequence);
  }
  void send(std::uint32_t r, const WeightFetchRequest& q) {
    ranks[r].dealer.send(zmq::buffer(encode_weight_fetch_request(q)), zmq::send_flags::none);
  }

  WeightFetcherOptions options;
  zmq::context_t context;
  std::vector<Rank> ranks;
  std::uint64_t sequence = 0;
  Status connected;
};

Status WeightFetcher::Impl::connect() {
  try {
    for (std::size_t r = 0; r < options.endpoints.size(); ++r) {
      Rank rank{zmq::socket_t(context, zmq::socket_type::dealer),
                zmq::socket_t(context, zmq::socket_type::pair)};
      rank.dealer.set(zmq::sockopt::linger, 0);
      if (options.client_keys) {
        if (options.server_public_z85.empty()) {
          return fetch_error(ErrorCategory::kInvalidInput, "weights.curve_key",
                             "client keys given but no publisher public key");
        }
        const std::string& server =
            options.server_public_z85[std::min(r, options.server_public_z85.size() - 1)];
        RETURN_IF_ERROR(apply_curve_client(rank.dealer, {server, *options.client_keys}));
      }
      const std::string monitor = "inproc://weight-fetch-monitor-" +
                                  std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "-" +
                                  std::to_string(r);
      if (zmq_socket_monitor(rank.dealer.handle(), monitor.c_str(),
                             ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
        throw zmq::error_t();
      }
      rank.monitor.connect(monitor);
      rank.dealer.connect(options.endpoints[r]);
      ranks.push_back(std::move(rank));
    }
  } catch (const zmq::error_t& e) {
    return zmq_failure("connecting the weight fetcher", e);
  }
  return Status::ok();
}

void WeightFetcher::Impl::drain_monitor(std::uint32_t r, std::vector<std::uint32_t>* lost) {
  zmq::message_t event, address;
  while (ranks[r].monitor.recv(event, zmq::recv_flags::dontwait)) {
    if (event.more()) (void)ranks[r].monitor.recv(address, zmq::recv_flags::none);
    if (event.size() < 2) continue;
    std::uint16_t id = 0;
    std::memcpy(&id, event.data(), 2);
    ranks[r].disconnected = id == ZMQ_EVENT_DISCONNECTED;
    if (ranks[r].disconnected && lost) lost->push_back(r);
  }
}

WeightFetcher::WeightFetcher(WeightFetcherOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->connected = impl_->connect();
}

WeightFetcher::~WeightFetcher() = default;

Expected<WeightManifest> WeightFetcher::fetch_manifest(PolicyVersion version,
                                                       std::int64_t deadline_ms) {
  Impl& s = *impl_;
  RETURN_IF_ERROR(s.connected);
  const auto deadline = Clock::now() + std::chrono::milliseconds(deadline_ms);
  Error last = fetch_error(
      ErrorCategory::kUnavailable, "weights.unavailable",
      "no learner rank holds the manifest of version " + std::to_string(version.value()));
  for (std::uint32_t r = 0; r < s.ranks.size(); ++r) {
    s.drain_monitor(r, nullptr);
    if (s.ranks[r].disconnected) continue;
    WeightFetchRequest q{RequestId{s.next_id()}, s.options.run_id, version, true, 0};
    s.send(r, q);
    const auto until =
        std::min(deadline, Clock::now() + std::chrono::milliseconds(s.options.request_timeout_ms));
    while (Clock::now() < until) {
      zmq::pollitem_t item{s.ranks[r].dealer.handle(), 0, ZMQ_POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(1)));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      std::size_t dropped = 0;
      if (!recv_multipart(s.ranks[r].dealer, parts, 2, dropped)) continue;
      auto reply = decode_weight_fetch_reply(view(parts[0]));
      if (!reply || reply->request_id != q.request_id) continue;  // stale
      if (!reply->outcome) {
        last = reply->outcome.error();
        break;
      }
      if (parts.size() != 2) break;
      auto manifest = decode_weight_manifest(view(parts[1]), {.max_bytes = 256u << 20});
      if (!manifest)
        return manifest.error().with_context("manifest from " + s.options.endpoints[r]);
      if (manifest->version != version) break;
      return manifest;
    }
    if (Clock::now() >= deadline) {
      return fetch_error(
          ErrorCategory::kTimeout, "weights.deadline",
          "no manifest of version " + std::to_string(version.value()) + " before the deadline");
    }
  }
  return last;
}

Expected<FetchStats> WeightFetcher::fetch(const WeightManifest& manifest, PolicyVersion held,
                                          const BucketSink& sink, std::int64_t deadline_ms) {
  Impl& s = *impl_;
  RETURN_IF_ERROR(s.connected);
  const std::string what = "version " + std::to_string(manifest.version.value());
  if (!manifest.full_snapshot && manifest.base_version != held) {
    return fetch_error(ErrorCategory::kPolicy, "policy.unknown_base",
                       what + " applies onto version " +
                           std::to_string(manifest.base_version.value()) + ", this engine holds " +
                           std::to_string(held.value()));
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < manifest.buckets.size(); ++i) {
    const WeightBucketInfo& b = manifest.buckets[i];
    total += b.size_bytes;
    if (b.index != i || b.checksum_algorithm != kWeightChecksumXxh64) {
      return fetch_error(ErrorCategory::kInvalidInput, "weights.bad_manifest",
                         what + " bucket " + std::to_string(i) + ": index " +
                             std::to_string(b.index) + ", checksum algorithm '" +
                             b.checksum_algorithm + "' (want xxh64)");
    }
  }
  if (total != manifest.total_bytes) {
    return fetch_error(ErrorCategory::kInvalidInput, "weights.bad_manifest",
                       what + ": buckets sum to " + std::to_string(total) +
                           " bytes, total_bytes says " + std::to_string(manifest.total_bytes));
  }
  if (s.ranks.empty()) {
    return fetch_error(ErrorCategory::kInvalidInput, "weights.no_ranks", "no learner endpoints");
  }

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(deadline_ms);
  const auto request_timeout = std::chrono::milliseconds(s.options.request_timeout_ms);
  const std::uint32_t world = static_cast<std::uint32_t>(s.ranks.size());
  std::vector<bool> dead(world, false);
  for (std::uint32_t r = 0; r < world; ++r) {
    s.drain_monitor(r, nullptr);
    dead[r] = s.ranks[r].disconnected;
  }
  struct BucketState {
    std::vector<std::uint32_t> candidates;  // ranks to ask, in order
    std::size_t cursor = 0;
    std::vector<bool> not_held;
    int bad = 0;
    bool done = false;
  };
  std::vector<BucketState> buckets(manifest.buckets.size());
  std::deque<std::uint32_t> queue;
  for (std::uint32_t i = 0; i < buckets.size(); ++i) {
    buckets[i].candidates = s.options.plan.ranks_of(i);
    for (std::uint32_t r = 0; r < world; ++r) {
      if (std::find(buckets[i].candidates.begin(), buckets[i].candidates.end(), r) ==
          buckets[i].candidates.end()) {
        buckets[i].candidates.push_back(r);
      }
    }
    buckets[i].candidates.erase(
        std::remove_if(buckets[i].candidates.begin(), buckets[i].candidates.end(),
                       [&](std::uint32_t r) { return r >= world; }),
        buckets[i].candidates.end());
    buckets[i].not_held.assign(world, false);
    queue.push_back(i);
  }
  std::unordered_map<std::string, Impl::Pending> pending;
  FetchStats stats;
  std::size_t done = 0;

  auto requeue_rank = [&](std::uint32_t r) {
    if (dead[r]) return;
    dead[r] = true;
    ++stats.ranks_lost;
    log_warn("weight fetch: learner rank lost, using another rank's copy",
             {{"endpoint", s.options.endpoints[r]},
              {"version", std::to_string(manifest.version.value())}});
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->second.rank == r) {
        queue.push_front(it->second.bucket);
        ++stats.retries;
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  };

  while (done < buckets.size()) {
    // Issue requests up to the window.
    while (!queue.empty() &&
           static_cast<int>(pending.size()) < std::max(s.options.parallel_requests, 1)) {
      const std::uint32_t i = queue.front();
      queue.pop_front();
      BucketState& b = buckets[i];
      std::optional<std::uint32_t> rank;
      for (std::size_t k = 0; k < b.candidates.size() && !rank; ++k) {
        const std::uint32_t r = b.candidates[(b.cursor + k) % b.candidates.size()];
        if (!dead[r] && !b.not_held[r]) {
          rank = r;
          b.cursor = (b.cursor + k) % b.candidates.size();
        }
      }
      if (!rank) {
        return fetch_error(
            ErrorCategory::kUnavailable, "weights.unavailable",
            what + " bucket " + std::to_string(i) + ": no live learner rank holds it");
      }
      WeightFetchRequest q{RequestId{s.next_id()}, s.options.run_id, manifest.version, false, i};
      s.send(*rank, q);
      pending[q.request_id.value()] = {i, *rank, Clock::now() + request_timeout};
    }
    // Wait for a reply, a disconnect, a request timeout or the deadline.
    auto now = Clock::now();
    if (now >= deadline) {
      return fetch_error(ErrorCategory::kTimeout, "weights.deadline",
                         what + ": " + std::to_string(done) + " of " +
                             std::to_string(buckets.size()) + " buckets before the deadline");
    }
    auto wake = deadline;
    for (const auto& [id, p] : pending) wake = std::min(wake, p.timeout);
    std::vector<zmq::pollitem_t> items;
    for (std::uint32_t r = 0; r < world; ++r) {
      items.push_back({s.ranks[r].dealer.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({s.ranks[r].monitor.handle(), 0, ZMQ_POLLIN, 0});
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now);
    zmq::poll(items, std::max(wait, std::chrono::milliseconds(1)));
    now = Clock::now();
    for (std::uint32_t r = 0; r < world; ++r) {
      if (items[2 * r + 1].revents & ZMQ_POLLIN) {
        std::vector<std::uint32_t> lost;
        s.drain_monitor(r, &lost);
        if (!lost.empty()) requeue_rank(r);
      }
      if (!(items[2 * r].revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      std::size_t dropped = 0;
      while (recv_multipart(s.ranks[r].dealer, parts, 2, dropped)) {
        auto reply = decode_weight_fetch_reply(view(parts[0]));
        if (!reply) continue;
        auto it = pending.find(reply->request_id.value());
        if (it == pending.end()) continue;  // a reply to a request already given up on
        const std::uint32_t i = it->second.bucket;
        pending.erase(it);
        BucketState& b = buckets[i];
        const WeightBucketInfo& info = manifest.buckets[i];
        if (!reply->outcome) {
          if (reply->outcome.error().code != "weights.not_held") return reply->outcome.error();
          b.not_held[r] = true;
          queue.push_front(i);
          continue;
        }
        const std::string_view data = parts.size() == 2 && !dropped ? view(parts[1]) : "";
        std::string problem;
        if (data.size() != info.size_bytes) {
          problem = std::to_string(data.size()) + " bytes, the manifest says " +
                    std::to_string(info.size_bytes);
        } else if (weight_checksum(data) != info.checksum) {
          problem = "xxh64 checksum mismatch";
        }
        if (!problem.empty()) {
          ++b.bad;
          log_warn("weight fetch: bad bucket, fetching it again",
                   {{"version", std::to_string(manifest.version.value())},
                    {"bucket", std::to_string(i)},
                    {"endpoint", s.options.endpoints[r]},
                    {"problem", problem},
                    {"attempt", std::to_string(b.bad)}});
          if (b.bad >= s.options.max_attempts) {
            return fetch_error(ErrorCategory::kPolicy, "policy.weights_corrupt",
                               what + " bucket " + std::to_string(i) + " failed verification " +
                                   std::to_string(b.bad) + " times (last: " + problem + ")");
          }
          ++stats.retries;
          b.cursor = (b.cursor + 1) % b.candidates.size();  // another copy first, if any
          queue.push_front(i);
          continue;
        }
        RETURN_IF_ERROR(sink(info, data));
        b.done = true;
        stats.bytes += data.size();
        ++done;
      }
    }
    // Ranks whose requests timed out are treated as lost for this fetch.
    std::vector<std::uint32_t> late;
    for (const auto& [id, p] : pending) {
      if (p.timeout <= now) late.push_back(p.rank);
    }
    for (std::uint32_t r : late) requeue_rank(r);
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

}  // namespace cuda_agent
