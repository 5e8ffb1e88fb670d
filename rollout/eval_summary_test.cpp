// Table 1 figures from episode results: best episode per task, rates over all tasks, geomeans
// over correct ones, per subset; and the reports render them.
#include "rollout/eval_summary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cuda_agent {
namespace {

TEST(EvalSummary, TableOneFiguresFromTheBestEpisodePerTask) {
  std::vector<EvalEpisodeResult> e = {
      {"l1/a", "level1", true, 2.0, 1.5, 3},
      {"l1/a", "level1", false, 0, 0, -1},  // a worse episode of the same task
      {"l1/b", "level1", true, 0.5, 0.25, 1},
      {"l1/c", "level1", false, 0, 0, -1},
      {"l2/d", "level2", true, 8.0, 4.0, 3},
      {"l2/d", "level2", true, 16.0, 2.0, 3},  // same tier, lower speedup vs compile
  };
  EvalSummary s = summarize(e);
  ASSERT_EQ(s.best_per_task.size(), 4u);
  EXPECT_EQ(s.overall.tasks, 4u);
  EXPECT_EQ(s.overall.correct, 3u);
  EXPECT_DOUBLE_EQ(s.overall.pass_rate(), 0.75);
  EXPECT_EQ(s.overall.faster_than_eager, 2u);
  EXPECT_EQ(s.overall.faster_than_compile, 2u);
  EXPECT_NEAR(s.overall.geomean_vs_eager, std::cbrt(2.0 * 0.5 * 8.0), 1e-12);
  EXPECT_NEAR(s.overall.geomean_vs_compile, std::cbrt(1.5 * 0.25 * 4.0), 1e-12);
  EXPECT_EQ(s.overall.tiers.at(3), 2u);
  EXPECT_EQ(s.overall.tiers.at(-1), 1u);
  ASSERT_EQ(s.subsets.size(), 2u);
  EXPECT_EQ(s.subsets.at("level1").tasks, 3u);
  EXPECT_NEAR(s.subsets.at("level2").geomean_vs_compile, 4.0, 1e-12);
  // The mean is over every episode, not the best per task: (3 - 1 + 1 - 1 + 3 + 3) / 6.
  EXPECT_EQ(s.episodes, 6u);
  EXPECT_DOUBLE_EQ(s.mean_reward, 8.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.positive_rate, 4.0 / 6.0);

  const std::string md = render_markdown(s, "KernelBench");
  EXPECT_NE(md.find("| level1 | 3 | 66.7% (2/3) | 33.3% (1/3) | 33.3% (1/3) | 1.00x | 0.61x |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| **all** | 4 | 75.0% (3/4)"), std::string::npos) << md;
  EXPECT_NE(md.find("-1: 1, +1: 1, +2: 0, +3: 2"), std::string::npos) << md;
  EXPECT_NE(md.find("Over all 6 episodes: mean reward +1.333, positive reward 66.7%."),
            std::string::npos)
      << md;
  const std::string html = render_html(s, "KernelBench <eval>");
  EXPECT_NE(html.find("KernelBench &lt;eval&gt;"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("l1/c"), std::string::npos);
}

TEST(EvalSummary, NothingCorrectGivesZeroGeomeansAndNoSubsetsWhenUnnamed) {
  EvalSummary s = summarize({{"a", "", false, 0, 0, -1}, {"b", "", false, 0, 0, -1}});
  EXPECT_EQ(s.overall.pass_rate(), 0);
  EXPECT_EQ(s.overall.geomean_vs_compile, 0);
  EXPECT_TRUE(s.subsets.empty());
  EXPECT_NE(render_markdown(s, "t").find(
                "| **all** | 2 | 0.0% (0/2) | 0.0% (0/2) | 0.0% (0/2) | - | - |"),
            std::string::npos);
}

// An aborted episode (a policy server or tool failed) is not scored: not in the mean, not a
// tier of its own; a scored episode of its task counts instead, and a task with none fails.
TEST(EvalSummary, AbortedEpisodesAreCountedButNotScored) {
  EvalEpisodeResult aborted{"a", "", false, 0, 0, 0};
  aborted.aborted = true;
  EvalEpisodeResult failed{"a", "", false, 0, 0, -1};
  EvalEpisodeResult only_aborted = aborted;
  only_aborted.task_id = "b";
  EvalSummary s = summarize({aborted, failed, only_aborted});
  EXPECT_EQ(s.episodes, 3u);
  EXPECT_EQ(s.aborted, 2u);
  EXPECT_DOUBLE_EQ(s.mean_reward, -1.0) << "over the one scored episode";
  EXPECT_EQ(s.overall.tiers.at(-1), 2u) << "task a's scored episode, task b with none";
  EXPECT_EQ(s.overall.tiers.count(0), 0u);
  EXPECT_NE(render_markdown(s, "t").find("2 aborted by a failed policy server or tool: not "
                                         "scored"),
            std::string::npos);
}

TEST(EvalSummary, ConstantOutputTasksEarnNoSpeedFiguresAndBothKindsAreListed) {
  EvalEpisodeResult constant{"l3/vgg", "level3", true, 40.0, 30.0, 1};
  note_task_checks(constant, {"run[seed=1]", "weights[weights,seed=9]", "constant_output_task"});
  EXPECT_TRUE(constant.constant_output);
  EvalEpisodeResult hardened{"l3/mobilenet", "level3", true, 2.0, 1.5, 3};
  note_task_checks(hardened, {"run[seed=1]", "weights[weights,seed=9]"});
  EXPECT_TRUE(hardened.hardened);
  EXPECT_FALSE(hardened.constant_output);
  // A failed episode of the hardened task (the bench never reached the weights check there)
  // still belongs to a hardened task.
  EvalEpisodeResult failed{"l3/mobilenet", "level3", false, 0, 0, -1};
  EvalEpisodeResult plain{"l3/mlp", "level3", true, 2.0, 2.0, 3};
  // A loss hardened by a moved input, whose only solution did not follow it: correct, no speed.
  EvalEpisodeResult unverified{"l1/hinge", "level1", true, 8.0, 8.0, 1};
  note_task_checks(unverified, {"run[seed=1]", "output_unverified"});
  EXPECT_TRUE(unverified.output_unverified);
  EXPECT_TRUE(unverified.hardened) << "the task was hardened; this solution failed the check";
  EvalSummary s = summarize({constant, failed, hardened, plain, unverified});
  EXPECT_EQ(s.overall.correct, 4u) << "a constant task still counts as passed";
  EXPECT_EQ(s.overall.faster_than_eager, 2u) << "but not as faster";
  EXPECT_NEAR(s.overall.geomean_vs_eager, 2.0, 1e-12) << "nor in the geomean";
  EXPECT_EQ(s.constant_tasks, std::vector<std::string>{"l3/vgg"});
  EXPECT_EQ(s.hardened_tasks, (std::vector<std::string>{"l1/hinge", "l3/mobilenet"}));
  const std::string md = render_markdown(s, "t");
  EXPECT_NE(md.find("Hardened (2 tasks whose output ignores their inputs"), std::string::npos)
      << md;
  EXPECT_NE(md.find("Constant output, no speed credit (1 tasks"), std::string::npos) << md;
  EXPECT_NE(render_html(s, "t").find("l3/vgg"), std::string::npos);
  EXPECT_EQ(render_markdown(summarize({plain}), "t").find("Hardened"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent
