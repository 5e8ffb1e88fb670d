// bench_store: the run store's two performance figures (docs/BENCHMARKS.md).
//
// 1. Acknowledged append throughput of realistic episodes (trajectories of 64 KiB to 2 MiB, drawn
//    log-uniformly, made of token ids, logprobs, loss mask and tool text as a trajectory holds)
//    with kAppenders threads, each writing one episode at a time and waiting for its ack. The
//    anchor, in the same run with the same RocksDB options: the same threads doing RocksDB's own
//    Put(sync = true) of the same trajectory bytes into the same column family. Reps alternate
//    raw and store, each in a fresh directory; the median of each is reported and their ratio.
// 2. RFT selection over 100,000 stored episodes (256-byte trajectories, 2,000 tasks, per-task cap
//    4, filters on): wall time of select_rft, first call after reopening (block cache empty) and
//    the median of 5 warm calls.
// Every figure is checked first: counts after each timed run, bytes read back, and the RFT result
// against brute force over the same records.
#include <rocksdb/db.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "storage/rocks_adapter.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kAppenders = 4;
constexpr int kReps = 7;
constexpr std::size_t kBytesPerRep = 160u << 20;
constexpr int kRftEpisodes = 100'000;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_store: FAILED: %s\n", what.c_str());
  std::exit(1);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Trajectory-like bytes: per token a uint32 id below 151,936, a float32 logprob and a mask byte,
// with runs of ASCII tool output between turns.
std::string make_pool(std::size_t size, std::mt19937_64& rng) {
  std::string pool;
  pool.reserve(size + 4096);
  std::uniform_int_distribution<std::uint32_t> token(0, 151'935);
  std::exponential_distribution<float> nll(4.0f);
  const char* text = "error: identifier \"blockDim\" is undefined; nvcc -O3 -arch=sm_90 ok ";
  while (pool.size() < size) {
    for (int i = 0; i < 512; ++i) {
      const std::uint32_t t = token(rng);
      const float lp = -nll(rng);
      pool.append(reinterpret_cast<const char*>(&t), 4);
      pool.append(reinterpret_cast<const char*>(&lp), 4);
    }
    pool.append(512, '\1');
    for (int i = 0; i < 20; ++i) pool.append(text);
  }
  return pool;
}

struct Episodes {
  std::vector<std::string> ids;
  std::vector<std::string_view> trajectories;  // slices of the pool, sizes multiple of 8
  std::size_t bytes = 0;
};

Episodes draw_episodes(const std::string& pool, std::size_t total, std::mt19937_64& rng) {
  Episodes e;
  std::uniform_real_distribution<double> log_size(std::log(64.0 * 1024), std::log(2048.0 * 1024));
  while (e.bytes < total) {
    const std::size_t size = static_cast<std::size_t>(std::exp(log_size(rng))) / 8 * 8;
    const std::size_t offset = rng() % (pool.size() - size) / 8 * 8;
    e.ids.push_back("e" + std::to_string(e.ids.size()));
    e.trajectories.push_back(std::string_view(pool).substr(offset, size));
    e.bytes += size;
  }
  return e;
}

EpisodeRecord episode(const std::string& id, std::string trajectory) {
  EpisodeRecord r;
  r.run_id = RunId{"bench"};
  r.episode_id = EpisodeId{id};
  r.task_id = TaskId{"task" + std::to_string(std::hash<std::string>{}(id) % 500)};
  r.stage = EpisodeStage::kAgenticPpo;
  r.policy_version = PolicyVersion{7};
  r.final_reward = 2;
  r.turns = 40;
  r.total_tokens = trajectory.size() / 9;
  r.created_unix_ms = 1'800'000'000'000;
  r.trajectory_bytes = std::move(trajectory);
  return r;
}

// Runs `work(i)` for i in [0, n) on kAppenders threads; returns the wall time in seconds.
template <class Work>
double run_parallel(std::size_t n, Work&& work) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < kAppenders; ++t) {
    threads.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) work(i);
    });
  }
  for (auto& t : threads) t.join();
  return seconds_since(start);
}

double raw_rocksdb_rep(const std::string& dir, const Episodes& eps) {
  StoreOptions o;
  o.dir = dir;
  rocks::StoreRocksOptions ro = rocks::make_options(o);
  ro.db.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  if (!rocksdb::DB::Open(ro.db, dir, ro.column_families, &handles, &raw).ok()) fail("open raw");
  auto* cf = handles[static_cast<int>(store_keys::Cf::kEpisodes)];
  rocksdb::WriteOptions sync;
  sync.sync = true;
  const double s = run_parallel(eps.ids.size(), [&](std::size_t i) {
    const std::string key = store_keys::episode_key(RunId{"bench"}, EpisodeId{eps.ids[i]});
    const auto& t = eps.trajectories[i];
    if (!raw->Put(sync, cf, key, rocksdb::Slice(t.data(), t.size())).ok()) fail("raw Put");
  });
  std::uint64_t keys = 0;  // check: every Put is there
  std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), cf));
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++keys;
  if (keys != eps.ids.size()) fail("raw RocksDB holds " + std::to_string(keys) + " episodes");
  it.reset();
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
  return s;
}

std::vector<double> writes_per_batch;  // group commit at work, per store run

double store_rep(const std::string& dir, const Episodes& eps) {
  StoreOptions o;
  o.dir = dir;
  auto store = RunStore::open(o, StoreMode::kWrite);
  if (!store) fail(store.error().to_string());
  std::vector<StoreWrite> writes(eps.ids.size());  // built before the clock starts
  for (std::size_t i = 0; i < writes.size(); ++i) {
    writes[i].episodes.push_back(episode(eps.ids[i], std::string(eps.trajectories[i])));
  }
  const double s = run_parallel(eps.ids.size(), [&](std::size_t i) {
    if (Status st = (*store)->write(std::move(writes[i]), 60s); !st) fail(st.error().to_string());
  });
  const WriteStats ws = (*store)->write_stats();
  writes_per_batch.push_back(static_cast<double>(ws.acknowledged_writes) /
                             static_cast<double>(std::max<std::uint64_t>(1, ws.synced_batches)));
  auto n = (*store)->count_episodes(RunId{"bench"});
  if (!n || *n != eps.ids.size()) fail("the store does not hold every acknowledged episode");
  for (std::size_t i : {std::size_t{0}, eps.ids.size() / 2, eps.ids.size() - 1}) {
    auto back = (*store)->get_episode(RunId{"bench"}, EpisodeId{eps.ids[i]});
    if (!back || back->trajectory_bytes != eps.trajectories[i]) fail("episode read back differs");
  }
  return s;
}

void append_throughput(const std::string& root, std::mt19937_64& rng) {
  const std::string pool = make_pool(48u << 20, rng);
  std::vector<double> raw_mbps, store_mbps, ratios;
  std::size_t episodes = 0;
  double mb = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    const Episodes eps = draw_episodes(pool, kBytesPerRep, rng);
    double raw_s = 0, store_s = 0;
    for (int k = 0; k < 2; ++k) {  // alternate which goes first, against drift
      const bool raw = (k == 0) == (rep % 2 == 0);
      const std::string dir = root + "/append-" + std::to_string(rep) + (raw ? "-raw" : "-store");
      (raw ? raw_s : store_s) = raw ? raw_rocksdb_rep(dir, eps) : store_rep(dir, eps);
      std::filesystem::remove_all(dir);
    }
    mb = static_cast<double>(eps.bytes) / 1e6;
    episodes += eps.ids.size();
    raw_mbps.push_back(mb / raw_s);
    store_mbps.push_back(mb / store_s);
    ratios.push_back(raw_s / store_s);
  }
  const double per_episode_mb = mb * kReps / static_cast<double>(episodes);
  std::printf(
      "append: %d appenders, episodes of 64 KiB-2 MiB (mean %.2f MB), %.0f MB per run, "
      "%d paired runs (raw and store back to back, order alternating)\n",
      kAppenders, per_episode_mb, mb, kReps);
  std::printf(
      "  how: wall time from the first write to the last ack of a run, MB = trajectory bytes "
      "(1e6); raw = Put(sync) of the bytes alone, store = write() of an episode (encode, "
      "6 index entries, duplicate check, group commit), both with the store's options\n");
  std::printf("  RocksDB Put(sync)     median %7.1f MB/s %7.1f episodes/s\n", median(raw_mbps),
              median(raw_mbps) / per_episode_mb);
  std::printf("  RunStore ack'd write  median %7.1f MB/s %7.1f episodes/s\n", median(store_mbps),
              median(store_mbps) / per_episode_mb);
  std::printf("  writes per synced batch (store): median %.2f\n", median(writes_per_batch));
  std::printf("  ratio store / RocksDB median of pairs %.3f (min %.3f, max %.3f)  target >= 0.8\n",
              median(ratios), *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(ratios.begin(), ratios.end()));
}

void rft_selection(const std::string& root, std::mt19937_64& rng) {
  const std::string dir = root + "/rft";
  StoreOptions o;
  o.dir = dir;
  std::vector<EpisodeSummary> all;
  {
    auto store = RunStore::open(o, StoreMode::kWrite);
    if (!store) fail(store.error().to_string());
    const double tiers[] = {-1, -1, 1, 2, 3};
    std::vector<StoreWrite> writes(kRftEpisodes / 500);
    for (int i = 0; i < kRftEpisodes; ++i) {
      EpisodeRecord e = episode("e" + std::to_string(i), std::string(256, 'x'));
      e.run_id = RunId{"rft"};
      e.task_id = TaskId{"task" + std::to_string(rng() % 2000)};
      e.final_reward = tiers[rng() % 5];
      e.turns = static_cast<std::uint32_t>(rng() % 60);
      e.invalid_tool_calls = static_cast<std::uint32_t>(rng() % 4);
      e.wasted_loops = static_cast<std::uint32_t>(rng() % 3);
      e.total_tokens = 1000 + rng() % 100'000;
      e.status = rng() % 10 == 0 ? EpisodeStatus::kTruncated : EpisodeStatus::kCompleted;
      all.push_back(e);
      all.back().trajectory_size = 256;
      writes[i / 500].episodes.push_back(std::move(e));
    }
    const double fill = run_parallel(writes.size(), [&](std::size_t i) {
      if (Status s = (*store)->write(std::move(writes[i]), 120s); !s) fail(s.error().to_string());
    });
    std::printf("rft: filled %d episodes (7 keys each) in %.2f s, %.0f episodes/s\n", kRftEpisodes,
                fill, kRftEpisodes / fill);
  }
  RftQuery q{.run = RunId{"rft"},
             .max_invalid_tool_calls = 2,
             .min_turns = 2,
             .max_turns = 50,
             .max_wasted_loops = 1,
             .per_task_top_k = 4};
  std::map<std::string, std::vector<EpisodeSummary>> per_task;  // brute force
  for (const auto& e : all) {
    if (e.final_reward > 0 && e.status == EpisodeStatus::kCompleted && e.invalid_tool_calls <= 2 &&
        e.turns >= 2 && e.turns <= 50 && e.wasted_loops <= 1) {
      per_task[e.task_id.value()].push_back(e);
    }
  }
  std::vector<std::string> expected;
  for (auto& [task, v] : per_task) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      if (a.final_reward != b.final_reward) return a.final_reward > b.final_reward;
      if (a.total_tokens != b.total_tokens) return a.total_tokens < b.total_tokens;
      return a.episode_id < b.episode_id;
    });
    for (std::size_t i = 0; i < v.size() && i < 4; ++i) expected.push_back(v[i].episode_id.value());
  }
  auto store = RunStore::open(o, StoreMode::kWrite);  // reopened: empty block cache
  if (!store) fail(store.error().to_string());
  auto start = Clock::now();
  auto first = (*store)->select_rft(q);
  const double cold = seconds_since(start);
  if (!first) fail(first.error().to_string());
  std::vector<std::string> got;
  for (const auto& s : *first) got.push_back(s.episode_id.value());
  if (got != expected) fail("RFT selection differs from brute force");
  std::vector<double> warm;
  for (int i = 0; i < 5; ++i) {
    start = Clock::now();
    auto again = (*store)->select_rft(q);
    warm.push_back(seconds_since(start));
    if (!again || again->size() != expected.size()) fail("RFT selection changed");
  }
  std::printf(
      "rft: select_rft over %d episodes, 2000 tasks, top 4 per task, filters on: %zu "
      "selected (= brute force)\n",
      kRftEpisodes, expected.size());
  std::printf(
      "  how: wall time of select_rft (index scan, decode, filters); the first call after "
      "reopening the store (empty block cache, warm OS page cache), then 5 more\n");
  std::printf("  first call after reopening %.3f s, warm median of 5 %.3f s   (target < 2 s)\n",
              cold, median(warm));
  // Worst case: no cap and no filters, so every positive episode is decoded and returned.
  const RftQuery everything{.run = RunId{"rft"}, .completed_only = false};
  const auto positive = static_cast<std::size_t>(std::count_if(
      all.begin(), all.end(), [](const EpisodeSummary& e) { return e.final_reward > 0; }));
  start = Clock::now();
  auto uncapped = (*store)->select_rft(everything);
  const double uncapped_s = seconds_since(start);
  if (!uncapped || uncapped->size() != positive) fail("uncapped RFT selection count differs");
  std::printf("  no cap, no filters (worst case): %zu selected (= brute force) in %.3f s\n",
              positive, uncapped_s);
}

}  // namespace
}  // namespace cuda_agent

int main() {
  using namespace cuda_agent;
  const auto start = Clock::now();
  const std::string root =
      (std::filesystem::temp_directory_path() / ("bench_store_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::mt19937_64 rng(20261202);
  std::printf("bench_store: store dir %s, compression %s, group commit %lld ms\n", root.c_str(),
              rocks::compression_summary().c_str(),
              static_cast<long long>(StoreOptions{}.group_commit_ms));
  append_throughput(root, rng);
  rft_selection(root, rng);
  std::filesystem::remove_all(root);
  std::printf("bench_store: done in %.0f s\n", seconds_since(start));
  return 0;
}
