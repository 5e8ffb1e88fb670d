// Queries of the run store, checked against brute force over the same records.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "core/clock.h"
#include "storage/run_store.h"
#include "storage/store_keys.h"
#include "storage/store_test_util.h"

namespace cuda_agent {
namespace {

using testing::make_episode;
using testing::store_at;
using testing::TempDir;
using testing::TempStore;
using namespace std::chrono_literals;

std::string base64_decode(const std::string& in) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    acc = acc << 6 | static_cast<std::uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

class RunStoreQueries : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::make_unique<TempStore>("queries");
    ASSERT_TRUE(tmp_->store);
    store_ = tmp_->store.get();
    std::mt19937 rng(testing::test_seed(4242));
    const double rewards[] = {-1, 0, 1, 2, 3, 0.5, 2.5};
    StoreWrite w;
    for (int i = 0; i < 1500; ++i) {
      EpisodeRecord e = make_episode(i % 3 == 0 ? "other" : "main", "ep" + std::to_string(i),
                                     "task" + std::to_string(rng() % 40), rewards[rng() % 7], 40);
      e.turns = rng() % 30;
      e.invalid_tool_calls = rng() % 4;
      e.wasted_loops = rng() % 3;
      e.total_tokens = 100 * (rng() % 20);  // ties on purpose
      e.status = static_cast<EpisodeStatus>(rng() % 4 == 0 ? rng() % 4 : 0);
      e.stage = static_cast<EpisodeStage>(1 + rng() % 3);
      e.policy_version = PolicyVersion{rng() % 10};
      e.created_unix_ms = 1'800'000'000'000 + i;
      e.trajectory_bytes = testing::trajectory_for(e.episode_id.value(), 40 + rng() % 100);
      all_.push_back(e);
      w.episodes.push_back(std::move(e));
      if (w.episodes.size() == 100) {
        ASSERT_TRUE(store_->write(std::exchange(w, {}), 30s));
      }
    }
  }

  std::unique_ptr<TempStore> tmp_;
  RunStore* store_ = nullptr;
  std::vector<EpisodeRecord> all_;
};

std::vector<std::string> ids(const std::vector<EpisodeSummary>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.episode_id.value());
  return out;
}

TEST_F(RunStoreQueries, RftSelectionMatchesBruteForce) {
  std::vector<RftQuery> queries = {
      {.run = RunId{"main"}},
      {.run = RunId{"main"}, .per_task_top_k = 3},
      {.run = RunId{"main"},
       .stage = EpisodeStage::kAgentWarmup,
       .min_reward = 1,
       .max_invalid_tool_calls = 1,
       .min_turns = 5,
       .max_turns = 20,
       .max_wasted_loops = 1,
       .per_task_top_k = 2},
      {.run = RunId{"other"}, .completed_only = false, .per_task_top_k = 1},
  };
  for (const RftQuery& q : queries) {
    std::map<std::string, std::vector<EpisodeSummary>> per_task;
    for (const EpisodeRecord& e : all_) {
      if (e.run_id != q.run || !(e.final_reward > q.min_reward)) continue;
      if (q.stage && e.stage != *q.stage) continue;
      if (q.completed_only && e.status != EpisodeStatus::kCompleted) continue;
      if (e.invalid_tool_calls > q.max_invalid_tool_calls || e.turns < q.min_turns ||
          e.turns > q.max_turns || e.wasted_loops > q.max_wasted_loops) {
        continue;
      }
      per_task[e.task_id.value()].push_back(e);
    }
    std::vector<EpisodeSummary> expected;
    for (auto& [task, v] : per_task) {
      std::sort(v.begin(), v.end(), [](const EpisodeSummary& a, const EpisodeSummary& b) {
        if (a.final_reward != b.final_reward) return a.final_reward > b.final_reward;
        if (a.total_tokens != b.total_tokens) return a.total_tokens < b.total_tokens;
        return a.episode_id < b.episode_id;
      });
      if (v.size() > q.per_task_top_k) v.resize(q.per_task_top_k);
      expected.insert(expected.end(), v.begin(), v.end());
    }
    auto got = store_->select_rft(q);
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(ids(*got), ids(expected));
  }
}

TEST_F(RunStoreQueries, ReplayIteratesByStageAndPolicyVersion) {
  ReplayQuery q{.run = RunId{"main"},
                .stage = EpisodeStage::kAgenticPpo,
                .min_policy = PolicyVersion{3},
                .max_policy = PolicyVersion{6}};
  std::vector<EpisodeSummary> got;
  ASSERT_TRUE(store_->scan_replay(q, [&](const EpisodeSummary& s) {
    got.push_back(s);
    return true;
  }));
  std::size_t expected = 0;
  for (const auto& e : all_) {
    expected += e.run_id == q.run && e.stage == *q.stage && e.policy_version >= q.min_policy &&
                e.policy_version <= q.max_policy;
  }
  EXPECT_EQ(got.size(), expected);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), [](const auto& a, const auto& b) {
    return a.policy_version < b.policy_version;
  }));
  q.stage.reset();
  std::size_t any_stage = 0;
  ASSERT_TRUE(store_->scan_replay(q, [&](const EpisodeSummary& s) {
    EXPECT_EQ(s.run_id, q.run);
    ++any_stage;
    return true;
  }));
  EXPECT_GT(any_stage, got.size());
  std::size_t task_count = 0;
  ASSERT_TRUE(store_->scan_task(TaskId{"task7"}, [&](const EpisodeSummary& s) {
    EXPECT_EQ(s.task_id, TaskId{"task7"});
    ++task_count;
    return true;
  }));
  EXPECT_EQ(task_count,
            static_cast<std::size_t>(std::count_if(all_.begin(), all_.end(), [](const auto& e) {
              return e.task_id == TaskId{"task7"};
            })));
}

TEST_F(RunStoreQueries, ExportIsOneJsonObjectPerEpisodeWithTheTrajectoryInBase64) {
  std::string out;
  auto report = store_->export_jsonl({.run = RunId{"other"}},
                                     [&](std::string_view line) {
                                       out.append(line);
                                       return Status::ok();
                                     },
                                     {});
  ASSERT_TRUE(report) << report.error().to_string();
  const auto expected = static_cast<std::uint64_t>(std::count_if(
      all_.begin(), all_.end(), [](const auto& e) { return e.run_id.value() == "other"; }));
  EXPECT_EQ(report->exported, expected);
  std::istringstream lines(out);
  std::string line;
  std::int64_t last_created = 0;
  std::uint64_t n = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    const std::string id = j["episode_id"];
    const std::string traj = base64_decode(j["trajectory_capnp_b64"]);
    EXPECT_EQ(traj, testing::trajectory_for(id, j["trajectory_size"].get<std::size_t>()));
    EXPECT_EQ(j["run_id"], "other");
    EXPECT_GE(j["created_unix_ms"].get<std::int64_t>(), last_created);  // creation order
    last_created = j["created_unix_ms"];
    ++n;
  }
  EXPECT_EQ(n, expected);
}

TEST_F(RunStoreQueries, StatsCountStatusesStagesAndRewards) {
  auto st = store_->stats(RunId{"main"});
  ASSERT_TRUE(st) << st.error().to_string();
  std::uint64_t main = 0, completed = 0, threes = 0;
  for (const auto& e : all_) {
    if (e.run_id.value() != "main") continue;
    ++main;
    completed += e.status == EpisodeStatus::kCompleted;
    threes += e.final_reward == 3;
  }
  EXPECT_EQ(st->episodes, main);
  EXPECT_EQ(st->by_status["completed"], completed);
  EXPECT_EQ(st->rewards.counts.back(), threes);  // >= 3
  EXPECT_EQ(st->best_reward, 3);
  EXPECT_GT(st->disk_bytes, 0u);
  EXPECT_EQ(st->column_families.size(), static_cast<std::size_t>(store_keys::Cf::kCount));
  auto runs = store_->list_runs();
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ(runs->at(0).run.value(), "main");
  EXPECT_EQ(runs->at(0).episodes, main);
  EXPECT_FALSE(runs->at(0).record);
}

TEST(RunStoreEvaluations, BestVerifiedSolutionPerTask) {
  TempStore tmp("best");
  ASSERT_TRUE(tmp.store);
  RunStore* store = tmp.store.get();
  StoreWrite w;
  auto ev = [&](const char* id, const char* task, double reward, double speedup, bool verified) {
    EvaluationRecord e;
    e.evaluation_id = EvaluationId{id};
    e.run_id = RunId{"r"};
    e.task_id = TaskId{task};
    e.reward = reward;
    e.speedup_vs_compile = speedup;
    e.verified = verified;
    e.audit = "audit of " + std::string(id);
    w.evaluations.push_back(e);
  };
  ev("a", "t1", 2, 1.1, true);
  ev("b", "t1", 3, 1.2, true);
  ev("c", "t1", 3, 1.9, true);
  ev("d", "t1", 3, 5.0, false);  // faster, but not verified
  ev("e", "t2", 1, 0.9, true);
  ev("f", "t3", 3, 2.0, false);
  ASSERT_TRUE(store->write(std::move(w), 10s));
  auto best = store->best_verified(TaskId{"t1"});
  ASSERT_TRUE(best && *best);
  EXPECT_EQ((*best)->evaluation_id.value(), "c");
  EXPECT_EQ((*best)->audit, "audit of c");
  EXPECT_FALSE(*store->best_verified(TaskId{"t3"}));
  auto all = store->best_verified_per_task();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).evaluation_id.value(), "c");
  EXPECT_EQ(all->at(1).evaluation_id.value(), "e");
}

TEST(RunStoreTasks, ScanByIdPrefixAndSuiteStopsWhenAsked) {
  TempStore tmp("tasks");
  ASSERT_TRUE(tmp.store);
  RunStore* store = tmp.store.get();
  StoreWrite w;
  auto task = [&](const char* id, const char* suite) {
    TaskRecord t;
    t.task_id = TaskId{id};
    t.suite = suite;
    t.body = std::string("body of ") + id;
    w.tasks.push_back(t);
  };
  task("kb/l1/a", "kb/l1");
  task("kb/l1/b", "kb/l1");
  task("kb/l10/c", "kb/l10");  // shares the byte prefix "kb/l1" but not "kb/l1/"
  task("kb/l2/d", "kb/l2");
  task("synth/e", "synth");
  ASSERT_TRUE(store->write(std::move(w), 10s));
  auto ids = [&](const TaskScan& scan, std::size_t stop_after = 100) {
    std::vector<std::string> out;
    Status s = store->scan_tasks(scan, [&](const TaskRecord& t) {
      EXPECT_EQ(t.body, "body of " + t.task_id.value());
      out.push_back(t.task_id.value());
      return out.size() < stop_after;
    });
    EXPECT_TRUE(s) << s.error().to_string();
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids({}), (V{"kb/l1/a", "kb/l1/b", "kb/l10/c", "kb/l2/d", "synth/e"}));
  EXPECT_EQ(ids({.id_prefix = "kb/l1"}), (V{"kb/l1/a", "kb/l1/b", "kb/l10/c"}));
  EXPECT_EQ(ids({.id_prefix = "kb/l1/", .suite = "kb/l1"}), (V{"kb/l1/a", "kb/l1/b"}));
  EXPECT_EQ(ids({.suite = "kb/l2"}), (V{"kb/l2/d"}));
  EXPECT_EQ(ids({.suite = "none"}), V{});
  EXPECT_EQ(ids({}, 2), (V{"kb/l1/a", "kb/l1/b"}));
}

TEST(RunStoreRetention, CheckpointsInStepOrderAndMetricsPastTheirTtlDropAtCompaction) {
  TempDir tmp("ttl");
  StoreOptions o = store_at(tmp.sub("s"));
  o.metrics_ttl_days = 1;
  auto store = std::move(RunStore::open(o, StoreMode::kWrite)).value();
  const std::int64_t now = now_unix_ms();
  StoreWrite w;
  for (std::uint64_t step : {300u, 2u, 10u}) {
    w.checkpoints.push_back(
        {.run_id = RunId{"r"}, .step = step, .path = "ckpt/" + std::to_string(step)});
    w.metrics.push_back({.run_id = RunId{"r"},
                         .name = "reward/mean",
                         .step = step,
                         .value = 1.0 * step,
                         .unix_ms = step == 2 ? now - 3 * 86'400'000LL : now});
  }
  ASSERT_TRUE(store->write(std::move(w), 10s));
  auto ckpts = store->list_checkpoints(RunId{"r"});
  ASSERT_TRUE(ckpts);
  ASSERT_EQ(ckpts->size(), 3u);
  EXPECT_EQ(ckpts->back().step, 300u);  // numeric order: big-endian keys
  auto steps = [&] {
    std::vector<std::uint64_t> v;
    EXPECT_TRUE(store->scan_metrics(RunId{"r"}, "reward/mean", 0, [&](const MetricRecord& m) {
      v.push_back(m.step);
      return true;
    }));
    return v;
  };
  EXPECT_EQ(steps(), (std::vector<std::uint64_t>{2, 10, 300}));
  ASSERT_TRUE(store->compact());
  EXPECT_EQ(steps(), (std::vector<std::uint64_t>{10, 300}));
}

}  // namespace
}  // namespace cuda_agent
