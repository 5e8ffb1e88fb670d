// A rollout worker process SIGKILLed mid-run, then restarted (tests/rollout_crash_worker.cpp):
// the kill comes once the store has acknowledged exactly K episodes and the next episodes are in
// flight (their running markers acknowledged, the episodes held inside a tool), with no sleeps.
// After the restart: every acknowledged trajectory is intact and not run again, the in-flight
// attempts are aborted and rerun (max attempts 2) or given up (max attempts 1), counts are exact.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "messages/trajectory_codec.h"
#include "rollout/rollout_test_fakes.h"
#include "storage/run_store.h"
#include "tests/store_child.h"

namespace cuda_agent {
namespace {

using testing::Child;
constexpr int kEpisodes = 8;
constexpr int kConcurrency = 3;
constexpr int kAckedBeforeKill = 4;  // e0..e3 run through; e4.. stall in compile

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Events {
  std::map<std::string, int> acked;    // episode -> attempt
  std::map<std::string, int> started;  // episode -> attempt (latest)
  std::set<std::string> recovered, skipped, given_up;
  std::vector<std::string> failed;
  std::string done;
};

void take(Events& ev, const std::string& line) {
  auto w = words(line);
  if (w.empty()) return;
  if (w[0] == "ack") ev.acked[w[1]] = std::stoi(w[2]);
  if (w[0] == "started") ev.started[w[1]] = std::stoi(w[2]);
  if (w[0] == "recovered") ev.recovered.insert(w[1]);
  if (w[0] == "skip") ev.skipped.insert(w[1]);
  if (w[0] == "gave_up") ev.given_up.insert(w[1]);
  if (w[0] == "failed") ev.failed.push_back(line);
  if (w[0] == "done") ev.done = line;
}

std::string ep(int n) { return "e" + std::to_string(n); }

// Runs the worker with stalls from kAckedBeforeKill and kills it once e0..e3 are acknowledged and
// e4..e6 are in flight.
void crash_first_run(const std::string& dir) {
  Child child({ROLLOUT_CRASH_WORKER, dir, "run", std::to_string(kEpisodes),
               std::to_string(kConcurrency), "2", std::to_string(kAckedBeforeKill)});
  ASSERT_TRUE(child.started());
  Events ev;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto in_flight = [&] {
    int n = 0;
    for (const auto& [e, a] : ev.started) n += !ev.acked.count(e);
    return n;
  };
  while (!(static_cast<int>(ev.acked.size()) == kAckedBeforeKill && in_flight() == kConcurrency)) {
    auto line = child.read_line(deadline);
    ASSERT_TRUE(line) << "the worker did not reach " << kAckedBeforeKill << " acks and "
                      << kConcurrency << " in flight (acks " << ev.acked.size() << ")";
    take(ev, *line);
  }
  child.kill_now();
  for (int n = 0; n < kAckedBeforeKill; ++n) EXPECT_EQ(ev.acked.count(ep(n)), 1u) << ep(n);
  for (int n = kAckedBeforeKill; n < kAckedBeforeKill + kConcurrency; ++n)
    EXPECT_EQ(ev.started[ep(n)], 1) << ep(n);
  EXPECT_EQ(ev.started.count(ep(kEpisodes - 1)), 0u);
}

Events restart(const std::string& dir, int max_attempts) {
  Child child({ROLLOUT_CRASH_WORKER, dir, "run", std::to_string(kEpisodes),
               std::to_string(kConcurrency), std::to_string(max_attempts)});
  EXPECT_TRUE(child.started());
  Events ev;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ev.done.empty()) {
    auto line = child.read_line(deadline);
    if (!line) break;
    take(ev, *line);
  }
  EXPECT_FALSE(ev.done.empty()) << "the restarted worker did not finish";
  EXPECT_EQ(child.wait_exit(std::chrono::steady_clock::now() + std::chrono::seconds(30)), 0);
  return ev;
}

// Episode n's stored trajectory is exactly what its transcript sampled.
void expect_intact(RunStore& store, int n) {
  auto rec = store.get_episode(RunId{"run"}, EpisodeId{ep(n)});
  ASSERT_TRUE(rec) << rec.error().to_string();
  EXPECT_EQ(rec->status, EpisodeStatus::kCompleted) << ep(n);
  auto e = decode_episode(rec->trajectory_bytes);
  ASSERT_TRUE(e) << e.error().to_string();
  std::vector<std::uint32_t> got, want;
  for (const Turn& t : e->turns)
    if (t.role == TurnRole::kAssistant)
      got.insert(got.end(), t.token_ids.begin(), t.token_ids.end());
  for (int turn = 0; turn < 2; ++turn)
    for (int id : testing::fake_tokens(n, turn)) want.push_back(static_cast<std::uint32_t>(id));
  EXPECT_EQ(got, want) << ep(n);
  EXPECT_EQ(e->final_reward, 2);
}

std::map<std::string, std::vector<AttemptState>> attempts_by_episode(RunStore& store) {
  std::map<std::string, std::vector<AttemptState>> out;
  EXPECT_TRUE(store.scan_attempts(RunId{"run"}, "", [&](const EpisodeAttemptRecord& a) {
    out[a.episode_id.value()].push_back(a.state);
    return true;
  }));
  return out;
}

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("ca_rollout_crash_" + name + "_" + std::to_string(::getpid())))
                 .string()) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(RolloutCrash, KilledMidRunThenRestartedRerunsTheInFlightEpisodesOnce) {
  TempDir dir("rerun");
  crash_first_run(dir.path);
  if (HasFatalFailure()) return;
  Events ev = restart(dir.path, /*max_attempts=*/2);
  EXPECT_EQ(ev.done, "done 4 4 0 0");
  EXPECT_TRUE(ev.failed.empty()) << ev.failed.front();
  for (int n = 0; n < kAckedBeforeKill; ++n) EXPECT_EQ(ev.skipped.count(ep(n)), 1u) << ep(n);
  for (int n = kAckedBeforeKill; n < kAckedBeforeKill + kConcurrency; ++n) {
    EXPECT_EQ(ev.recovered.count(ep(n)), 1u) << ep(n);
    EXPECT_EQ(ev.acked[ep(n)], 2) << ep(n);
  }
  EXPECT_EQ(ev.acked[ep(kEpisodes - 1)], 1);

  auto store = RunStore::open({.dir = dir.path}, StoreMode::kReadOnly);
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_EQ(*(*store)->count_episodes(RunId{"run"}), static_cast<std::uint64_t>(kEpisodes));
  for (int n = 0; n < kEpisodes; ++n) expect_intact(**store, n);
  auto attempts = attempts_by_episode(**store);
  ASSERT_EQ(attempts.size(), static_cast<std::size_t>(kEpisodes));
  for (int n = 0; n < kEpisodes; ++n) {
    const bool was_in_flight = n >= kAckedBeforeKill && n < kAckedBeforeKill + kConcurrency;
    const std::vector<AttemptState> want =
        was_in_flight ? std::vector{AttemptState::kAborted, AttemptState::kCommitted}
                      : std::vector{AttemptState::kCommitted};
    EXPECT_EQ(attempts[ep(n)], want) << ep(n);
  }
}

TEST(RolloutCrash, KilledMidRunWithOneAttemptGivesTheInFlightEpisodesUpAsAborted) {
  TempDir dir("give_up");
  crash_first_run(dir.path);
  if (HasFatalFailure()) return;
  Events ev = restart(dir.path, /*max_attempts=*/1);
  EXPECT_EQ(ev.done, "done 1 4 3 0");
  auto store = RunStore::open({.dir = dir.path}, StoreMode::kReadOnly);
  ASSERT_TRUE(store) << store.error().to_string();
  auto stats = (*store)->stats(RunId{"run"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->episodes, static_cast<std::uint64_t>(kEpisodes));
  EXPECT_EQ(stats->by_status["completed"], 5u);
  EXPECT_EQ(stats->by_status["aborted"], 3u);
  for (int n : {0, 1, 2, 3, kEpisodes - 1}) expect_intact(**store, n);
  auto attempts = attempts_by_episode(**store);
  for (int n = kAckedBeforeKill; n < kAckedBeforeKill + kConcurrency; ++n)
    EXPECT_EQ(attempts[ep(n)], std::vector{AttemptState::kAborted}) << ep(n);
}

}  // namespace
}  // namespace cuda_agent
