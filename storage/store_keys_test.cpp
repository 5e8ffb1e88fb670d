#include "storage/store_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "storage/store_test_util.h"

namespace cuda_agent::store_keys {
namespace {

std::string be(std::uint64_t v) {
  std::string s;
  append_be64(s, v);
  return s;
}

TEST(StoreKeys, OrderedDoublesSortLikeNumbersAndDescendingReverses) {
  std::mt19937_64 rng(testing::test_seed(11));
  std::vector<double> values = {
      -std::numeric_limits<double>::infinity(), -3, -1, -0.5, 0, 0.25, 1, 2, 3, 1e300,
      std::numeric_limits<double>::infinity()};
  std::uniform_real_distribution<double> any(-1e6, 1e6);
  for (int i = 0; i < 1000; ++i) values.push_back(any(rng));
  for (double a : values) {
    EXPECT_EQ(from_descending_double(descending_double(a)), a);
    for (double b : {values[0], values[3], values[5], values[12], values[40]}) {
      EXPECT_EQ(a < b, be(ordered_double(a)) < be(ordered_double(b))) << a << " vs " << b;
      EXPECT_EQ(a<b, be(descending_double(a))> be(descending_double(b))) << a << " vs " << b;
    }
  }
}

TEST(StoreKeys, BigEndianNumbersSortAsNumbers) {
  EXPECT_LT(be(1), be(2));
  EXPECT_LT(be(255), be(256));
  EXPECT_LT(be(1ull << 40), be((1ull << 40) + 1));
  EXPECT_EQ(read_be64(be(0x0102030405060708ull)), 0x0102030405060708ull);
}

TEST(StoreKeys, RewardIndexOrdersBestFirstThenFewerTokens) {
  EpisodeSummary a, b, c;
  for (EpisodeSummary* s : {&a, &b, &c}) {
    s->run_id = RunId{"r"};
    s->task_id = TaskId{"t"};
  }
  a.episode_id = EpisodeId{"a"}, a.final_reward = 3, a.total_tokens = 500;
  b.episode_id = EpisodeId{"b"}, b.final_reward = 3, b.total_tokens = 100;
  c.episode_id = EpisodeId{"c"}, c.final_reward = 2, c.total_tokens = 10;
  EXPECT_LT(episode_by_reward_key(b), episode_by_reward_key(a));
  EXPECT_LT(episode_by_reward_key(a), episode_by_reward_key(c));
}

TEST(StoreKeys, PrefixesPartsAndPrintableForms) {
  EXPECT_EQ(prefix_end("ab"), "ac");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), "");
  const std::string k = index_prefix(Index::kEpisodeByTask, "task", "run") + "ep";
  EXPECT_EQ(part(k, 0), "task");
  EXPECT_EQ(part(k, 1), "run");
  EXPECT_EQ(part(k, 2), "");
  EXPECT_EQ(printable(std::string("r1\0e\\", 5)), "r1\\x00e\\x5c");
  EvaluationRecord e;
  e.task_id = TaskId{"t"};
  e.run_id = RunId{"r"};
  e.evaluation_id = EvaluationId{"ev-9"};
  EXPECT_EQ(evaluation_of_index_key(best_verified_key(e)), "ev-9");
  EXPECT_EQ(evaluation_of_index_key(evaluation_by_run_key(e)), "ev-9");
}

TEST(StoreKeys, IdsMustBeNonEmptyShortAndFreeOfNul) {
  EXPECT_TRUE(check_id("run-1", "run id"));
  EXPECT_EQ(check_id("", "run id").error().code, "store.bad_id");
  EXPECT_EQ(check_id(std::string("a\0b", 3), "run id").error().code, "store.bad_id");
  EXPECT_EQ(check_id(std::string(1025, 'x'), "run id").error().code, "store.bad_id");
}

}  // namespace
}  // namespace cuda_agent::store_keys
