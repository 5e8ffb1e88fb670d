// Test-only helpers for the run store's tests and its users' (never linked into the product):
// temporary store directories, a store opened in one, and episodes with checkable contents.
//
//   testing::TempStore s("attempts");          // $TMP/ca_store_attempts_<pid>/s, opened kWrite
//   ASSERT_TRUE(s.store);
//   s.store->write(...);  s.reopen(StoreMode::kReadOnly);
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/run_store.h"

namespace cuda_agent::testing {

/// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("ca_store_" + name + "_" + std::to_string(::getpid())))
                  .string()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline StoreOptions store_at(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  return o;
}

/// The store at `dir` opened in `mode`; nullptr (and a failed expectation) when it cannot be.
inline std::unique_ptr<RunStore> open_or_die(const std::string& dir,
                                             StoreMode mode = StoreMode::kWrite) {
  auto s = RunStore::open(store_at(dir), mode);
  EXPECT_TRUE(s) << s.error().to_string();
  return s ? std::move(s).value() : nullptr;
}

/// A run store in a fresh temp dir (`<TempDir>/s`), opened on construction; the directory goes
/// with it. `store` is null (and the test has failed) when it could not be opened.
struct TempStore {
  explicit TempStore(const std::string& name, StoreMode mode = StoreMode::kWrite)
      : tmp(name), dir(tmp.sub("s")), store(open_or_die(dir, mode)) {}
  /// Closes the store and opens it again in `mode`.
  RunStore* reopen(StoreMode mode) {
    store.reset();
    store = open_or_die(dir, mode);
    return store.get();
  }
  TempDir tmp;
  std::string dir;
  std::unique_ptr<RunStore> store;
};

/// Every attempt of `run` (of one episode when `episode` is not empty), as scan_attempts gives
/// them: by episode id, then attempt number.
inline std::vector<EpisodeAttemptRecord> attempts_of(const RunStore& store, const std::string& run,
                                                     const std::string& episode = "") {
  std::vector<EpisodeAttemptRecord> out;
  Status s = store.scan_attempts(RunId{run}, episode, [&](const EpisodeAttemptRecord& a) {
    out.push_back(a);
    return true;
  });
  EXPECT_TRUE(s) << s.error().to_string();
  return out;
}

/// Deterministic trajectory bytes for an episode id: tests can recheck them after reopening.
inline std::string trajectory_for(const std::string& id, std::size_t size) {
  std::string out(size, '\0');
  std::uint64_t x = std::hash<std::string>{}(id) | 1;
  for (char& c : out) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  return out;
}

inline EpisodeRecord make_episode(const std::string& run, const std::string& id,
                                  const std::string& task, double reward,
                                  std::size_t trajectory_size = 64) {
  EpisodeRecord e;
  e.run_id = RunId{run};
  e.episode_id = EpisodeId{id};
  e.task_id = TaskId{task};
  e.stage = EpisodeStage::kAgentWarmup;
  e.policy_version = PolicyVersion{1};
  e.status = EpisodeStatus::kCompleted;
  e.final_reward = reward;
  e.turns = 10;
  e.total_tokens = 1000;
  e.created_unix_ms = 1'800'000'000'000;
  e.trajectory_bytes = trajectory_for(run + "/" + id, trajectory_size);
  return e;
}

/// The seed of a randomized test: CUDA_AGENT_TEST_SEED if set, else `fallback`; printed.
inline unsigned test_seed(unsigned fallback) {
  const char* env = std::getenv("CUDA_AGENT_TEST_SEED");
  const unsigned seed = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : fallback;
  std::printf("seed %u (CUDA_AGENT_TEST_SEED=%u replays)\n", seed, seed);
  return seed;
}

}  // namespace cuda_agent::testing
