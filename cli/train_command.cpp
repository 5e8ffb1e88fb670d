// `cuda-agent train [MANIFEST] [--set SECTION.KEY=VALUE]... [--fresh] [--until STAGE]` and
// `cuda-agent train status [--json]`: the main job (issue 24). Train starts every role of the
// run's launch plan (cluster/launch_plan.h) as children on this machine (cluster/
// local_processes.h), supervises them (a child that fails is restarted; one that keeps failing
// stops the run with its log tail), shows progress from the run store, and ends when the
// coordinator reports the run finished. Without a manifest it runs the embedded single-machine
// default, or on a machine without a GPU the embedded CPU manifest (examples/
// single-machine-cpu.toml: a tiny policy, compile-only reward), and says which in its first lines.
//
// Resume: the run's directory (the parent of [store] dir) keeps the manifest the run was started
// with (manifest.toml, normalised). A second `train` resumes the run: the coordinator rebuilds
// its state from the store and the learner loads its latest checkpoint. A manifest that differs
// is refused, naming the changed keys, unless --allow-manifest-change. --fresh moves the old run
// directory aside (nothing is deleted) and starts over.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "cluster/launch_plan.h"
#include "cluster/local_processes.h"
#include "cluster/manifest.h"
#include "cluster/manifest_overrides.h"
#include "coordinator/coordinator_client.h"
#include "core/clock.h"
#include "core/log.h"
#include "gpu_bench/device_probe.h"
#include "rollout/seed_corpus.h"
#include "storage/run_store.h"

namespace cuda_agent::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct TrainArgs {
  std::string manifest;
  std::vector<std::string> sets;
  bool fresh = false;
  std::string until;
  bool allow_manifest_change = false;
  int max_restarts = 5;  // per child within 10 minutes
};

Error bad(const std::string& code, const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, "train." + code, message);
}

Expected<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return make_error(ErrorCategory::kNotFound, "train.no_file", "cannot read " + p.string());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

Status write_text_atomically(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      return make_error(ErrorCategory::kIo, "train.write", "cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec)
    return make_error(ErrorCategory::kIo, "train.write",
                      "rename to " + p.string() + ": " + ec.message());
  return Status::ok();
}

// What the run is and where it lives, after the manifest is chosen and settled.
struct RunSetup {
  Manifest manifest;
  std::string source;  // "examples/... (embedded ...)" or the file path
  fs::path run_dir;
  fs::path manifest_copy;  // run_dir/manifest.toml: what every child reads
  bool compile_only = false;
};

// The stage settings --until STAGE stands for: every stage after it gets 0 steps.
Expected<std::vector<std::string>> until_settings(const std::string& until) {
  const std::vector<std::pair<std::string, std::string>> order = {
      {"single-turn-ppo", "learner.single_turn_steps"},
      {"agent-warmup", "learner.agent_warmup_steps"},
      {"agentic-ppo", "learner.agentic_steps"}};
  std::vector<std::string> sets;
  bool after = false;
  for (const auto& [stage, key] : order) {
    if (after) sets.push_back(key + "=0");
    if (stage == until) after = true;
  }
  if (!after) {
    return bad("bad_stage",
               "--until " + until + ": not a stage (single-turn-ppo, agent-warmup or agentic-ppo)");
  }
  sets.push_back("learner.stage=\"all\"");
  return sets;
}

Expected<RunSetup> settle_run(const TrainArgs& a) {
  RunSetup r;
  std::string text;
  const DeviceList devices = list_devices();
  if (!a.manifest.empty()) {
    ASSIGN_OR_RETURN(text, read_text(a.manifest));
    r.source = a.manifest;
  } else if (devices.devices.empty()) {
    text = std::string(embedded_cpu_manifest());
    r.source =
        "embedded CPU default (examples/single-machine-cpu.toml; no GPU: " + devices.no_gpu_reason +
        ")";
  } else {
    text = std::string(embedded_default_manifest());
    r.source = "embedded single-machine default (examples/single-machine.toml)";
  }
  std::vector<std::string> sets = a.sets;
  if (!a.until.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::string> u, until_settings(a.until));
    sets.insert(sets.begin(), u.begin(), u.end());
  }
  if (!sets.empty()) {
    ASSIGN_OR_RETURN(text, apply_manifest_settings(text, sets));
  }
  const fs::path base =
      a.manifest.empty() ? fs::current_path() : fs::absolute(a.manifest).parent_path();
  ASSIGN_OR_RETURN(r.manifest,
                   parse_manifest(text, a.manifest.empty() ? "<embedded>" : a.manifest, base));
  // Every child reads the run directory's copy of the manifest: its paths must not depend on
  // where that copy lives, so they are written out resolved.
  Manifest& mm = r.manifest;
  mm.store.dir = mm.paths.store_dir.string();
  mm.run.checkpoint_dir = mm.paths.checkpoint_dir.string();
  mm.tasks.train_set = mm.paths.train_set.string();
  mm.tasks.eval_set = mm.paths.eval_set.string();
  mm.model.path = mm.paths.model_path.string();
  mm.rollout.replay_transcripts = mm.paths.replay_transcripts.string();
  mm.security.server_secret_key_file = mm.paths.server_secret_key_file.string();
  mm.security.client_secret_key_file = mm.paths.client_secret_key_file.string();
  mm.security.server_public_key_file = mm.paths.server_public_key_file.string();
  const Manifest& m = r.manifest;
  std::int64_t bench_gpus = 0;
  for (const NodeSpec& n : m.nodes) {
    if (!is_this_host(n.host)) {
      return bad("remote_node",
                 "node '" + n.host +
                     "' is not this machine: `cuda-agent train` starts every role "
                     "here; a run over several machines is started per node from the same manifest "
                     "(`cuda-agent launch --dry-run " +
                     a.manifest + "` prints each node's processes)");
    }
    if (n.gpus > 0 && static_cast<std::size_t>(n.gpus) > devices.devices.size()) {
      return bad(
          "missing_gpus",
          "node '" + n.host + "' has gpus = " + std::to_string(n.gpus) + " but this machine has " +
              std::to_string(devices.devices.size()) +
              (devices.devices.empty() ? " (" + devices.no_gpu_reason + ")" : std::string()) +
              "; without a manifest, train picks the CPU default");
    }
    if (n.has_role("bench")) bench_gpus += static_cast<std::int64_t>(n.bench_gpus.size());
  }
  r.compile_only = bench_gpus == 0;
  r.run_dir = fs::absolute(m.paths.store_dir).parent_path();
  r.manifest_copy = r.run_dir / "manifest.toml";
  return r;
}

// The run directory: created, or checked against the manifest it was started with.
// One `train` per run directory: an flock on `<run dir>.train-lock` beside it (beside, so that
// --fresh can move the directory), held until this process exits. Returns the open descriptor.
Expected<int> lock_run_dir(const RunSetup& r) {
  const fs::path lock = r.run_dir.string() + ".train-lock";
  std::error_code ec;
  fs::create_directories(lock.parent_path(), ec);
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(ErrorCategory::kIo, "train.lock",
                      "cannot open " + lock.string() + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    return make_error(
        ErrorCategory::kUnavailable, "train.busy",
        "another `cuda-agent train` (pid " +
            std::string(n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : "?") +
            ") is running the run in " + r.run_dir.string() +
            "; stop it first (Ctrl-C or SIGTERM), or give this run another [run] name");
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // the pid is only for the message above
  }
  return fd;
}

Status prepare_run_dir(const RunSetup& r, const TrainArgs& a) {
  const std::string normal = render_manifest(r.manifest);
  std::error_code ec;
  if (fs::exists(r.run_dir) && a.fresh) {
    const fs::path aside = r.run_dir.string() + ".replaced-" + std::to_string(now_unix_ms());
    fs::rename(r.run_dir, aside, ec);
    if (ec) {
      return make_error(ErrorCategory::kIo, "train.fresh",
                        "moving the old run aside to " + aside.string() + ": " + ec.message());
    }
    std::printf("--fresh: the previous run directory is kept as %s\n", aside.c_str());
  }
  if (fs::exists(r.manifest_copy)) {
    ASSIGN_OR_RETURN(std::string stored, read_text(r.manifest_copy));
    ASSIGN_OR_RETURN(std::vector<std::string> changed, changed_manifest_keys(stored, normal));
    if (!changed.empty() && !a.allow_manifest_change) {
      std::string keys;
      for (const std::string& k : changed) keys += (keys.empty() ? "" : ", ") + k;
      return bad("manifest_changed",
                 "the run in " + r.run_dir.string() + " was started with another manifest (" +
                     r.manifest_copy.string() + "); changed: " + keys +
                     ". Resume with the same settings, pass --allow-manifest-change to resume "
                     "with these, or --fresh to start a new run");
    }
    if (!changed.empty()) std::printf("resuming with changed settings: %zu keys\n", changed.size());
  }
  fs::create_directories(r.run_dir, ec);
  if (ec) {
    return make_error(ErrorCategory::kIo, "train.run_dir",
                      "cannot create " + r.run_dir.string() + ": " + ec.message());
  }
  return write_text_atomically(r.manifest_copy, normal);
}

// One setup step of a run before its processes start (the tiny model, the corpus, the warm-up):
// a supervised child with a log under logs/, skipped by the caller when its output exists. A
// stop signal ends it (the child with us); a failure is an Error with the log's tail.
Status run_setup_step(const RunSetup& r, StopSignals& signals, const std::string& name,
                      const std::string& what, std::vector<std::string> argv,
                      std::chrono::minutes limit) {
  std::printf("%s\n", what.c_str());
  std::fflush(stdout);
  const Clock::time_point started = Clock::now();
  LocalProcesses once({.log_dir = (r.run_dir / "logs").string(), .max_restarts = 0});
  RETURN_IF_ERROR(once.start({.role = "setup", .name = name, .argv = std::move(argv)}));
  while (Clock::now() < started + limit) {
    for (const ChildEvent& e : once.poll()) {
      if (e.kind != ChildEventKind::kGivenUp) continue;
      if (e.exit_code != 0)
        return make_error(ErrorCategory::kInternal, "train." + name,
                          what + " failed (exit " + std::to_string(e.exit_code) + "):\n" +
                              LocalProcesses::log_tail(e.log_path, 15));
      std::printf("  done in %.1f s (log: logs/%s.log)\n",
                  std::chrono::duration<double>(Clock::now() - started).count(), name.c_str());
      return Status::ok();
    }
    const timespec tick{0, 100'000'000};
    if (const int sig = ::sigtimedwait(&signals.set, nullptr, &tick); sig > 0)
      return make_error(ErrorCategory::kUnavailable, "train.stopped",
                        "stopped by signal " + std::to_string(sig) + " during: " + what);
  }
  return make_error(ErrorCategory::kTimeout, "train." + name,
                    what + " took longer than " + std::to_string(limit.count()) + " minutes");
}

std::vector<std::string> init_argv(const Manifest& m, const fs::path& dir) {
  std::vector<std::string> argv = {
      "cuda-agent", "model", "init", "--tiny", dir.string(), "--seed", std::to_string(m.run.seed)};
  if (m.model.init_size != "tiny") argv.insert(argv.end(), {"--params", m.model.init_size});
  return argv;
}

Status copy_model_files(const fs::path& from, const fs::path& tokenizer_from, const fs::path& to) {
  std::error_code ec;
  const fs::path staging = to.string() + ".tmp";
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  for (const char* f : {"config.json", "model.safetensors"})
    if (!ec) fs::copy_file(from / f, staging / f, ec);
  for (const fs::directory_entry& e : fs::directory_iterator(tokenizer_from, ec))
    if (!ec && e.path().filename().string().rfind("tokenizer", 0) == 0)
      fs::copy_file(e.path(), staging / e.path().filename(), ec);
  if (!ec) fs::rename(staging, to, ec);
  if (ec)
    return make_error(
        ErrorCategory::kIo, "train.warmup_model",
        "cannot assemble the warmed-up model in " + to.string() + ": " + ec.message());
  return Status::ok();
}

// The policy a run whose [model] path is empty starts from, made once per run (each step is
// skipped when its output exists, so a resumed run goes on where it stopped). Without [corpus]:
// a tiny random model. With [corpus] count > 0: the corpus and its task sets, a model of
// [model] init_size whose tokenizer is trained on the corpus, and the supervised warm-up on it;
// the warmed-up weights (with the tokenizer) become the run's initial policy. A policy already in
// place (a run resumed, or one given to it) is used as it is; the corpus's task sets are still
// made when missing, since the run trains and is evaluated on them.
Status ensure_initial_model(const RunSetup& r, StopSignals& signals) {
  const Manifest& m = r.manifest;
  const fs::path dir = initial_model_dir(m);
  const bool have_policy = fs::exists(dir / "config.json");
  if (have_policy && m.corpus.count == 0) return Status::ok();
  if (m.corpus.count == 0) {
    return run_setup_step(
        r, signals, "model-init",
        "making the run's random policy in " + dir.string() + " ([model] path is empty)",
        init_argv(m, dir), std::chrono::minutes(5));
  }
  const fs::path& cdir = m.paths.corpus_dir;
  const fs::path corpus = cdir / "corpus.jsonl";
  if (std::error_code ec; !fs::create_directories(cdir, ec) && ec)
    return make_error(ErrorCategory::kIo, "train.corpus",
                      "cannot create " + cdir.string() + ": " + ec.message());
  if (!fs::exists(corpus)) {
    std::vector<std::string> argv = {"cuda-agent",
                                     "tasks",
                                     "corpus",
                                     "--seed",
                                     std::to_string(m.corpus.seed),
                                     "--count",
                                     std::to_string(m.corpus.count),
                                     "--out",
                                     corpus.string(),
                                     "--train-tasks",
                                     m.paths.train_set.string(),
                                     "--train-count",
                                     std::to_string(m.corpus.train_tasks),
                                     "--heldout-tasks",
                                     m.paths.eval_set.string(),
                                     "--heldout-count",
                                     std::to_string(m.corpus.heldout_tasks),
                                     "--system-prompt",
                                     m.rollout.system_prompt};
    if (!m.corpus.styles.empty()) argv.insert(argv.end(), {"--mix", m.corpus.styles});
    argv.push_back(
        "--force");  // a step stopped halfway left some task files: same seed, same files
    RETURN_IF_ERROR(run_setup_step(r, signals, "corpus",
                                   "writing the seed corpus (" + std::to_string(m.corpus.count) +
                                       " transcripts) and its task sets in " + cdir.string(),
                                   std::move(argv), std::chrono::minutes(10)));
  }
  if (have_policy) return Status::ok();
  // Budgets that cut off most transcripts make the whole run learn nothing: say so up front.
  if (auto shape = corpus_shape(corpus.string()); !shape) {
    log_warn("cannot read the corpus's shape", {{"error", shape.error().to_string()}});
  } else if (const std::string w =
                 corpus_budget_warning(*shape, m.rollout.max_turns, m.rollout.max_context_tokens);
             !w.empty()) {
    std::printf("WARNING: %s\n", w.c_str());
    std::fflush(stdout);
  }
  const fs::path init = cdir / "init-model";
  if (!fs::exists(init / "config.json")) {
    std::vector<std::string> argv = init_argv(m, init);
    argv.insert(argv.end(), {"--tokenizer-corpus", corpus.string(), "--merges",
                             std::to_string(m.corpus.tokenizer_merges)});
    RETURN_IF_ERROR(run_setup_step(
        r, signals, "model-init",
        "making a random " + m.model.init_size + " model with a tokenizer trained on the corpus",
        std::move(argv), std::chrono::minutes(10)));
  }
  const bool gpu =
      std::any_of(m.nodes.begin(), m.nodes.end(), [](const NodeSpec& n) { return n.gpus > 0; });
  const fs::path sft_out = cdir / "warmup";
  RETURN_IF_ERROR(run_setup_step(
      r, signals, "corpus-warmup",
      "supervised warm-up on the corpus (" + std::to_string(m.corpus.sft_steps) + " steps of " +
          std::to_string(m.corpus.sft_batch) + " transcripts, lr " +
          std::to_string(m.corpus.sft_lr) + " with cosine decay)",
      {"cuda-agent", "learn", "sft", "--corpus", corpus.string(), "--model", init.string(), "--out",
       sft_out.string(), "--steps", std::to_string(m.corpus.sft_steps), "--batch-episodes",
       std::to_string(m.corpus.sft_batch), "--checkpoint-every",
       std::to_string(std::max<std::int64_t>(1, m.corpus.sft_steps / 4)), "--lr",
       std::to_string(m.corpus.sft_lr),
       // From scratch: a short linear warm-up, then a cosine decay to
       // a tenth of the rate by the last step.
       "--warmup-steps", std::to_string(std::max<std::int64_t>(1, m.corpus.sft_steps / 20)),
       "--decay-steps", std::to_string(m.corpus.sft_steps), "--seed", std::to_string(m.run.seed),
       "--device", gpu ? "cuda:0" : "cpu", "--dtype", m.model.dtype == "fp32" ? "fp32" : "bf16",
       "--metrics", (cdir / "warmup.jsonl").string(),
       // 32 transcripts (2% of the default 1500) kept out of the warm-up, to measure how much of
       // what it learned holds on tasks it has not seen.
       "--holdout", std::to_string(m.corpus.count >= 320 ? 32 : 0)},
      std::chrono::minutes(60)));
  // The newest sealed checkpoint of the warm-up (learner/checkpoint.h layout).
  fs::path newest;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(sft_out, ec))
    if (e.path().filename().string().rfind("step-", 0) == 0 && e.path() > newest) newest = e.path();
  if (newest.empty())
    return make_error(ErrorCategory::kNotFound, "train.warmup_model",
                      "the warm-up wrote no checkpoint under " + sft_out.string());
  RETURN_IF_ERROR(copy_model_files(newest, init, dir));
  std::printf("the run starts from the warmed-up policy %s (from %s)\n", dir.c_str(),
              newest.c_str());
  return Status::ok();
}

// Progress read from the store the coordinator writes (a follower: it never takes the lock).
struct VersionReward {
  std::uint64_t episodes = 0;
  double reward_sum = 0;
  std::map<int, std::uint64_t> tiers;  // final reward rounded -> episodes
};
struct Progress {
  std::optional<RunRecord> run;
  std::map<std::uint64_t, VersionReward> by_version;
  std::vector<CheckpointRecord> checkpoints;
  std::uint64_t episodes = 0;  ///< ran to a reward
  std::uint64_t aborted = 0;   ///< stored aborted (no reward; not in the curve, never trained)
};

Expected<Progress> read_progress(const RunStore& store, const RunId& run) {
  Progress p;
  if (auto r = store.get_run(run)) {
    p.run = *r;
  } else if (r.error().category != ErrorCategory::kNotFound) {
    return r.error();
  }
  RETURN_IF_ERROR(store.scan_run(run, [&](const EpisodeSummary& s) {
    if (s.status == EpisodeStatus::kAborted) {
      p.aborted += 1;
      return true;
    }
    VersionReward& v = p.by_version[s.policy_version.value()];
    v.episodes += 1;
    v.reward_sum += s.final_reward;
    v.tiers[static_cast<int>(std::lround(s.final_reward))] += 1;
    p.episodes += 1;
    return true;
  }));
  if (auto c = store.list_checkpoints(run)) p.checkpoints = std::move(*c);
  return p;
}

// Idle share of wall time per role over the whole run: the coordinator's per-step figures
// ("idle/learner", "idle/rollout") weighted by each step's window ("coordinator/window_seconds").
struct IdleShares {
  double seconds = 0;  ///< wall time covered
  std::map<std::string, double> by_role;
};

IdleShares read_idle(const RunStore& store, const RunId& run) {
  std::map<std::uint64_t, double> window;
  (void)store.scan_metrics(run, "coordinator/window_seconds", 0, [&](const MetricRecord& m) {
    window[m.step] = m.value;
    return true;
  });
  IdleShares out;
  for (const auto& [step, w] : window) out.seconds += w;
  for (const char* role : {"learner", "rollout"}) {
    double weighted = 0;
    (void)store.scan_metrics(run, std::string("idle/") + role, 0, [&](const MetricRecord& m) {
      auto it = window.find(m.step);
      if (it != window.end()) weighted += m.value * it->second;
      return true;
    });
    if (out.seconds > 0) out.by_role[role] = weighted / out.seconds;
  }
  return out;
}

std::string reward_line(const VersionReward& v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.2f", v.episodes ? v.reward_sum / double(v.episodes) : 0.0);
  return buf;
}

// The reward curve as text: one row per policy version, a bar from -1 to +3.
std::string reward_curve(const Progress& p, bool compile_only) {
  std::string out = std::string("reward by policy version (mean final reward of its episodes") +
                    (compile_only ? "; compile-only: +1 builds, -1 does not)" : ")") + "\n";
  for (const auto& [version, v] : p.by_version) {
    const double mean = v.episodes ? v.reward_sum / double(v.episodes) : 0.0;
    const int width = static_cast<int>(std::lround((std::clamp(mean, -1.0, 3.0) + 1.0) * 10.0));
    char head[96];
    std::snprintf(head, sizeof head, "  v%-4llu %4llu episodes  %s  ",
                  static_cast<unsigned long long>(version),
                  static_cast<unsigned long long>(v.episodes), reward_line(v).c_str());
    out += head + std::string(static_cast<std::size_t>(width), '#') + "\n";
  }
  return out;
}

Status wait_for_store(LocalProcesses& children, const std::string& coordinator,
                      const fs::path& store_dir) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(store_dir / "CURRENT")) {
    for (const ChildEvent& e : children.poll()) {
      if (e.name == coordinator && e.kind == ChildEventKind::kExited) {
        return make_error(ErrorCategory::kInternal, "train.coordinator_failed",
                          "the coordinator exited with code " + std::to_string(e.exit_code) +
                              " while starting; its log ends:\n" +
                              LocalProcesses::log_tail(e.log_path, 20));
      }
    }
    if (Clock::now() >= deadline) {
      return make_error(
          ErrorCategory::kTimeout, "train.no_store",
          "the coordinator did not create the run store " + store_dir.string() + " within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::ok();
}

const char* kCompileOnlyNote =
    "reward: COMPILE-ONLY (no GPU bench in this run): real nvcc and the source and symbol "
    "policies decide +1 (builds) or -1; correctness and speed are NOT measured";

int run_train(const TrainArgs& a, StopSignals& signals) {
  auto setup = settle_run(a);
  if (!setup) return report(setup.error());
  RunSetup& r = *setup;
  const Manifest& m = r.manifest;
  std::printf("cuda-agent train: run '%s' from the %s\n", m.run.name.c_str(), r.source.c_str());
  std::printf("%s\n", r.compile_only ? kCompileOnlyNote
                                     : "reward: full (GPU bench: correctness and timed speed-up)");
  Expected<int> lock = lock_run_dir(r);  // released when this process exits
  if (!lock) return report(lock.error());
  if (Status s = prepare_run_dir(r, a); !s) return report(s.error());
  if (Status s = ensure_initial_model(r, signals); !s) return report(s.error());
  std::printf("run directory %s (logs in logs/, manifest.toml is what every role reads)\n",
              r.run_dir.c_str());
  std::fflush(stdout);

  const std::vector<NodePlan> plan = plan_launch(m, r.manifest_copy.string());
  // A child that fails is restarted; more than --max-restarts (5) failures of one child within 10
  // minutes (a crash loop) stop the run. Counted over the whole run instead, a long run would end
  // at the sixth crash of any one process however far apart (the node agent's rule,
  // cluster/node_agent.h).
  LocalProcesses children({.log_dir = (r.run_dir / "logs").string(),
                           .max_restarts = a.max_restarts,
                           .restart_window_ms = std::chrono::minutes(10)});
  std::string coordinator_name;
  for (const NodePlan& node : plan) {
    for (const ProcessSpec& p : node.processes) {
      if (Status s = children.start(p); !s) {
        children.stop_all();
        return report(s.error());
      }
      if (p.role == "coordinator" && p.argv.size() > 2 && p.argv[2] == "coordinator") {
        coordinator_name = p.name;
        // The learner reads the store the coordinator creates: start the rest once it exists.
        if (Status s = wait_for_store(children, p.name, m.paths.store_dir); !s) {
          children.stop_all();
          return report(s.error());
        }
      }
      std::printf("  started %-28s %s\n", p.name.c_str(),
                  (r.run_dir / "logs" / (p.name + ".log")).c_str());
    }
  }
  std::fflush(stdout);

  StoreOptions so = m.store;
  so.dir = m.paths.store_dir.string();
  std::unique_ptr<RunStore> store;
  const RunId run{m.run.name};
  const Clock::time_point started = Clock::now();
  std::uint64_t shown_step = ~0ull;
  std::optional<std::uint64_t> first_step;  // the run's step when this invocation first saw it
  std::size_t shown_versions = 0;
  std::uint64_t shown_aborted = 0;
  int exit_code = 0;
  bool finished = false;
  const timespec tick{.tv_sec = 0, .tv_nsec = 500'000'000};
  Clock::time_point next_progress = Clock::now();
  while (!finished) {
    const int sig = ::sigtimedwait(&signals.set, nullptr, &tick);
    if (sig > 0) {
      std::printf(
          "signal %d: stopping every role; `cuda-agent train` with the same arguments "
          "resumes the run\n",
          sig);
      exit_code = 130;
      break;
    }
    for (const ChildEvent& e : children.poll()) {
      if (e.kind == ChildEventKind::kExited && e.exit_code != 0 && e.exit_code != 3) {
        std::printf("  %s exited with code %d; restarting it (log %s)\n", e.name.c_str(),
                    e.exit_code, e.log_path.c_str());
      } else if (e.kind == ChildEventKind::kGivenUp && e.name == coordinator_name && e.expected) {
        finished = true;
      } else if (e.kind == ChildEventKind::kGivenUp && e.exit_code == 3) {
        std::printf("%s: the run cannot go on; stopping it. Its log ends:\n%s", e.name.c_str(),
                    LocalProcesses::log_tail(e.log_path, 20).c_str());
        exit_code = 1;
        finished = true;
      } else if (e.kind == ChildEventKind::kGivenUp && !e.expected) {
        std::printf("%s keeps failing (exit %d); stopping the run. Its log ends:\n%s",
                    e.name.c_str(), e.exit_code, LocalProcesses::log_tail(e.log_path, 20).c_str());
        exit_code = 1;
        finished = true;
      } else if (e.kind == ChildEventKind::kGivenUp) {
        std::printf("  %s finished\n", e.name.c_str());
      }
    }
    if (Clock::now() < next_progress && !finished) continue;
    next_progress = Clock::now() + std::chrono::seconds(2);
    if (!store) {
      auto opened = RunStore::open(so, StoreMode::kSecondary);
      if (!opened) continue;  // the coordinator has not created it yet
      store = std::move(*opened);
    }
    if (!store->catch_up()) continue;
    auto p = read_progress(*store, run);
    if (!p || !p->run) continue;
    const std::uint64_t step = p->run->coordinator_state ? p->run->policy_version.value() : 0;
    if (!first_step) first_step = step;
    if (step != shown_step || p->by_version.size() != shown_versions ||
        p->aborted != shown_aborted) {
      shown_aborted = p->aborted;
      shown_step = step;
      shown_versions = p->by_version.size();
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
      const auto last = p->by_version.empty() ? VersionReward{} : p->by_version.rbegin()->second;
      std::printf(
          "[%4llds] stage %-16s policy v%-3llu episodes %-5llu%s latest-version reward %s%s, "
          "checkpoints %zu\n",
          static_cast<long long>(secs.count()), to_string(p->run->stage).c_str(),
          static_cast<unsigned long long>(p->run->policy_version.value()),
          static_cast<unsigned long long>(p->episodes),
          p->aborted ? (" (+" + std::to_string(p->aborted) + " aborted)").c_str() : "",
          reward_line(last).c_str(), r.compile_only ? " (compile-only)" : "",
          p->checkpoints.size());
      std::fflush(stdout);
    }
  }
  children.stop_all();
  if (store && store->catch_up()) {
    if (auto p = read_progress(*store, run); p) {
      std::printf("\n%s", reward_curve(*p, r.compile_only).c_str());
      for (const CheckpointRecord& c : p->checkpoints)
        std::printf("checkpoint step %llu (policy v%llu): %s\n",
                    static_cast<unsigned long long>(c.step),
                    static_cast<unsigned long long>(c.policy_version.value()), c.path.c_str());
    }
  }
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
  if (exit_code == 0) {
    // A resumed run's earlier invocations are not in this figure: say so.
    const std::string resumed = first_step && *first_step > 0
                                    ? " (this invocation, which resumed the run at step " +
                                          std::to_string(*first_step) + ")"
                                    : "";
    std::printf("run '%s' finished in %lld s%s; `cuda-agent train status` shows it again%s\n",
                m.run.name.c_str(), static_cast<long long>(secs.count()), resumed.c_str(),
                r.compile_only ? " (compile-only reward)" : "");
  }
  std::fflush(stdout);
  return exit_code;
}

// What the run's live coordinator says of its members, asked by a status-only client (no
// heartbeats: it never joins the run) within 2 s; nullopt with `why` when none answered.
std::optional<CoordinatorStatus> live_status(const Manifest& m, std::string& why) {
  auto options = coordinator_client_options(
      m, WorkerId{"train-status-" + std::to_string(::getpid())}, MemberRole::kRolloutWorker);
  if (!options) {
    why = options.error().message;
    return std::nullopt;
  }
  options->request_timeout = std::chrono::milliseconds(2'000);
  options->heartbeats = false;  // asks status() only: never a member of the run
  auto client = CoordinatorClient::connect(std::move(*options));
  if (!client) {
    why = client.error().message;
    return std::nullopt;
  }
  auto s = (*client)->status();
  if (!s) {
    why = "no coordinator answered at " + coordinator_endpoint(m) + " within 2 s";
    return std::nullopt;
  }
  return *s;
}

int run_status(const TrainArgs& a, bool json) {
  auto setup = settle_run(a);
  if (!setup) return report(setup.error());
  const RunSetup& r = *setup;
  StoreOptions so = r.manifest.store;
  so.dir = r.manifest.paths.store_dir.string();
  if (!fs::exists(so.dir)) {
    return report(
        make_error(ErrorCategory::kNotFound, "train.no_run",
                   "no run store at " + so.dir + ": start the run with `cuda-agent train`"));
  }
  auto store = RunStore::open(so, StoreMode::kReadOnly);
  if (!store) return report(store.error());
  const RunId run{r.manifest.run.name};
  auto p = read_progress(**store, run);
  if (!p) return report(p.error());
  if (!p->run) {
    return report(make_error(ErrorCategory::kNotFound, "train.no_run",
                             "run '" + run.value() + "' has not recorded a step yet in " + so.dir));
  }
  const CoordinatorStateRecord cs = p->run->coordinator_state.value_or(CoordinatorStateRecord{});
  // What the run was started with (its directory's manifest), not today's defaults: its
  // staleness bound, and its coordinator's port.
  Manifest started = r.manifest;
  if (auto text = read_text(r.manifest_copy); text) {
    if (auto used = parse_manifest(*text, r.manifest_copy.string(), r.run_dir); used)
      started = std::move(*used);
  }
  const auto staleness = static_cast<std::uint64_t>(started.learner.staleness);
  // A run that has not finished may be running now: its coordinator knows the live members.
  std::string no_live;
  const std::optional<CoordinatorStatus> live =
      p->run->state == "finished" ? std::nullopt : live_status(started, no_live);
  if (json) {
    nlohmann::json j = {{"run", run.value()},
                        {"state", p->run->state},
                        {"stage", to_string(p->run->stage)},
                        {"step", cs.step},
                        {"policy_version", p->run->policy_version.value()},
                        {"staleness_bound", staleness},
                        {"reward", r.compile_only ? "compile-only" : "full"},
                        {"episodes", p->episodes},
                        {"aborted", p->aborted},
                        {"trained", cs.trained},
                        {"stale", cs.stale},
                        {"orphaned", cs.orphaned},
                        {"checkpoints", p->checkpoints.size()}};
    nlohmann::json versions = nlohmann::json::array();
    for (const auto& [version, v] : p->by_version) {
      nlohmann::json tiers = nlohmann::json::object();
      for (const auto& [tier, n] : v.tiers) tiers[std::to_string(tier)] = n;
      versions.push_back({{"version", version},
                          {"episodes", v.episodes},
                          {"mean_reward", v.episodes ? v.reward_sum / double(v.episodes) : 0.0},
                          {"tiers", tiers}});
    }
    j["by_version"] = versions;
    const IdleShares idle = read_idle(**store, run);
    j["idle"] = idle.by_role;
    j["idle_seconds"] = idle.seconds;
    if (live) j["live"] = {{"members", live->members}, {"degraded", live->degraded}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf(
      "run '%s' (%s): %s, stage %s, step %llu, policy v%llu, staleness bound S = %llu, %zu "
      "checkpoints\n  episodes: %llu with a reward (%llu aborted); trained %llu, stale %llu, "
      "orphaned %llu\n",
      run.value().c_str(), r.source.c_str(), p->run->state.c_str(),
      to_string(p->run->stage).c_str(), static_cast<unsigned long long>(cs.step),
      static_cast<unsigned long long>(p->run->policy_version.value()),
      static_cast<unsigned long long>(staleness), p->checkpoints.size(),
      static_cast<unsigned long long>(p->episodes), static_cast<unsigned long long>(p->aborted),
      static_cast<unsigned long long>(cs.trained), static_cast<unsigned long long>(cs.stale),
      static_cast<unsigned long long>(cs.orphaned));
  const IdleShares idle = read_idle(**store, run);
  if (!idle.by_role.empty()) {
    std::printf(
        "  idle share of wall time over %.0f s: learner %.2f, rollout %.2f (no episode in "
        "flight); the bench GPU's is not measured by the coordinator\n",
        idle.seconds, idle.by_role.at("learner"), idle.by_role.at("rollout"));
  }
  if (live) {
    std::printf("  live: %llu members heard from%s\n",
                static_cast<unsigned long long>(live->members),
                live->degraded.empty() ? ", none degraded" : "; degraded:");
    for (const std::string& d : live->degraded) std::printf("    %s\n", d.c_str());
  } else if (p->run->state != "finished") {
    std::printf("  live: %s\n", no_live.c_str());
  }
  if (r.compile_only) std::printf("%s\n", kCompileOnlyNote);
  std::printf("%s", reward_curve(*p, r.compile_only).c_str());
  for (const auto& [version, v] : p->by_version) {
    std::string tiers;
    for (const auto& [tier, n] : v.tiers)
      tiers += " " + std::to_string(tier) + ":" + std::to_string(n);
    std::printf("  v%llu tiers%s\n", static_cast<unsigned long long>(version), tiers.c_str());
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<TrainArgs>();
  auto* train = app.add_subcommand(
      "train",
      "Train: start every role of the run on this machine (coordinator, compile farm, bench, "
      "policy engines, rollout workers, learner), supervise them, resume an existing run. "
      "Without MANIFEST: the embedded single-machine default, or without a GPU the CPU default "
      "(tiny policy, compile-only reward).");
  auto add_common = [&](CLI::App* cmd) {
    cmd->add_option("MANIFEST", args->manifest, "run manifest (default: embedded)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--set", args->sets, "SECTION.KEY=VALUE on top of the manifest (repeatable)");
  };
  add_common(train);
  train->add_flag("--fresh", args->fresh,
                  "start a new run; the old run directory is moved aside, not deleted");
  train->add_option("--until", args->until,
                    "run the stages up to this one: single-turn-ppo, agent-warmup, agentic-ppo");
  train->add_flag("--allow-manifest-change", args->allow_manifest_change,
                  "resume although the manifest differs from the one the run started with");
  train
      ->add_option("--max-restarts", args->max_restarts,
                   "restarts of one failing child within 10 minutes before the run is stopped "
                   "as a crash loop (default 5; fault-injection runs raise it)")
      ->check(CLI::Range(0, 1'000'000));
  auto* status = train->add_subcommand(
      "status",
      "Where the run stands: stage, policy version, reward by version and tier, checkpoints");
  auto json = std::make_shared<bool>(false);
  add_common(status);
  status->add_flag("--json", *json, "one JSON object");
  status->callback([args, json, &result] { result.exit_code = run_status(*args, *json); });
  train->callback([args, train, &result] {
    if (train->got_subcommand("status")) return;
    StopSignals signals;
    result.exit_code = run_train(*args, signals);
  });
}

}  // namespace cuda_agent::cli
