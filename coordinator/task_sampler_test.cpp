#include "coordinator/task_sampler.h"

#include <gtest/gtest.h>

#include <set>

namespace cuda_agent {
namespace {

std::vector<TaskId> tasks(int n) {
  std::vector<TaskId> t;
  for (int i = 0; i < n; ++i) t.push_back(TaskId{"suite/" + std::to_string(i)});
  return t;
}

TEST(TaskSampler, EachEpochIsOnePermutation) {
  TaskSampler s(tasks(7), 42);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::set<TaskId> seen;
    for (int i = 0; i < 7; ++i) seen.insert(s.next());
    EXPECT_EQ(seen.size(), 7u) << "epoch " << epoch;
    EXPECT_EQ(s.position(), (SamplerPosition{static_cast<std::uint64_t>(epoch + 1), 0}));
  }
}

TEST(TaskSampler, SameSeedAndPositionGiveTheSameContinuation) {
  TaskSampler a(tasks(10), 7);
  for (int i = 0; i < 13; ++i) a.next();
  const SamplerPosition saved = a.position();
  EXPECT_EQ(saved, (SamplerPosition{1, 3}));
  std::vector<TaskId> reversed = tasks(10);
  std::reverse(reversed.begin(), reversed.end());  // the order given does not matter
  TaskSampler b(reversed, 7, saved);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(a.next(), b.next()) << "draw " << i;
}

// A group of 3: each task three times in a row, the epoch's tasks in the same order as without
// groups, and a restart inside a group goes on with the rest of it.
TEST(TaskSampler, GroupsDrawEachTaskInARow) {
  TaskSampler plain(tasks(5), 9), grouped(tasks(5), 9, {}, 3);
  for (int epoch = 0; epoch < 2; ++epoch)
    for (int i = 0; i < 5; ++i) {
      const TaskId t = plain.next();
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(grouped.next(), t) << "epoch " << epoch << " task " << i;
    }
  EXPECT_EQ(grouped.position(), (SamplerPosition{2, 0}));
  for (int i = 0; i < 4; ++i) grouped.next();
  TaskSampler resumed(tasks(5), 9, grouped.position(), 3);
  EXPECT_EQ(resumed.position(), (SamplerPosition{2, 4}));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(resumed.next(), grouped.next()) << "draw " << i;
}

TEST(TaskSampler, SeedsAndEpochsDiffer) {
  TaskSampler a(tasks(50), 1), b(tasks(50), 2);
  std::vector<TaskId> ea, eb, ea2;
  for (int i = 0; i < 50; ++i) ea.push_back(a.next()), eb.push_back(b.next());
  for (int i = 0; i < 50; ++i) ea2.push_back(a.next());
  EXPECT_NE(ea, eb);
  EXPECT_NE(ea, ea2);
}

}  // namespace
}  // namespace cuda_agent
