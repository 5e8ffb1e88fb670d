// `cuda-agent tasks filter`: duplicates, decontamination and the GPU filter over stored tasks
// (tasks/task_filter.h), with progress, a summary, a report and an export of the passing tasks.
// Each task's child is forked from a per-thread harness zygote unless --no-zygote
// (tasks/gpu_filter.h). Runs on the local GPU: routing through the bench pool would need a filter
// request in the bench protocol (messages/bench.capnp carries solutions, not tasks); one GPU
// filters about a thousand tasks an hour, which suits dataset building.
//
// Exit codes: 0 the filter ran (tasks may have been dropped); 1 it could not run (no GPU, no
// torch, the store refused a write); 2 bad input (flags, an unknown suite, a locked store).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "cli/command.h"
#include "core/progress.h"
#include "storage/run_store.h"
#include "tasks/task_filter.h"
#include "tasks/task_options.h"

namespace cuda_agent::cli {
namespace {
namespace fs = std::filesystem;

struct FilterArgs {
  std::string store = StoreOptions{}.dir;
  TaskFilterOptions options;
  std::string report;
  std::string export_dir;
  double time_limit_s = 0;
  double task_timeout_s = 300;
  double memory_budget_gib = 0;
  bool no_compile = false;
  bool no_zygote = false;
};

Status write_text(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush())
      return make_error(ErrorCategory::kIo, "cli.output", "cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return make_error(ErrorCategory::kIo, "cli.output",
                      "cannot rename " + tmp.string() + ": " + ec.message());
  return Status::ok();
}

Error usage(const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, "cli.usage", message);
}

// Writes every passing task's source as NAME.py into `dir` (as `tasks synth --out` names them).
Expected<std::size_t> export_passed(RunStore& store, const FilterSummary& s, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(ErrorCategory::kIo, "cli.output",
                      "cannot create " + dir.string() + ": " + ec.message());
  std::set<std::string> names;
  std::size_t n = 0;
  for (const FilteredTask& f : s.tasks) {
    if (!f.passed) continue;
    ASSIGN_OR_RETURN(TaskRecord r, store.get_task(f.id));
    ASSIGN_OR_RETURN(Task t, from_record(r));
    std::string name = t.name;
    if (!names.insert(name).second) name += "-" + t.content_hash.substr(7, 12);
    RETURN_IF_ERROR(write_text(dir / (name + ".py"), t.source));
    ++n;
  }
  return n;
}

int run_filter(FilterArgs& a) {
  TaskFilterOptions& o = a.options;
  if (o.all && !o.suites.empty()) return report(usage("give --suite NAME or --all, not both"));
  if (!o.all && o.suites.empty())
    return report(usage("tasks filter needs --suite NAME (repeatable) or --all"));
  if (o.gpu.eager_min_ms < 0 || o.gpu.eager_max_ms < o.gpu.eager_min_ms)
    return report(usage("--min-ms " + std::to_string(o.gpu.eager_min_ms) + " and --max-ms " +
                        std::to_string(o.gpu.eager_max_ms) + " leave an empty window"));
  if (o.similarity <= 0 || o.similarity > 1)
    return report(usage("--similarity must be in (0, 1], not " + std::to_string(o.similarity)));
  if (o.gpu.jobs < 1) return report(usage("--jobs must be at least 1"));
  if (o.gpu.timed_trials < 1) return report(usage("--trials must be at least 1"));
  if (a.task_timeout_s <= 0) return report(usage("--task-timeout-s must be positive"));
  o.gpu.compile = !a.no_compile;
  o.gpu.zygote = !a.no_zygote;
  o.gpu.task_wall_ms = static_cast<std::int64_t>(a.task_timeout_s * 1000);
  if (a.memory_budget_gib < 0) return report(usage("--memory-budget-gib must not be negative"));
  o.gpu.memory_budget_bytes = static_cast<std::int64_t>(a.memory_budget_gib * (1 << 30));
  o.time_limit_ms = static_cast<std::int64_t>(a.time_limit_s * 1000);
  if (!a.report.empty()) {  // fail on an unwritable report before the work, not after
    const fs::path parent = fs::absolute(a.report).parent_path();
    std::error_code ec;
    if (!fs::is_directory(parent, ec))
      return report(
          usage("--report " + a.report + ": directory " + parent.string() + " does not exist"));
  }
  StoreOptions so;
  so.dir = a.store;
  auto store = RunStore::open(so, StoreMode::kWrite);
  if (!store) return report(store.error());

  std::unique_ptr<Progress> progress;
  std::size_t total = 0;
  auto summary = filter_tasks(
      **store, o,
      [&](const FilteredTask& f) {
        if (!progress)
          progress = std::make_unique<Progress>(ProgressOptions{.label = "filter", .total = total});
        if (f.passed) {
          progress->advance();
        } else {
          progress->fail();
        }
      },
      &total);
  if (progress) progress->finish();
  if (!summary) return report(summary.error());
  std::printf("%s", filter_summary_text(*summary).c_str());
  if (!a.report.empty()) {
    const bool md = fs::path(a.report).extension() == ".md";
    Status w =
        write_text(a.report, md ? filter_report_markdown(*summary) : filter_report_json(*summary));
    if (!w) return report(w.error());
    std::printf("report: %s\n", a.report.c_str());
  }
  if (!a.export_dir.empty()) {
    auto n = export_passed(**store, *summary, a.export_dir);
    if (!n) return report(n.error());
    std::printf("exported %zu passing tasks to %s\n", *n, a.export_dir.c_str());
  }
  return 0;
}

}  // namespace

void add_tasks_filter_command(CLI::App& tasks, CommandResult& result) {
  auto a = std::make_shared<FilterArgs>();
  const TaskOptions defaults;
  a->options.gpu.eager_min_ms = defaults.eager_min_ms;
  a->options.gpu.eager_max_ms = defaults.eager_max_ms;
  a->options.similarity = defaults.decontamination_threshold;
  auto* cmd = tasks.add_subcommand(
      "filter",
      "Filter stored tasks: drop duplicates and tasks too similar to an evaluation suite, then "
      "run each on the local GPU in a sandboxed child (eager and torch.compile, deterministic, "
      "no random ops, outputs neither constant nor insensitive to an input, eager time inside "
      "the window). Verdicts are stored with the tasks; a rerun skips tasks already filtered "
      "with the same options.");
  cmd->add_option("--store", a->store, "run store directory")->capture_default_str();
  cmd->add_option("--suite", a->options.suites,
                  "filter this suite and the suites below it (repeatable)");
  cmd->add_flag("--all", a->options.all, "filter every task in the store");
  cmd->add_option("--min-ms", a->options.gpu.eager_min_ms, "eager time window: lowest median")
      ->capture_default_str();
  cmd->add_option("--max-ms", a->options.gpu.eager_max_ms, "eager time window: highest median")
      ->capture_default_str();
  cmd->add_option("--decontaminate-against", a->options.decontaminate_against,
                  "drop tasks whose code structure resembles a task of this stored suite");
  cmd->add_option("--similarity", a->options.similarity,
                  "structure similarity (Jaccard of token shingles) that counts as contamination")
      ->capture_default_str();
  cmd->add_option("--jobs", a->options.gpu.jobs, "filter children at once on the GPU")
      ->capture_default_str();
  cmd->add_option("--gpu", a->options.gpu.gpu, "CUDA device index")->capture_default_str();
  cmd->add_option("--memory-budget-gib", a->memory_budget_gib,
                  "GPU memory the children at once may use by their estimate (6x the input bytes "
                  "+ 1 GiB each); 0: 70% of the GPU's")
      ->capture_default_str();
  cmd->add_option("--report", a->report,
                  "write a report of every task (FILE.md: Markdown, else JSON)");
  cmd->add_option("--export", a->export_dir, "write the passing tasks' sources as NAME.py here");
  cmd->add_option("--trials", a->options.gpu.timed_trials, "timed runs per measurement (median)")
      ->capture_default_str();
  cmd->add_option("--warmup", a->options.gpu.warmup_trials, "untimed runs before timing")
      ->capture_default_str();
  cmd->add_flag("--no-compile", a->no_compile, "skip the torch.compile check");
  cmd->add_flag("--no-zygote", a->no_zygote,
                "start a fresh Python for every task instead of forking it from a harness zygote "
                "(one per --jobs thread, torch imported once); same sandbox and verdicts, each "
                "child then pays for its own import of torch");
  cmd->add_option("--task-timeout-s", a->task_timeout_s, "wall limit of one task's child")
      ->capture_default_str();
  cmd->add_option("--time-limit-s", a->time_limit_s,
                  "start no task after this many seconds (0: none); a later run continues")
      ->capture_default_str();
  cmd->add_flag("--rerun", a->options.rerun, "filter again tasks that have a stored verdict");
  cmd->add_option("--python", a->options.gpu.python, "interpreter with torch")
      ->capture_default_str();
  cmd->add_option("--harness-dir", a->options.gpu.harness_dir,
                  "directory holding filter_task.py (default: as `cuda-agent bench` finds it)");
  cmd->add_option("--device", a->options.gpu.device, "cuda, or cpu (for tests)")
      ->capture_default_str();
  cmd->callback([a, &result] { result.exit_code = run_filter(*a); });
}

}  // namespace cuda_agent::cli
