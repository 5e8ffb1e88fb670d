// `cuda-agent runs list|show`, `cuda-agent trajectories export|show` and `cuda-agent store
// verify`: read a run store (storage/run_store.h). They open it read-only, so they work while a
// run writes it and never take its lock. A store that is missing or not a store exits 2 naming
// it; a damaged one ([io/store.corruption], naming the file) exits 1, never with a shorter answer.
#include <nlohmann/json.hpp>

#include <time.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/progress.h"
#include "messages/trajectory_codec.h"
#include "model/tokenizer.h"
#include "storage/run_store.h"

namespace cuda_agent::cli {
namespace {

std::string store_help() {
  return "run store directory (default: " + StoreOptions{}.dir +
         ", relative to the current directory)";
}

// Opens for reading. A damaged store (a missing, truncated or corrupt file) exits 1; any other
// failure to open is bad input for the command: exit 2.
std::unique_ptr<RunStore> open_store(const std::string& dir, CommandResult& result) {
  StoreOptions options;
  options.dir = dir;
  auto store = RunStore::open(options, StoreMode::kReadOnly);
  if (!store) {
    report(store.error());
    result.exit_code = store.error().category == ErrorCategory::kIo ? 1 : 2;
    return nullptr;
  }
  return std::move(store).value();
}

std::string utc(std::int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  const time_t seconds = static_cast<time_t>(unix_ms / 1000);
  tm parts{};
  gmtime_r(&seconds, &parts);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buf;
}

std::string bytes(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

nlohmann::json to_json(const StoreStats& st) {
  nlohmann::json cfs = nlohmann::json::array();
  for (const auto& c : st.column_families) {
    cfs.push_back({{"name", c.name},
                   {"sst_bytes", c.sst_bytes},
                   {"blob_bytes", c.blob_bytes},
                   {"memtable_bytes", c.memtable_bytes},
                   {"estimated_keys", c.estimated_keys}});
  }
  return {{"episodes", st.episodes},
          {"by_status", st.by_status},
          {"by_stage", st.by_stage},
          {"reward_histogram", {{"edges", st.rewards.edges}, {"counts", st.rewards.counts}}},
          {"best_reward", st.best_reward ? nlohmann::json(*st.best_reward) : nlohmann::json()},
          {"trajectory_bytes", st.trajectory_bytes},
          {"column_families", cfs},
          {"disk_bytes", st.disk_bytes}};
}

void print_counts(const char* label, const std::map<std::string, std::uint64_t>& counts) {
  std::printf("  %s:", label);
  const char* sep = " ";
  for (const auto& [name, n] : counts) {
    std::printf("%s%s %llu", sep, name.c_str(), static_cast<unsigned long long>(n));
    sep = ", ";
  }
  std::printf("%s\n", counts.empty() ? " -" : "");
}

void print_stats(const StoreStats& st) {
  std::printf("  episodes: %llu (trajectories %s)\n", static_cast<unsigned long long>(st.episodes),
              bytes(st.trajectory_bytes).c_str());
  print_counts("by status", st.by_status);
  print_counts("by stage", st.by_stage);
  if (st.best_reward) std::printf("  best reward: %g\n", *st.best_reward);
  std::printf("  reward histogram:\n");
  const auto& e = st.rewards.edges;
  for (std::size_t i = 0; i < st.rewards.counts.size(); ++i) {
    char range[48];
    if (i == 0) {
      std::snprintf(range, sizeof range, "< %g", e.front());
    } else if (i == e.size()) {
      std::snprintf(range, sizeof range, ">= %g", e.back());
    } else {
      std::snprintf(range, sizeof range, "[%g, %g)", e[i - 1], e[i]);
    }
    std::printf("    %-12s %llu\n", range, static_cast<unsigned long long>(st.rewards.counts[i]));
  }
}

void add_runs(CLI::App& app, CommandResult& result) {
  auto* runs = app.add_subcommand("runs", "Runs in a run store");
  runs->require_subcommand(1);
  struct Args {
    std::string store = StoreOptions{}.dir;
    std::string run;
    bool json = false;
  };
  auto args = std::make_shared<Args>();

  auto* list = runs->add_subcommand("list", "List the runs of a store with their episode counts");
  list->add_option("--store", args->store, store_help());
  list->add_flag("--json", args->json, "print JSON");
  list->callback([args, &result] {
    auto store = open_store(args->store, result);
    if (!store) return;
    auto runs = store->list_runs();
    if (!runs) return void(result.exit_code = report(runs.error()));
    if (args->json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : *runs) {
        out.push_back({{"run", r.run.value()},
                       {"episodes", r.episodes},
                       {"state", r.record ? r.record->state : ""},
                       {"created_unix_ms", r.record ? r.record->created_unix_ms : 0}});
      }
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    if (runs->empty()) return void(std::printf("no runs in %s\n", args->store.c_str()));
    std::printf("%-24s %10s  %-10s %-20s %8s  %s\n", "RUN", "EPISODES", "STATE", "STAGE", "POLICY",
                "UPDATED");
    for (const auto& r : *runs) {
      const RunRecord* m = r.record ? &*r.record : nullptr;
      std::printf("%-24s %10llu  %-10s %-20s %8s  %s\n", r.run.value().c_str(),
                  static_cast<unsigned long long>(r.episodes), m ? m->state.c_str() : "-",
                  m ? to_string(m->stage).c_str() : "-",
                  m ? std::to_string(m->policy_version.value()).c_str() : "-",
                  m ? utc(m->updated_unix_ms).c_str() : "-");
    }
  });

  auto* show = runs->add_subcommand(
      "show", "Show one run: metadata, episode counts, reward histogram, checkpoints, store size");
  show->add_option("RUN", args->run, "run id")->required();
  show->add_option("--store", args->store, store_help());
  show->add_flag("--json", args->json, "print JSON");
  show->callback([args, &result] {
    auto store = open_store(args->store, result);
    if (!store) return;
    const RunId run{args->run};
    auto meta = store->get_run(run);
    if (!meta && meta.error().category != ErrorCategory::kNotFound) {
      return void(result.exit_code = report(meta.error()));
    }
    auto st = store->stats(run);
    if (!st) return void(result.exit_code = report(st.error()));
    if (!meta && st->episodes == 0) {
      return void(result.exit_code = report(
                      make_error(ErrorCategory::kNotFound, "store.no_run",
                                 "run " + args->run + " is not in the store " + args->store)));
    }
    auto ckpts = store->list_checkpoints(run);
    if (!ckpts) return void(result.exit_code = report(ckpts.error()));
    if (args->json) {
      nlohmann::json out = {{"run", args->run}, {"store", args->store}, {"stats", to_json(*st)}};
      if (meta) {
        out["state"] = meta->state;
        out["stage"] = to_string(meta->stage);
        out["policy_version"] = meta->policy_version.value();
        out["created_unix_ms"] = meta->created_unix_ms;
        out["updated_unix_ms"] = meta->updated_unix_ms;
      }
      out["checkpoints"] = ckpts->size();
      if (!ckpts->empty()) out["latest_checkpoint"] = ckpts->back().path;
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf("run %s (store %s)\n", args->run.c_str(), args->store.c_str());
    if (meta) {
      std::printf("  state %s, stage %s, policy version %llu\n", meta->state.c_str(),
                  to_string(meta->stage).c_str(),
                  static_cast<unsigned long long>(meta->policy_version.value()));
      std::printf("  created %s, updated %s\n", utc(meta->created_unix_ms).c_str(),
                  utc(meta->updated_unix_ms).c_str());
    }
    print_stats(*st);
    if (ckpts->empty()) {
      std::printf("  checkpoints: none\n");
    } else {
      const CheckpointRecord& c = ckpts->back();
      std::printf("  checkpoints: %zu, latest step %llu (policy %llu) at %s\n", ckpts->size(),
                  static_cast<unsigned long long>(c.step),
                  static_cast<unsigned long long>(c.policy_version.value()), c.path.c_str());
    }
    std::printf("  store size on disk: %s\n", bytes(st->disk_bytes).c_str());
    for (const auto& c : st->column_families) {
      if (c.sst_bytes + c.blob_bytes + c.memtable_bytes == 0) continue;
      std::printf("    %-12s tables %s, blobs %s, unflushed %s, ~%llu keys\n", c.name.c_str(),
                  bytes(c.sst_bytes).c_str(), bytes(c.blob_bytes).c_str(),
                  bytes(c.memtable_bytes).c_str(),
                  static_cast<unsigned long long>(c.estimated_keys));
    }
  });
}

// An episode's turns as text, for a person reading what a policy did: the calls it made and what
// the tools answered; with a tokenizer, also the text its sampled ids stand for (what it wrote,
// parsed into calls or not).
void print_transcript(const Episode& e, const Tokenizer* tokenizer) {
  std::size_t n = 0;
  for (const Turn& t : e.turns) {
    ++n;
    if (t.role == TurnRole::kAssistant) {
      std::printf("\n--- turn %zu: the policy (%zu tokens, version %llu, %.2f s)\n", n,
                  t.token_ids.size(), static_cast<unsigned long long>(t.policy_version.value()),
                  double(t.wall_ms) / 1000);
      if (tokenizer) {
        auto text = tokenizer->decode_lossy(t.token_ids);
        std::printf("%s\n",
                    text ? text->c_str() : ("(undecodable: " + text.error().message + ")").c_str());
        std::printf("--- parsed to:\n");
      }
      if (t.tool_calls.empty()) std::printf("(no tool call)\n");
      for (const ToolCall& c : t.tool_calls)
        std::printf("%s(%s)\n", c.name.c_str(), c.arguments_json.c_str());
    } else if (!t.tool_results.empty()) {
      std::printf("\n--- turn %zu: the tools (%.2f s)\n", n, double(t.wall_ms) / 1000);
      for (const ToolResult& r : t.tool_results)
        std::printf("[%s%s]\n%s\n", r.call_id.c_str(), r.is_error ? ", error" : "",
                    r.content.c_str());
    }
  }
}

void add_trajectories(CLI::App& app, CommandResult& result) {
  auto* traj = app.add_subcommand("trajectories", "Episodes (trajectories) in a run store");
  traj->require_subcommand(1);
  struct Args {
    std::string store = StoreOptions{}.dir;
    std::string run;
    std::string out = "-";
    std::vector<std::string> episodes;
    bool json = false;
    bool transcript = false;
    std::string tokenizer;
  };
  auto args = std::make_shared<Args>();

  auto* exp = traj->add_subcommand(
      "export",
      "Export episodes as JSONL: summary fields and the trajectory message base64-encoded "
      "under trajectory_capnp_b64 (docs/formats/store.md)");
  exp->add_option("--store", args->store, store_help());
  exp->add_option("--run", args->run, "only this run's episodes, in creation order (default: all)");
  exp->add_option("--out", args->out, "output file, or - for stdout")->capture_default_str();
  exp->callback([args, &result] {
    auto store = open_store(args->store, result);
    if (!store) return;
    std::optional<RunId> run;
    if (!args->run.empty()) run = RunId{args->run};
    auto total = store->count_episodes(run);
    if (!total) return void(result.exit_code = report(total.error()));
    const bool to_stdout = args->out == "-";
    std::FILE* out = to_stdout ? stdout : std::fopen(args->out.c_str(), "wb");
    if (!out) {
      return void(result.exit_code = report(
                      make_error(ErrorCategory::kIo, "cli.output", "cannot write " + args->out)));
    }
    Progress progress({.label = "export", .total = *total});
    auto sink = [&](std::string_view line) -> Status {
      if (std::fwrite(line.data(), 1, line.size(), out) == line.size()) return Status::ok();
      return make_error(ErrorCategory::kIo, "cli.output", "write to " + args->out + " failed");
    };
    auto report_or = store->export_jsonl({.run = run}, sink, [&](bool ok) {
      if (ok) {
        progress.advance();
      } else {
        progress.fail();
      }
    });
    progress.finish();
    const bool closed = to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
    if (!report_or) return void(result.exit_code = report(report_or.error()));
    if (!closed) {
      return void(result.exit_code = report(make_error(ErrorCategory::kIo, "cli.output",
                                                       "closing " + args->out + " failed")));
    }
    for (const Error& e : report_or->errors) report(e);
    std::fprintf(stderr, "exported %llu episodes to %s%s\n",
                 static_cast<unsigned long long>(report_or->exported),
                 to_stdout ? "stdout" : args->out.c_str(),
                 report_or->corrupt ? (", skipped " + std::to_string(report_or->corrupt) +
                                       " unreadable (errors above)")
                                          .c_str()
                                    : "");
    if (report_or->corrupt) result.exit_code = 1;
  });

  auto* show = traj->add_subcommand("show", "Show episodes' summaries, one after another");
  show->add_option("EPISODE", args->episodes, "episode ids (one store open serves them all)")
      ->required();
  show->add_option("--store", args->store, store_help());
  show->add_option("--run", args->run, "the episodes' run (needed when several runs have one)");
  show->add_flag("--json", args->json, "print each episode's export line (JSON, with trajectory)");
  show->add_flag("--transcript", args->transcript,
                 "also print its turns: each tool call the policy made (name and arguments) and "
                 "each tool result it was shown, the final evaluation's report among them");
  show->add_option("--tokenizer", args->tokenizer,
                   "with --transcript: a tokenizer.json (or a model directory holding one) to "
                   "print what the policy wrote as text, from its sampled token ids");
  show->callback([args, &result] {
    auto store = open_store(args->store, result);
    if (!store) return;
    std::optional<Tokenizer> tokenizer;
    if (args->transcript && !args->tokenizer.empty()) {
      auto t = Tokenizer::load(args->tokenizer);
      if (!t) return void(result.exit_code = report(t.error()));
      tokenizer = std::move(*t);
    }
    // One episode; an error is reported and the next one shown (the exit code says it failed).
    auto show_one = [&](const std::string& id) -> Status {
      RunId run{args->run};
      if (args->run.empty()) {
        auto found = store->find_episode(EpisodeId{id});
        if (!found) return found.error();
        std::string runs;
        for (const auto& s : *found) runs += (runs.empty() ? "" : ", ") + s.run_id.value();
        if (found->size() != 1) {
          return make_error(
              found->empty() ? ErrorCategory::kNotFound : ErrorCategory::kInvalidInput,
              "store.episode",
              found->empty() ? "episode " + id + " is not in the store " + args->store
                             : "episode " + id + " is in several runs (" + runs + "); pass --run");
        }
        run = found->front().run_id;
      }
      auto e = store->get_episode(run, EpisodeId{id});
      if (!e) return e.error();
      if (args->json) {
        std::fputs(episode_json_line(*e).c_str(), stdout);
        return Status::ok();
      }
      std::printf("episode %s\n  run %s, task %s\n  stage %s, policy version %llu\n",
                  e->episode_id.value().c_str(), e->run_id.value().c_str(),
                  e->task_id.value().c_str(), to_string(e->stage).c_str(),
                  static_cast<unsigned long long>(e->policy_version.value()));
      std::printf("  status %s, final reward %g\n", std::string(to_string(e->status)).c_str(),
                  e->final_reward);
      std::printf("  turns %u, invalid tool calls %u, wasted loops %u, tokens %llu\n", e->turns,
                  e->invalid_tool_calls, e->wasted_loops,
                  static_cast<unsigned long long>(e->total_tokens));
      std::printf("  created %s\n  trajectory %s (Cap'n Proto; decoded by the trajectory codec)\n",
                  utc(e->created_unix_ms).c_str(), bytes(e->trajectory_bytes.size()).c_str());
      if (!args->transcript) return Status::ok();
      auto episode = decode_episode(e->trajectory_bytes);
      if (!episode) return episode.error();
      print_transcript(*episode, tokenizer ? &*tokenizer : nullptr);
      return Status::ok();
    };
    for (std::size_t i = 0; i < args->episodes.size(); ++i) {
      if (i > 0 && !args->json) std::printf("\n");
      if (Status s = show_one(args->episodes[i]); !s) result.exit_code = report(s.error());
    }
  });
}

void add_verify(CLI::App& app, CommandResult& result) {
  auto* store = app.add_subcommand("store", "Run store maintenance");
  store->require_subcommand(1);
  struct Args {
    std::string dir;
    bool verbose = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* verify = store->add_subcommand(
      "verify",
      "Check every checksum of a run store without changing it: the file set, every table file's "
      "block checksums, every file's recorded whole-file checksum and the blobs of older blob "
      "files. Exit 0 when clean, 1 when damaged (the damaged files named), 2 when DIR is not a "
      "store. Safe while a run writes the store.");
  verify->add_option("DIR", args->dir, "run store directory")->required();
  verify->add_flag("--verbose", args->verbose, "also list every file found intact");
  verify->add_flag("--json", args->json, "print the report as JSON");
  verify->callback([args, &result] {
    StoreOptions options;
    options.dir = args->dir;
    auto report_or = verify_store(options);
    if (!report_or) return void(result.exit_code = report(report_or.error()));
    const VerifyReport& r = *report_or;
    std::uint64_t tables = 0, blobs = 0, total = 0, damaged = 0;
    for (const FileCheck& f : r.files) {
      (f.kind == "blob" ? blobs : tables) += 1;
      total += f.bytes;
      if (!f.result) ++damaged;
    }
    if (args->json) {
      nlohmann::json files = nlohmann::json::array();
      for (const FileCheck& f : r.files) {
        files.push_back({{"path", f.path},
                         {"kind", f.kind},
                         {"column_family", f.column_family},
                         {"bytes", f.bytes},
                         {"whole_file_checksum", f.whole_file_checksum},
                         {"ok", static_cast<bool>(f.result)},
                         {"error", f.result ? "" : f.result.error().message}});
      }
      nlohmann::json errors = nlohmann::json::array();
      for (const Error& e : r.errors) errors.push_back(e.message);
      std::printf("%s\n", nlohmann::json{{"store", r.dir},
                                         {"clean", r.clean()},
                                         {"files", files},
                                         {"errors", errors},
                                         {"values_read", r.values_read}}
                              .dump(2)
                              .c_str());
    } else {
      for (const FileCheck& f : r.files) {
        if (f.result && !args->verbose) continue;
        const std::string checks =
            f.kind == "table"
                ? (f.whole_file_checksum ? "block and file checksums" : "block checksums")
                : (f.whole_file_checksum ? "file checksum" : "checked by reading its blobs");
        std::printf("%-7s %s (%s%s%s, %s, %s)", f.result ? "ok" : "DAMAGED", f.path.c_str(),
                    f.kind.c_str(), f.column_family.empty() ? "" : " of ", f.column_family.c_str(),
                    bytes(f.bytes).c_str(), checks.c_str());
        if (f.result) {
          std::printf("\n");
        } else {
          const Error& e = f.result.error();
          std::printf(": %s [%s/%s]\n", e.message.c_str(),
                      std::string(to_string(e.category)).c_str(), e.code.c_str());
        }
      }
      for (const Error& e : r.errors) report(e);
      std::printf(
          "store verify %s: %llu files (%llu table, %llu blob, %s)%s, %llu damaged, %zu "
          "other errors: %s\n",
          r.dir.c_str(), static_cast<unsigned long long>(r.files.size()),
          static_cast<unsigned long long>(tables), static_cast<unsigned long long>(blobs),
          bytes(total).c_str(),
          r.values_read ? (", " + std::to_string(r.values_read) + " blob values read").c_str() : "",
          static_cast<unsigned long long>(damaged), r.errors.size(),
          r.clean() ? "clean" : "DAMAGED");
    }
    if (!r.clean()) result.exit_code = 1;
  });
}

}  // namespace

void add_store_commands(CLI::App& app, CommandResult& result) {
  add_runs(app, result);
  add_trajectories(app, result);
  add_verify(app, result);
}

}  // namespace cuda_agent::cli
