// `cuda-agent tasks import|synth|list|show`: build task sets in a run store (tasks/); `tasks
// filter` is in cli/tasks_filter_command.cpp. Import and synth open the store as its writer (a
// running job holding it makes them exit 2 naming it); list and show open it as a secondary and
// work beside a live run.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/clock.h"
#include "core/progress.h"
#include "storage/run_store.h"
#include "tasks/synth.h"
#include "tasks/task_import.h"

namespace cuda_agent::cli {
namespace {

std::string store_help() {
  return "run store directory (default: " + StoreOptions{}.dir +
         ", relative to the current directory)";
}

std::unique_ptr<RunStore> open_store(const std::string& dir, StoreMode mode,
                                     CommandResult& result) {
  StoreOptions options;
  options.dir = dir;
  auto store = RunStore::open(options, mode);
  if (!store) {
    report(store.error());
    result.exit_code = 2;
    return nullptr;
  }
  return std::move(store).value();
}

void print_failures(const std::vector<ImportFailure>& failures) {
  for (const auto& f : failures) {
    std::fprintf(stderr, "cuda-agent: %s: %s\n", f.where.c_str(), f.reason.c_str());
  }
}

void add_import(CLI::App& tasks, CommandResult& result) {
  struct Args {
    std::string path;
    std::string store = StoreOptions{}.dir;
    ImportOptions options;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = tasks.add_subcommand(
      "import",
      "Import KernelBench task files (a directory or one .py) and JSON Lines of Ops-6K rows "
      "(ops, data_source, code) into a run store. Every source is checked statically with "
      "python3's ast module, never executed; bad files are named with the reason and skipped.");
  cmd->add_option("PATH", args->path, "directory, .py file or .jsonl file")->required();
  cmd->add_option("--store", args->store, store_help());
  cmd->add_option("--suite", args->options.suite,
                  "suite name; subdirectories are appended (default: PATH's last component)");
  cmd->add_option("--max-file-bytes", args->options.max_file_bytes,
                  "refuse sources longer than this")
      ->capture_default_str();
  cmd->add_option("--python", args->options.validator.python, "the interpreter for the check")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print the report as JSON on stdout");
  cmd->callback([args, &result] {
    std::error_code ec;
    if (!std::filesystem::exists(args->path, ec)) {
      return void(result.exit_code = report(
                      make_error(ErrorCategory::kNotFound, "task.import_path",
                                 "cannot import " + args->path + ": no such file or directory")));
    }
    // Open the store first: a store held by a running job fails before any work.
    auto store = open_store(args->store, StoreMode::kWrite, result);
    if (!store) return;
    Progress progress({.label = "import"});
    auto loaded = load_tasks(args->path, args->options, [&](bool ok) {
      if (ok) {
        progress.advance();
      } else {
        progress.fail();
      }
    });
    progress.finish();
    if (!loaded) return void(result.exit_code = report(loaded.error()));
    auto saved = save_tasks(*store, loaded->tasks);
    if (!saved) return void(result.exit_code = report(saved.error()));
    if (args->json) {
      nlohmann::json failures = nlohmann::json::array();
      for (const auto& f : loaded->failures) {
        failures.push_back({{"where", f.where}, {"reason", f.reason}});
      }
      nlohmann::json out = {{"store", args->store},
                            {"candidates", loaded->candidates},
                            {"imported", saved->imported},
                            {"unchanged", saved->unchanged},
                            {"duplicates", loaded->duplicates},
                            {"failed", loaded->failures.size()},
                            {"failures", failures}};
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      print_failures(loaded->failures);
      std::printf("imported %llu, unchanged %llu, failed %zu (of %llu files and rows",
                  static_cast<unsigned long long>(saved->imported),
                  static_cast<unsigned long long>(saved->unchanged), loaded->failures.size(),
                  static_cast<unsigned long long>(loaded->candidates));
      if (loaded->duplicates) {
        std::printf("; %llu repeated an earlier source",
                    static_cast<unsigned long long>(loaded->duplicates));
      }
      std::printf(") into %s\n", args->store.c_str());
    }
    if (!loaded->failures.empty()) result.exit_code = 1;
  });
}

// Writes `text` to `path` (write to a temporary name, then rename: no half-written task files).
Status write_file(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      return make_error(ErrorCategory::kIo, "cli.output", "cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return make_error(ErrorCategory::kIo, "cli.output",
                      "cannot rename " + tmp.string() + ": " + ec.message());
  }
  return Status::ok();
}

void add_synth(CLI::App& tasks, CommandResult& result) {
  struct Args {
    SynthOptions options;
    std::uint64_t count = 100;
    std::uint64_t first = 0;
    std::string mix;
    std::string out;
    std::string store;
    std::string suite = "synth";
    ValidatorOptions validator;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = tasks.add_subcommand(
      "synth",
      "Synthesize fused-operator tasks (chains of 1-5 torch operators with consistent shapes, "
      "sized for an estimated 2-20 ms eager time on an H200) as KernelBench-format Python. "
      "Deterministic: task i of seed S is always the same program.");
  cmd->add_option("--count", args->count, "how many tasks")->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "generator seed")->capture_default_str();
  cmd->add_option("--first", args->first, "index of the first task (to extend an earlier set)")
      ->capture_default_str();
  cmd->add_option("--mix", args->mix,
                  "chain-length weights, LENGTH:WEIGHT,... (default: "
                  "1:0.1,2:0.6,3:0.2,4:0.05,5:0.05)");
  cmd->add_option("--out", args->out, "write NAME.py files into this directory");
  cmd->add_option("--store", args->store,
                  "validate the programs (python3 -I, ast only) and add them to this run store");
  cmd->add_option("--suite", args->suite, "suite of the stored tasks")->capture_default_str();
  cmd->callback([args, &result] {
    if (args->out.empty() && args->store.empty()) {
      return void(result.exit_code =
                      report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                                        "tasks synth needs --out DIR, --store DIR or both")));
    }
    SynthOptions options = args->options;
    if (!args->mix.empty()) {
      auto mix = parse_length_mix(args->mix);
      if (!mix) return void(result.exit_code = report(mix.error()));
      options.length_weights = *mix;
    }
    std::unique_ptr<RunStore> store;
    if (!args->store.empty()) {  // open first: a locked store fails before the work
      store = open_store(args->store, StoreMode::kWrite, result);
      if (!store) return;
    }
    if (!args->out.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(args->out, ec);
      if (ec) {
        return void(result.exit_code =
                        report(make_error(ErrorCategory::kIo, "cli.output",
                                          "cannot create " + args->out + ": " + ec.message())));
      }
    }
    Progress progress({.label = "synth", .total = args->count});
    auto made = synthesize(options, args->first, args->count, [&] { progress.advance(); });
    progress.finish();
    if (!made) return void(result.exit_code = report(made.error()));
    std::vector<int> lengths(6, 0);
    std::vector<double> ms;
    for (const SynthTask& t : *made) {
      ++lengths[t.ops.size()];
      ms.push_back(t.estimated_ms);
      if (!args->out.empty()) {
        Status s = write_file(std::filesystem::path(args->out) / (t.name + ".py"), t.source);
        if (!s) return void(result.exit_code = report(s.error()));
      }
    }
    std::sort(ms.begin(), ms.end());
    std::printf("synthesized %zu tasks (seed %llu, first %llu): chain lengths", made->size(),
                static_cast<unsigned long long>(options.seed),
                static_cast<unsigned long long>(args->first));
    for (int l = 1; l <= 5; ++l) std::printf(" %d:%d", l, lengths[l]);
    if (!ms.empty()) {
      std::printf("; estimated eager ms min %.2f, median %.2f, max %.2f", ms.front(),
                  ms[ms.size() / 2], ms.back());
    }
    std::printf("\n");
    if (!args->out.empty()) std::printf("wrote %zu files to %s\n", made->size(), args->out.c_str());
    if (!store) return;
    std::vector<SourceToCheck> sources;
    for (const SynthTask& t : *made) sources.push_back({.name = t.name, .source = t.source});
    Progress checking({.label = "validate", .total = sources.size()});
    auto reports = PythonValidator(args->validator).check(sources, [&](bool ok) {
      if (ok) {
        checking.advance();
      } else {
        checking.fail();
      }
    });
    checking.finish();
    if (!reports) return void(result.exit_code = report(reports.error()));
    std::vector<Task> valid;
    std::vector<ImportFailure> failures;
    const std::int64_t now = now_unix_ms();
    for (std::size_t i = 0; i < made->size(); ++i) {
      const SynthTask& t = (*made)[i];
      const StaticReport& r = (*reports)[i];
      if (!r.ok) {
        failures.push_back({.where = t.name, .reason = r.errors.empty() ? "" : r.errors[0]});
        continue;
      }
      Task task = task_from_source(args->suite, t.name, t.source, r, "synth",
                                   "synth seed " + std::to_string(options.seed), now);
      task.declared_ops = t.ops;
      valid.push_back(std::move(task));
    }
    print_failures(failures);
    auto saved = save_tasks(*store, valid);
    if (!saved) return void(result.exit_code = report(saved.error()));
    std::printf("stored %llu new, %llu unchanged, %zu failed validation, in %s\n",
                static_cast<unsigned long long>(saved->imported),
                static_cast<unsigned long long>(saved->unchanged), failures.size(),
                args->store.c_str());
    if (!failures.empty()) result.exit_code = 1;
  });
}

void add_list_show(CLI::App& tasks, CommandResult& result) {
  struct Args {
    std::string store = StoreOptions{}.dir;
    std::string suite;
    std::string id;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* list = tasks.add_subcommand("list", "List the tasks of a store: id, suite, operators");
  list->add_option("--store", args->store, store_help());
  list->add_option("--suite", args->suite, "only this suite (exact name)");
  list->add_flag("--json", args->json, "one JSON object per line");
  list->callback([args, &result] {
    auto store = open_store(args->store, StoreMode::kSecondary, result);
    if (!store) return;
    TaskScan scan;
    if (!args->suite.empty()) scan = {.id_prefix = args->suite + "/", .suite = args->suite};
    std::uint64_t n = 0;
    Status bad = Status::ok();
    Status s = store->scan_tasks(scan, [&](const TaskRecord& r) {
      auto t = from_record(r);
      if (!t) {
        bad = t.error();
        return false;
      }
      ++n;
      std::string ops;
      for (const auto& op : t->ops) ops += (ops.empty() ? "" : ",") + op;
      if (args->json) {
        nlohmann::json line = {{"id", t->id.value()},
                               {"suite", t->suite},
                               {"name", t->name},
                               {"content_hash", t->content_hash},
                               {"data_source", t->data_source},
                               {"ops", t->ops}};
        std::printf("%s\n", line.dump().c_str());
      } else {
        std::printf("%-60s %s\n", t->id.value().c_str(), ops.c_str());
      }
      return true;
    });
    if (!s) return void(result.exit_code = report(s.error()));
    if (!bad) return void(result.exit_code = report(bad.error()));
    if (!args->json) std::fprintf(stderr, "%llu tasks\n", static_cast<unsigned long long>(n));
  });

  auto* show = tasks.add_subcommand("show", "Print one task's stored JSON body");
  show->add_option("ID", args->id, "task id")->required();
  show->add_option("--store", args->store, store_help());
  show->callback([args, &result] {
    auto store = open_store(args->store, StoreMode::kSecondary, result);
    if (!store) return;
    auto r = store->get_task(TaskId{args->id});
    if (!r) return void(result.exit_code = report(r.error()));
    auto t = from_record(*r);
    if (!t) return void(result.exit_code = report(t.error()));
    std::printf("%s\n", nlohmann::json::parse(r->body).dump(2).c_str());
  });
}

}  // namespace

void add_tasks_corpus_command(CLI::App& tasks, CommandResult& result);  // tasks_corpus_command.cpp

void add_tasks_commands(CLI::App& app, CommandResult& result) {
  auto* tasks = app.add_subcommand("tasks", "Task sets: import, synthesize, filter, list");
  tasks->require_subcommand(1);
  add_import(*tasks, result);
  add_synth(*tasks, result);
  add_tasks_filter_command(*tasks, result);
  add_tasks_corpus_command(*tasks, result);
  add_list_show(*tasks, result);
}

}  // namespace cuda_agent::cli
