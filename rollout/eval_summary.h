// The summary `cuda-agent eval` prints and exports, with the definitions of CUDA Agent's Table 1:
// per task set (and per subset, e.g. KernelBench level), over the tasks attempted:
//   pass rate            tasks whose solution is correct / tasks
//   faster than eager    tasks correct and with speedup vs eager > 1 / tasks
//   faster than compile  tasks correct and with speedup vs torch.compile > 1 / tasks
//   geomean vs eager     geometric mean of the speedup vs eager over correct tasks
//   geomean vs compile   the same vs torch.compile
// With several episodes per task, a task's result is its best episode (highest reward tier, then
// highest speedup vs compile). Reward tiers (-1/+1/+2/+3) are counted as well.
//
//   EvalSummary s = summarize(results);
//   std::string md = render_markdown(s);   // tables; render_html adds SVG plots
//
// Threading: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cuda_agent {

/// One episode's final evaluation.
struct EvalEpisodeResult {
  std::string task_id;
  std::string subset;  ///< e.g. "level1"; "" = none
  bool correct = false;
  double speedup_vs_eager = 0;    ///< 0 when not timed
  double speedup_vs_compile = 0;  ///< 0 when not timed
  int reward_tier = -1;
  /// The episode ended aborted (a policy server or tool failed, not the policy): not scored. It
  /// counts toward no mean and no tier; a task whose every episode aborted counts as failed.
  bool aborted = false;
  /// The task's output ignored its inputs, and the bench also checked the solution with re-drawn
  /// weights or with one input moved (docs/formats/harness.md, checks `weights[...]`,
  /// `inputs[...]`).
  bool hardened = false;
  /// The task's output depends neither on its inputs nor on its weights (`constant_output_task`):
  /// a stored answer would pass, so its speedups count toward no "faster" figure or geomean.
  bool constant_output = false;
  /// This solution was right on the task's inputs but not on moved ones, on a task whose output
  /// ignores its inputs (`output_unverified`): correct, but its speedups count nowhere.
  bool output_unverified = false;
};

/// `hardened`, `constant_output` and `output_unverified` from the names of the checks a bench ran
/// (an audit record's checks_run, or a BenchResult's checks).
void note_task_checks(EvalEpisodeResult& r, const std::vector<std::string>& checks_run);

struct EvalFigures {
  std::size_t tasks = 0;
  std::size_t correct = 0;
  std::size_t faster_than_eager = 0;
  std::size_t faster_than_compile = 0;
  double geomean_vs_eager = 0;  ///< over correct tasks with a timing; 0 when none
  double geomean_vs_compile = 0;
  std::map<int, std::size_t> tiers;  ///< reward tier -> tasks
  double pass_rate() const { return tasks ? double(correct) / double(tasks) : 0; }
  double faster_than_eager_rate() const {
    return tasks ? double(faster_than_eager) / double(tasks) : 0;
  }
  double faster_than_compile_rate() const {
    return tasks ? double(faster_than_compile) / double(tasks) : 0;
  }
};

struct EvalSummary {
  /// Over every episode, not the best per task: what a policy earns on average (issue 25's
  /// figure), and the share of episodes with a positive reward.
  std::size_t episodes = 0;
  std::size_t aborted = 0;  ///< of `episodes`, not scored (mean and share are over the rest)
  double mean_reward = 0;
  double positive_rate = 0;
  EvalFigures overall;
  std::map<std::string, EvalFigures> subsets;    ///< by subset name (absent when all are "")
  std::vector<EvalEpisodeResult> best_per_task;  ///< the result that counted, per task, by id
  /// Tasks whose output ignores their inputs: hardened by re-drawn weights, and those nothing
  /// could harden (no speed credit), by id.
  std::vector<std::string> hardened_tasks;
  std::vector<std::string> constant_tasks;
};

EvalSummary summarize(const std::vector<EvalEpisodeResult>& episodes);

/// Markdown: the definitions, one table row per subset plus "all", the tier counts.
std::string render_markdown(const EvalSummary& summary, const std::string& title);

/// A self-contained HTML page: the Markdown's tables, a histogram of log2 speedups vs compile
/// and per-task bars (SVG, no scripts).
std::string render_html(const EvalSummary& summary, const std::string& title);

}  // namespace cuda_agent
