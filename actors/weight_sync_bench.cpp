// weight_sync_bench: announce-to-all-buckets-verified time of one version (default 1 GiB in 64 MiB
// buckets of random bytes) from one WeightPublisher on TCP loopback to 1 and 4 WeightFetchers
// (one thread each), against raw ZeroMQ on the same link measured in the same run.
//
//   raw   a ROUTER thread answers each 1-frame request from a DEALER with the bucket it names (the
//         same 16 buffers the publisher serves), sent without a copy from memory (the publisher's
//         pattern without codecs, lookups or checksums); each receiver keeps 4 requests in flight,
//         as the fetcher does. Throughput = all bytes received by all receivers / wall time.
//   sync  fetch_manifest + fetch (parallel_requests 4, xxh64 verified, a sink that only counts).
//         Time from the first request for the manifest until the last fetcher's last bucket is
//         verified ("announce" = the engine learning the version exists).
//   ratio sync time / (receivers x bytes / raw throughput with as many receivers); target <= 1.5.
//   cpu   process CPU seconds (user + system, all threads) per GiB delivered, raw and sync: the
//         cost that does not depend on what else runs on the machine.
//
// Each (raw, sync) pair is measured back to back --repeat times (default 3) and the median ratio
// reported, so load from other processes on a shared machine hits both sides alike.
//
// Usage: weight_sync_bench [--mib 1024] [--bucket-mib 64] [--repeat 3]
#include <sys/resource.h>
#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "actors/weight_sync.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

// User + system CPU seconds of the whole process (publisher, fetchers, ZeroMQ I/O threads).
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double raw_throughput(const std::vector<std::shared_ptr<const std::string>>& data, int receivers) {
  const std::size_t buckets = data.size();
  zmq::context_t ctx(2);
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:0");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::atomic<bool> stop{false};
  std::thread server([&] {
    while (!stop) {
      zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      zmq::message_t id, request;
      while (router.recv(id, zmq::recv_flags::dontwait)) {
        (void)router.recv(request, zmq::recv_flags::none);
        std::uint32_t index = 0;
        std::memcpy(&index, request.data(), std::min<std::size_t>(request.size(), 4));
        auto* keep = new std::shared_ptr<const std::string>(data[index % buckets]);
        zmq::message_t frame(
            const_cast<char*>((*keep)->data()), (*keep)->size(),
            [](void*, void* h) { delete static_cast<std::shared_ptr<const std::string>*>(h); },
            keep);
        router.send(id, zmq::send_flags::sndmore);
        router.send(frame, zmq::send_flags::none);
      }
    }
  });
  std::vector<std::thread> clients;
  std::atomic<std::uint64_t> received{0};
  const auto start = Clock::now();
  for (int c = 0; c < receivers; ++c) {
    clients.emplace_back([&] {
      zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
      dealer.set(zmq::sockopt::linger, 0);
      dealer.connect(endpoint);
      std::size_t sent = 0, got = 0;
      auto ask = [&](std::uint32_t index) { dealer.send(zmq::buffer(&index, 4)); };
      for (; sent < std::min<std::size_t>(4, buckets); ++sent) ask(sent);
      while (got < buckets) {
        zmq::message_t frame;
        (void)dealer.recv(frame);
        if (frame.size() != data[0]->size()) std::abort();
        received += frame.size();
        ++got;
        if (sent < buckets) ask(sent++);
      }
    });
  }
  for (auto& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  server.join();
  return received / seconds;
}

int run(int argc, char** argv) {
  std::size_t mib = 1024, bucket_mib = 64, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mib")) mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--bucket-mib")) bucket_mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::strtoull(argv[i + 1], nullptr, 10);
  }
  const std::size_t buckets = std::max<std::size_t>(mib / bucket_mib, 1);
  std::printf("weight_sync_bench: %zu x %zu MiB buckets of random bytes, TCP loopback, %u cores\n",
              buckets, bucket_mib, std::thread::hardware_concurrency());

  PublishedVersion v;
  v.manifest.run_id = RunId{"bench"};
  v.manifest.version = PolicyVersion{2};
  v.manifest.base_version = PolicyVersion{1};
  v.manifest.full_snapshot = true;
  std::mt19937_64 rng(42);
  for (std::size_t i = 0; i < buckets; ++i) {
    std::string data(bucket_mib << 20, '\0');
    for (std::size_t k = 0; k + 8 <= data.size(); k += 8) {
      const std::uint64_t x = rng();
      std::memcpy(&data[k], &x, 8);
    }
    WeightBucketInfo info;
    info.tensors.push_back({"w" + std::to_string(i),
                            TensorDType::kBFloat16,
                            {static_cast<std::int64_t>(data.size() / 2)},
                            0,
                            data.size()});
    v.manifest.buckets.push_back(info);
    v.data.push_back(std::make_shared<const std::string>(std::move(data)));
  }
  seal_manifest(v.manifest, v.data);
  const double bytes = static_cast<double>(v.manifest.total_bytes);

  WeightPublisherOptions po;
  po.run_id = RunId{"bench"};
  auto publisher = WeightPublisher::start(po);
  if (!publisher || !(*publisher)->publish(v)) {
    std::fprintf(stderr, "publisher failed\n");
    return 1;
  }
  WeightFetcherOptions fo;
  fo.endpoints = {(*publisher)->endpoint()};
  fo.run_id = RunId{"bench"};

  std::printf("%-10s %4s %8s %10s %11s %8s %8s %13s %14s\n", "fetchers", "rep", "GiB", "raw GB/s",
              "sync GB/s", "sync s", "ratio", "raw cpu s/GiB", "sync cpu s/GiB");
  for (int fetchers : {1, 4}) {
    std::vector<double> ratios;
    for (std::size_t rep = 0; rep < std::max<std::size_t>(repeat, 1); ++rep) {
      const double cpu0 = cpu_seconds();
      const double raw = raw_throughput(v.data, fetchers);
      const double cpu1 = cpu_seconds();
      std::vector<std::thread> threads;
      std::atomic<int> failures{0};
      const auto start = Clock::now();
      for (int f = 0; f < fetchers; ++f) {
        threads.emplace_back([&] {
          WeightFetcher fetcher(fo);
          auto m = fetcher.fetch_manifest(PolicyVersion{2}, 60'000);
          if (!m) {
            std::fprintf(stderr, "%s\n", m.error().to_string().c_str());
            ++failures;
            return;
          }
          std::uint64_t delivered = 0;
          auto stats = fetcher.fetch(
              *m, PolicyVersion{1},
              [&](const WeightBucketInfo&, std::string_view data) {
                delivered += data.size();
                return Status();
              },
              600'000);
          if (!stats || delivered != m->total_bytes) {
            std::fprintf(stderr, "fetch failed: %s\n",
                         stats ? "short" : stats.error().to_string().c_str());
            ++failures;
          }
        });
      }
      for (auto& t : threads) t.join();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const double cpu2 = cpu_seconds();
      if (failures) return 1;
      const double floor = fetchers * bytes / raw;
      const double gib = fetchers * bytes / (1 << 30);
      std::printf("%-10d %4zu %8.2f %10.3f %11.3f %8.3f %8.2f %13.2f %14.2f\n", fetchers, rep, gib,
                  raw / 1e9, fetchers * bytes / seconds / 1e9, seconds, seconds / floor,
                  (cpu1 - cpu0) / gib, (cpu2 - cpu1) / gib);
      std::fflush(stdout);
      ratios.push_back(seconds / floor);
    }
    std::sort(ratios.begin(), ratios.end());
    std::printf("%-10d median ratio %.2f\n", fetchers, ratios[ratios.size() / 2]);
  }
  std::printf("ratio = sync time / (fetchers x bytes / raw throughput); target <= 1.5\n");
  return 0;
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) { return cuda_agent::run(argc, argv); }
