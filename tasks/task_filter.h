// `cuda-agent tasks filter`: which stored tasks are fit to train on (issue 7 item 4). Tasks of
// the chosen suites are read from the run store, in id order, and go through:
//   1. duplicates (tasks/code_similarity.h): a task with the content hash or the normalized code
//      of an earlier one is dropped ("duplicate");
//   2. decontamination: a task whose code structure is at least `similarity` similar to a task
//      of the evaluation suite is dropped ("decontamination"); the evaluation suite's own tasks
//      are not checked against it;
//   3. the GPU filter (tasks/gpu_filter.h) on the rest: the first failed check drops the task.
// Every task's outcome is written back into its stored body as FilterResult rows (the import's
// "static" row is kept, earlier filter rows are replaced), one synced write per task, so a killed
// run loses at most the tasks in flight. A task whose stored "gpu_filter" row was made with the
// same options key (checks version, device, GPU model, window, trials, compile) for its content
// hash is not run again (resume); `rerun` runs it anyway.
//
//   ASSIGN_OR_RETURN(FilterSummary s, filter_tasks(*store, options, [&](const FilteredTask&)
//   {...})); std::printf("%s", filter_summary_text(s).c_str());
//
// Threading: filter_tasks blocks its thread; `progress` runs on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "storage/run_store.h"
#include "tasks/gpu_filter.h"

namespace cuda_agent {

struct TaskFilterOptions {
  /// Suites to filter: a task belongs to SUITE when its suite is SUITE or starts with "SUITE/".
  std::vector<std::string> suites;
  /// Every task in the store (then `suites` must be empty).
  bool all = false;
  /// The evaluation suite to decontaminate against (same matching); empty: none.
  std::string decontaminate_against;
  /// Structure similarity at or above which a task is contaminated (TaskOptions's
  /// decontamination_threshold). Default: 0.9.
  double similarity = 0.9;
  GpuFilterOptions gpu;
  /// Run the GPU filter on every task, even where a stored result with the same key exists.
  bool rerun = false;
  /// Tasks not started this long after the start are left unfiltered (a later run resumes
  /// them). 0: no limit.
  std::int64_t time_limit_ms = 0;
};

/// One task's verdict.
struct FilteredTask {
  TaskId id;
  std::string name;
  std::string suite;
  bool passed = false;
  bool reused = false;        ///< the stored GPU result was kept (resume)
  bool not_filtered = false;  ///< not reached before the time limit
  std::string dropped_by;  ///< "duplicate", "decontamination", a GPU check, "filter_timeout", ...
  std::string reason;
  double eager_ms = 0;
  double compile_ms = 0;
  /// The filter child's wall time and its phases (GpuFilterOutcome::phases_s), seconds; 0 and
  /// empty where no child ran (host drops).
  double wall_s = 0;
  std::map<std::string, double> phases_s;
  /// The child was forked from a harness zygote (GpuFilterOutcome::forked), else a fresh Python.
  bool forked = false;
  /// What happened to the thread's harness zygote around this task (GpuFilterOutcome::
  /// zygote_note: "harness zygote: ... refused to serve ...; fresh children from now on"); empty
  /// when nothing did.
  std::string zygote_note;
  /// The child's peak GPU memory (GpuFilterOutcome::peak_gpu_bytes) and the task's input bytes
  /// (task_input_bytes); 0 and -1 where unknown.
  std::int64_t peak_gpu_bytes = 0;
  std::int64_t input_bytes = -1;
};

struct FilterSummary {
  std::string options_key;
  std::string eval_suite;
  double similarity = 0;
  std::vector<FilteredTask> tasks;  ///< by task id
  std::uint64_t passed = 0;
  std::uint64_t dropped = 0;
  std::uint64_t reused = 0;
  std::uint64_t not_filtered = 0;
  std::map<std::string, std::uint64_t> drops;  ///< dropped_by -> count
  double seconds = 0;
};

/// Runs the filter. Errors: filter.no_tasks (nothing selected, or an empty evaluation suite,
/// naming it), filter.options, the GPU filter's errors (no GPU, no torch, ...), store errors.
Expected<FilterSummary> filter_tasks(RunStore& store, const TaskFilterOptions& options,
                                     const std::function<void(const FilteredTask&)>& progress,
                                     std::size_t* selected_count = nullptr);

/// The host-side part alone (steps 1 and 2) on tasks in memory, in their order: for each, the
/// drop ("duplicate" / "decontamination") with its reason, or an empty FilteredTask::dropped_by.
std::vector<FilteredTask> screen_tasks(const std::vector<Task>& tasks,
                                       const std::vector<Task>& eval_tasks, double similarity,
                                       const std::string& eval_suite);

/// "filtered 320 tasks in 412.0 s: 130 passed (40.6%), 190 dropped\n  eager_time  80\n..."
std::string filter_summary_text(const FilterSummary& s);
/// "seconds per child (median/p90 of 26): wall 31.0/55.2, checks 4.1/9.0, ...\n" and
/// "children: 24 forked from a harness zygote, 2 fresh python\n" (then each distinct zygote
/// note, "  zygote (3 tasks): ...\n", at most 3): where the filter children's time went and how
/// they started; empty when no child ran.
std::string filter_time_text(const FilterSummary& s);
/// The report: JSON (format "cuda-agent-filter-report", version 1) with the options, the
/// summary and every task; or Markdown with the summary, the drop histogram and a table of every
/// dropped task with its reason.
std::string filter_report_json(const FilterSummary& s);
std::string filter_report_markdown(const FilterSummary& s);

/// Whether `suite` is SUITE or below it ("kernelbench/level1" is in "kernelbench").
bool suite_matches(const std::string& suite, const std::string& wanted);

}  // namespace cuda_agent
