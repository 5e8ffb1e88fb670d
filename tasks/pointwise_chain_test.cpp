// Pointwise-chain tasks (tasks/pointwise_chain.h): determinism, the held-out rule, and sources
// that the static validator accepts with the chain's operators.
#include "tasks/pointwise_chain.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "tasks/op_cuda.h"
#include "tasks/python_validator.h"

namespace cuda_agent {
namespace {

TEST(PointwiseChain, SameSeedSameTasksAndSplitsNeverShareACombination) {
  const PointwiseChainOptions o{.seed = 11};
  std::set<std::string> train, heldout;
  for (std::uint64_t i = 0; i < 300; ++i) {
    auto a = pointwise_chain_task(o, ChainSplit::kTrain, i);
    auto b = pointwise_chain_task(o, ChainSplit::kTrain, i);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->source, b->source);
    EXPECT_EQ(a->name, b->name);
    train.insert(a->combination());
    auto h = pointwise_chain_task(o, ChainSplit::kHeldOut, i);
    ASSERT_TRUE(h) << h.error().message;
    heldout.insert(h->combination());
    EXPECT_TRUE(combination_held_out(o, h->combination()));
    EXPECT_FALSE(combination_held_out(o, a->combination()));
  }
  for (const std::string& c : heldout) EXPECT_EQ(train.count(c), 0u) << c;
  EXPECT_GT(train.size(), 150u) << "the family is varied";
  // Another seed partitions differently.
  const PointwiseChainOptions other{.seed = 12};
  int moved = 0;
  for (const std::string& c : heldout) moved += combination_held_out(other, c) ? 0 : 1;
  EXPECT_GT(moved, 0);
}

TEST(PointwiseChain, ChainsAreDistinctMappedOpsOnOneShape) {
  const PointwiseChainOptions o{.seed = 3};
  std::vector<int> lengths(4, 0);
  for (std::uint64_t i = 0; i < 200; ++i) {
    auto t = pointwise_chain_task(o, ChainSplit::kTrain, i);
    ASSERT_TRUE(t);
    ASSERT_GE(t->steps.size(), 1u);
    ASSERT_LE(t->steps.size(), 3u);
    ++lengths[t->steps.size()];
    std::set<std::string> ops;
    std::size_t binaries = 0;
    for (const ChainStep& s : t->steps) {
      EXPECT_TRUE(op_cuda_supported(s.op)) << s.op;
      EXPECT_TRUE(ops.insert(s.op).second) << "repeated " << s.op << " in " << t->name;
      EXPECT_EQ(s.param.empty(), !op_cuda_takes_param(s.op)) << s.op;
      EXPECT_EQ(s.input.empty(), !op_cuda_binary(s.op)) << s.op;
      if (!s.param.empty()) {
        EXPECT_TRUE(op_cuda_expression(s.op, s.param, "v")) << s.param;
      }
      binaries += s.input.empty() ? 0 : 1;
    }
    EXPECT_EQ(t->inputs.size(), 1 + binaries);
    EXPECT_LE(t->rows * t->cols, 64 << 20);
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%05llu_", static_cast<unsigned long long>(i));
    EXPECT_EQ(t->name.rfind(prefix, 0), 0u) << t->name;
  }
  EXPECT_GT(lengths[1], 0);
  EXPECT_GT(lengths[2], 0);
  EXPECT_GT(lengths[3], 0);
}

TEST(PointwiseChain, DistinctTasksArePrefixesWithNewCombinations) {
  const PointwiseChainOptions o{.seed = 5};
  auto a = distinct_chain_tasks(o, ChainSplit::kHeldOut, 32);
  auto b = distinct_chain_tasks(o, ChainSplit::kHeldOut, 10);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->size(), 32u);
  std::set<std::string> combos;
  for (std::size_t k = 0; k < a->size(); ++k) {
    EXPECT_TRUE(combos.insert((*a)[k].combination()).second);
    EXPECT_EQ((*a)[k].index, k);
    if (k < b->size()) {
      EXPECT_EQ((*a)[k].source, (*b)[k].source);
    }
  }
  EXPECT_EQ((*a)[7].name.substr(0, 6), "00007_");
}

TEST(PointwiseChain, BadOptionsAreNamed) {
  PointwiseChainOptions o;
  o.length_weights = {0, 0, 0};
  auto t = pointwise_chain_task(o, ChainSplit::kTrain, 0);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, "tasks.chain_options");
}

TEST(PointwiseChain, SourcesPassTheStaticValidatorWithTheirOperators) {
  const PointwiseChainOptions o{.seed = 9};
  std::vector<SourceToCheck> sources;
  std::vector<PointwiseChainTask> tasks;
  for (std::uint64_t i = 0; i < 60; ++i) {
    auto t = pointwise_chain_task(o, i % 2 ? ChainSplit::kHeldOut : ChainSplit::kTrain, i);
    ASSERT_TRUE(t);
    sources.push_back({t->name, t->source});
    tasks.push_back(*t);
  }
  auto reports = PythonValidator({}).check(sources, nullptr);
  if (!reports) GTEST_SKIP() << "no python3: " << reports.error().message;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const StaticReport& r = (*reports)[i];
    ASSERT_TRUE(r.ok) << tasks[i].source << (r.errors.empty() ? "" : r.errors[0]);
    const std::set<std::string> found(r.ops.begin(), r.ops.end());
    for (const ChainStep& s : tasks[i].steps) EXPECT_TRUE(found.count(s.op)) << s.op;
    EXPECT_EQ(r.forward_params, tasks[i].inputs);
    EXPECT_EQ(r.inputs.size(), tasks[i].inputs.size());
  }
}

}  // namespace
}  // namespace cuda_agent
