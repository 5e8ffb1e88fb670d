// Selection, screening, the GPU filter with resume, store rows and reports (see task_filter.h).
#include "tasks/task_filter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/clock.h"
#include "tasks/code_similarity.h"

namespace cuda_agent {
namespace {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

bool selected(const Task& t, const TaskFilterOptions& o) {
  if (o.all) return true;
  return std::any_of(o.suites.begin(), o.suites.end(),
                     [&](const std::string& s) { return suite_matches(t.suite, s); });
}

// The task's rows: the import's "static" row kept, everything else replaced by `rows`.
void replace_rows(Task& t, const std::vector<FilterResult>& rows) {
  std::vector<FilterResult> kept;
  for (auto& r : t.filters)
    if (r.filter == "static") kept.push_back(std::move(r));
  kept.insert(kept.end(), rows.begin(), rows.end());
  t.filters = std::move(kept);
}

Status save(RunStore& store, const Task& t, std::int64_t created) {
  StoreWrite w;
  w.tasks.push_back(to_record(t, created));
  return store.write(std::move(w), std::chrono::seconds(30));
}

}  // namespace

bool suite_matches(const std::string& suite, const std::string& wanted) {
  return suite == wanted ||
         (suite.size() > wanted.size() && suite.compare(0, wanted.size(), wanted) == 0 &&
          suite[wanted.size()] == '/');
}

std::vector<FilteredTask> screen_tasks(const std::vector<Task>& tasks,
                                       const std::vector<Task>& eval_tasks, double similarity,
                                       const std::string& eval_suite) {
  std::vector<FilteredTask> out(tasks.size());
  std::vector<std::string> hashes;
  std::vector<CodeFingerprint> prints;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    out[i].id = tasks[i].id;
    out[i].name = tasks[i].name;
    out[i].suite = tasks[i].suite;
    hashes.push_back(tasks[i].content_hash);
    prints.push_back(fingerprint_code(tasks[i].source));
  }
  const auto dups = find_duplicates(hashes, prints);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!dups[i]) continue;
    out[i].dropped_by = "duplicate";
    out[i].reason = "duplicate of " + tasks[dups[i]->index].id.value() + " (" + dups[i]->how + ")";
  }
  if (eval_tasks.empty()) return out;
  std::vector<CodeFingerprint> eval;
  for (const Task& e : eval_tasks) eval.push_back(fingerprint_code(e.source));
  std::vector<std::size_t> checked;
  std::vector<CodeFingerprint> train;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!out[i].dropped_by.empty() || suite_matches(tasks[i].suite, eval_suite)) continue;
    checked.push_back(i);
    train.push_back(prints[i]);
  }
  const auto hits = find_contaminated(train, eval, similarity);
  for (std::size_t k = 0; k < checked.size(); ++k) {
    if (!hits[k]) continue;
    FilteredTask& f = out[checked[k]];
    f.dropped_by = "decontamination";
    f.reason = "code structure " + fixed(hits[k]->similarity, 3) + " similar to " +
               eval_tasks[hits[k]->eval_index].id.value() + " (threshold " + fixed(similarity, 2) +
               ")";
  }
  return out;
}

Expected<FilterSummary> filter_tasks(RunStore& store, const TaskFilterOptions& options,
                                     const std::function<void(const FilteredTask&)>& progress,
                                     std::size_t* selected_count) {
  const auto start = Clock::now();
  if (options.all == !options.suites.empty())
    return make_error(ErrorCategory::kInvalidInput, "filter.options",
                      "choose the tasks with --suite NAME (one or more) or --all, not both");
  if (options.similarity <= 0 || options.similarity > 1)
    return make_error(ErrorCategory::kInvalidInput, "filter.options",
                      "--similarity " + std::to_string(options.similarity) + " is outside (0, 1]");
  std::vector<Task> tasks, eval;
  std::vector<std::int64_t> created;
  Status bad = Status::ok();
  RETURN_IF_ERROR(store.scan_tasks({}, [&](const TaskRecord& r) {
    auto t = from_record(r);
    if (!t) {
      bad = t.error();
      return false;
    }
    if (!options.decontaminate_against.empty() &&
        suite_matches(t->suite, options.decontaminate_against))
      eval.push_back(*t);
    if (selected(*t, options)) {
      created.push_back(r.created_unix_ms);
      tasks.push_back(std::move(*t));
    }
    return true;
  }));
  RETURN_IF_ERROR(bad);
  if (selected_count) *selected_count = tasks.size();
  if (tasks.empty())
    return make_error(
        ErrorCategory::kNotFound, "filter.no_tasks",
        options.all ? "the store holds no tasks" : "no stored task is in suite(s) " + [&] {
          std::string s;
          for (const auto& x : options.suites) s += (s.empty() ? "" : ", ") + x;
          return s;
        }() + " (see `cuda-agent tasks list`)");
  if (!options.decontaminate_against.empty() && eval.empty())
    return make_error(ErrorCategory::kNotFound, "filter.no_tasks",
                      "--decontaminate-against " + options.decontaminate_against +
                          ": the store holds no task of that suite (import it first with "
                          "`cuda-agent tasks import`)");

  ASSIGN_OR_RETURN(auto gpu, GpuFilter::create(options.gpu));
  FilterSummary s;
  s.options_key = gpu->options_key();
  s.eval_suite = options.decontaminate_against;
  s.similarity = options.similarity;
  s.tasks = screen_tasks(tasks, eval, options.similarity, options.decontaminate_against);
  const std::int64_t now = now_unix_ms();

  std::vector<const Task*> to_run;
  std::vector<std::size_t> run_index;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    FilteredTask& f = s.tasks[i];
    std::vector<FilterResult> host;
    if (f.dropped_by == "duplicate") {
      host.push_back({.filter = "duplicate", .passed = false, .reason = f.reason, .unix_ms = now});
    } else {
      host.push_back({.filter = "duplicate", .passed = true, .unix_ms = now});
      if (!options.decontaminate_against.empty() &&
          !suite_matches(tasks[i].suite, options.decontaminate_against)) {
        const bool hit = f.dropped_by == "decontamination";
        host.push_back({.filter = "decontamination",
                        .passed = !hit,
                        .reason = hit ? f.reason : "",
                        .unix_ms = now,
                        .details_json = json({{"eval_suite", options.decontaminate_against},
                                              {"threshold", options.similarity}})
                                            .dump()});
      }
    }
    if (!f.dropped_by.empty()) {
      replace_rows(tasks[i], host);
      RETURN_IF_ERROR(save(store, tasks[i], created[i]));
      if (progress) progress(f);
      continue;
    }
    if (auto stored = stored_gpu_result(tasks[i], gpu->options_key()); stored && !options.rerun) {
      json d = json::parse(stored->details_json, nullptr, false);
      f.reused = true;
      f.passed = stored->passed;
      f.eager_ms = d.value("eager_ms", 0.0);
      f.compile_ms = d.value("compile_ms", 0.0);
      f.wall_s = d.value("wall_s", 0.0);
      f.peak_gpu_bytes = d.value("peak_gpu_bytes", std::int64_t{0});
      f.forked = d.value("forked", false);
      f.zygote_note = d.value("zygote_note", "");
      f.input_bytes = task_input_bytes(tasks[i]);
      if (d.contains("phases_s") && d["phases_s"].is_object())
        for (const auto& [name, v] : d["phases_s"].items())
          if (v.is_number()) f.phases_s[name] = v.get<double>();
      if (!f.passed) {
        f.dropped_by = d.value("failed_filter", "gpu_filter");
        const std::string prefix = f.dropped_by + ": ";
        f.reason = stored->reason.rfind(prefix, 0) == 0 ? stored->reason.substr(prefix.size())
                                                        : stored->reason;
      }
      // The host rows are renewed; the GPU rows stay as they were.
      std::vector<FilterResult> rows = host;
      for (const FilterResult& r : tasks[i].filters)
        if (r.filter != "static" && r.filter != "duplicate" && r.filter != "decontamination")
          rows.push_back(r);
      replace_rows(tasks[i], rows);
      RETURN_IF_ERROR(save(store, tasks[i], created[i]));
      if (progress) progress(f);
      continue;
    }
    replace_rows(tasks[i], host);
    to_run.push_back(&tasks[i]);
    run_index.push_back(i);
  }

  const auto deadline = options.time_limit_ms > 0
                            ? start + std::chrono::milliseconds(options.time_limit_ms)
                            : Clock::time_point::max();
  Status write_failed = Status::ok();
  std::vector<bool> ran(tasks.size(), false);
  ASSIGN_OR_RETURN(std::size_t skipped,
                   gpu->run_all(to_run, deadline, [&](std::size_t k, GpuFilterOutcome o) {
                     const std::size_t i = run_index[k];
                     ran[i] = true;
                     FilteredTask& f = s.tasks[i];
                     f.passed = o.passed;
                     f.eager_ms = o.eager_ms;
                     f.compile_ms = o.compile_ms;
                     f.wall_s = o.wall_s;
                     f.phases_s = o.phases_s;
                     f.peak_gpu_bytes = o.peak_gpu_bytes;
                     f.forked = o.forked;
                     f.zygote_note = o.zygote_note;
                     f.input_bytes = task_input_bytes(tasks[i]);
                     if (!o.passed) {
                       f.dropped_by = o.failed_filter;
                       f.reason = o.reason;
                     }
                     std::vector<FilterResult> rows = tasks[i].filters;
                     rows.insert(rows.end(), o.results.begin(), o.results.end());
                     tasks[i].filters = std::move(rows);
                     Status w = save(store, tasks[i], created[i]);
                     if (!w && write_failed) write_failed = w;
                     if (progress) progress(f);
                   }));
  (void)skipped;
  RETURN_IF_ERROR(write_failed);
  for (std::size_t i : run_index) {
    if (ran[i]) continue;
    s.tasks[i].not_filtered = true;
    s.tasks[i].reason = "not filtered before the time limit";
  }
  for (const FilteredTask& f : s.tasks) {
    if (f.not_filtered) {
      ++s.not_filtered;
    } else if (f.passed) {
      ++s.passed;
    } else {
      ++s.dropped;
      ++s.drops[f.dropped_by];
    }
    if (f.reused) ++s.reused;
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

std::string filter_summary_text(const FilterSummary& s) {
  const std::uint64_t judged = s.passed + s.dropped;
  std::string out = "filtered " + std::to_string(s.tasks.size()) + " tasks in " +
                    fixed(s.seconds, 1) + " s: " + std::to_string(s.passed) + " passed (" +
                    fixed(judged ? 100.0 * static_cast<double>(s.passed) / judged : 0.0, 1) +
                    "% of " + std::to_string(judged) + " judged), " + std::to_string(s.dropped) +
                    " dropped";
  if (s.reused) out += ", " + std::to_string(s.reused) + " reused from an earlier run";
  if (s.not_filtered)
    out += ", " + std::to_string(s.not_filtered) +
           " not filtered before the time limit (run again to continue)";
  out += "\n";
  std::vector<std::pair<std::string, std::uint64_t>> drops(s.drops.begin(), s.drops.end());
  std::stable_sort(drops.begin(), drops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::uint64_t most = drops.empty() ? 1 : drops.front().second;
  for (const auto& [why, n] : drops) {
    char line[160];
    const int bar = static_cast<int>(40.0 * static_cast<double>(n) / static_cast<double>(most));
    std::snprintf(line, sizeof line, "  %-18s %6llu  %s\n", why.c_str(),
                  static_cast<unsigned long long>(n), std::string(std::max(bar, 1), '#').c_str());
    out += line;
  }
  out += filter_time_text(s);
  out += "options: " + s.options_key + "\n";
  return out;
}

std::string filter_time_text(const FilterSummary& s) {
  std::vector<double> wall;
  std::map<std::string, std::vector<double>> phases;
  for (const FilteredTask& f : s.tasks) {
    if (f.wall_s <= 0) continue;
    wall.push_back(f.wall_s);
    for (const auto& [name, v] : f.phases_s) phases[name].push_back(v);
  }
  if (wall.empty()) return "";
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  auto cell = [&](const std::string& name, const std::vector<double>& v) {
    return name + " " + fixed(quantile(v, 0.5), 1) + "/" + fixed(quantile(v, 0.9), 1);
  };
  std::string out = "seconds per child (median/p90 of " + std::to_string(wall.size()) +
                    "): " + cell("wall", wall);
  for (const auto& [name, v] : phases) out += ", " + cell(name, v);
  out += "\n";
  std::size_t forked = 0;
  for (const FilteredTask& f : s.tasks) forked += f.wall_s > 0 && f.forked ? 1 : 0;
  out += "children: " + std::to_string(forked) + " forked from a harness zygote, " +
         std::to_string(wall.size() - forked) + " fresh python\n";
  // Why children were not forked is said once per zygote; the distinct notes, first seen first.
  std::vector<std::pair<std::string, std::size_t>> notes;
  for (const FilteredTask& f : s.tasks) {
    if (f.zygote_note.empty()) continue;
    auto it = std::find_if(notes.begin(), notes.end(),
                           [&](const auto& n) { return n.first == f.zygote_note; });
    if (it == notes.end()) {
      notes.emplace_back(f.zygote_note, 1);
    } else {
      ++it->second;
    }
  }
  for (std::size_t i = 0; i < notes.size() && i < 3; ++i)
    out += "  zygote (" + std::to_string(notes[i].second) + " task" +
           (notes[i].second == 1 ? "" : "s") + "): " + notes[i].first + "\n";
  if (notes.size() > 3) out += "  zygote: " + std::to_string(notes.size() - 3) + " more notes\n";
  std::vector<double> peak_gib, ratio;
  for (const FilteredTask& f : s.tasks) {
    if (f.peak_gpu_bytes <= 0) continue;
    peak_gib.push_back(static_cast<double>(f.peak_gpu_bytes) / (1 << 30));
    if (f.input_bytes > 0)
      ratio.push_back(static_cast<double>(f.peak_gpu_bytes) / static_cast<double>(f.input_bytes));
  }
  if (!peak_gib.empty()) {
    out += "GPU memory per child (median/p90 of " + std::to_string(peak_gib.size()) +
           "): peak reserved GiB " + fixed(quantile(peak_gib, 0.5), 1) + "/" +
           fixed(quantile(peak_gib, 0.9), 1);
    if (!ratio.empty()) out += ", " + cell("peak / input bytes", ratio);
    out += "\n";
  }
  return out;
}

std::string filter_report_json(const FilterSummary& s) {
  json tasks = json::array();
  for (const FilteredTask& f : s.tasks) {
    json t = {{"id", f.id.value()},     {"suite", f.suite},
              {"name", f.name},         {"passed", f.passed},
              {"reused", f.reused},     {"not_filtered", f.not_filtered},
              {"eager_ms", f.eager_ms}, {"compile_ms", f.compile_ms}};
    if (f.wall_s > 0) {
      t["wall_s"] = f.wall_s;
      t["phases_s"] = f.phases_s;
      t["forked"] = f.forked;
      if (!f.zygote_note.empty()) t["zygote_note"] = f.zygote_note;
    }
    if (f.peak_gpu_bytes > 0) t["peak_gpu_bytes"] = f.peak_gpu_bytes;
    if (!f.passed) {
      t["dropped_by"] = f.dropped_by;
      t["reason"] = f.reason;
    }
    tasks.push_back(std::move(t));
  }
  const std::uint64_t judged = s.passed + s.dropped;
  json j = {{"format", "cuda-agent-filter-report"},
            {"version", 1},
            {"options_key", s.options_key},
            {"decontaminate_against", s.eval_suite},
            {"similarity", s.similarity},
            {"summary",
             {{"tasks", s.tasks.size()},
              {"passed", s.passed},
              {"dropped", s.dropped},
              {"not_filtered", s.not_filtered},
              {"reused", s.reused},
              {"pass_rate", judged ? static_cast<double>(s.passed) / judged : 0.0},
              {"drops", s.drops},
              {"seconds", s.seconds}}},
            {"tasks", tasks}};
  return j.dump(1) + "\n";
}

std::string filter_report_markdown(const FilterSummary& s) {
  auto cell = [](std::string t) {
    for (char& c : t)
      if (c == '|' || c == '\n') c = c == '|' ? '/' : ' ';
    return t.size() > 300 ? t.substr(0, 300) + "..." : t;
  };
  std::string out = "# Task filter report\n\n```\n" + filter_summary_text(s) + "```\n\n";
  if (!s.eval_suite.empty())
    out += "Decontaminated against `" + s.eval_suite + "` at structure similarity " +
           fixed(s.similarity, 2) + ".\n\n";
  out += "## Dropped tasks\n\n| task | dropped by | reason | eager ms |\n|---|---|---|---|\n";
  for (const FilteredTask& f : s.tasks) {
    if (f.passed || f.not_filtered) continue;
    out += "| `" + f.id.value() + "` | " + f.dropped_by + " | " + cell(f.reason) + " | " +
           (f.eager_ms > 0 ? fixed(f.eager_ms, 3) : "") + " |\n";
  }
  out += "\n## Passed tasks\n\n| task | eager ms | torch.compile ms |\n|---|---|---|\n";
  for (const FilteredTask& f : s.tasks) {
    if (!f.passed) continue;
    out += "| `" + f.id.value() + "` | " + fixed(f.eager_ms, 3) + " | " +
           (f.compile_ms > 0 ? fixed(f.compile_ms, 3) : "") + " |\n";
  }
  return out;
}

}  // namespace cuda_agent
