// The run manifest: one TOML file that names the nodes, their GPUs and roles, the store and
// checkpoint paths, the CURVE keys, and every option of every part (DESIGN.md section 7).
// docs/MANIFEST.md documents the format; its option reference is render_defaults()'s output.
//
//   Expected<Manifest> m = load_manifest("examples/two-nodes.toml");
//   if (!m) { std::cerr << m.error().to_string() << "\n"; return 2; }
//   std::cout << render_plan(plan_launch(*m, "examples/two-nodes.toml"));  // launch_plan.h
//
// Every error is category kInvalidInput with a code "manifest.*" (listed in docs/MANIFEST.md) and
// a message "FILE:LINE:COL: [section] 'key': what was wrong". When several problems are found,
// the earliest (by line) leads the message and the others follow it, one a line.
//
// Paths: the option structs keep every path exactly as written, so render_manifest() gives the
// file back; `Manifest::paths` holds the same paths resolved against the manifest's directory
// (absolute paths stay as they are, empty stays empty). Code that opens files uses `paths`.
//
// Threading: plain functions on values; they share no state and may run on any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/run_options.h"
#include "compile_farm/compile_options.h"
#include "core/error.h"
#include "gpu_bench/bench_options.h"
#include "learner/learner_options.h"
#include "model/model_options.h"
#include "rollout/corpus_options.h"
#include "rollout/rollout_options.h"
#include "storage/store_options.h"
#include "tasks/task_options.h"

namespace cuda_agent {

/// The roles a node may have, in the order launch plans and messages list them.
inline constexpr std::string_view kNodeRoles[] = {"coordinator", "learner", "rollout", "compile",
                                                  "bench"};

/// One [[nodes]] table: a machine and what runs on it. GPU indices are CUDA device ordinals of
/// that machine, each in 0..gpus-1, kept in the order written. `visit` lists the keys for the
/// reader and render_defaults(), like the option structs (core/option_fields.h).
struct NodeSpec {
  std::string host;
  std::int64_t gpus = 0;
  std::vector<std::string> roles;
  std::vector<std::int64_t> learner_gpus;
  std::vector<std::int64_t> rollout_gpus;
  std::vector<std::int64_t> bench_gpus;
  std::int64_t compile_workers = 0;  ///< after loading: 1 by default with 'compile', else 0
  int source_line = 0;               ///< line of its [[nodes]] header (0: not from a file)

  bool has_role(std::string_view role) const;

  template <class V>
  void visit(V& v) {
    v({.key = "host",
       .doc = "Required. Host name or address by which the other nodes reach this one; unique in "
              "a run."},
      host);
    v({.key = "gpus", .unit = "GPUs", .doc = "GPUs the machine has.", .min = 0, .max = 1024}, gpus);
    v({.key = "roles",
       .doc = "Required, not empty. What runs here: 'coordinator' (exactly one node; also runs "
              "the compile-farm and bench-pool brokers), 'learner', 'rollout', 'compile' (CPU "
              "compile workers), 'bench' (GPU bench workers).",
       .choices = {"coordinator", "learner", "rollout", "compile", "bench"}},
      roles);
    v({.key = "learner_gpus",
       .doc = "GPUs of the learner role, one data-parallel rank each; required with 'learner' on a "
              "node with GPUs (a node with gpus = 0 runs one learner rank on the CPU)."},
      learner_gpus);
    v({.key = "rollout_gpus",
       .doc = "GPUs of the rollout role, one rollout worker and policy engine each; required with "
              "'rollout' on a node with GPUs (a node with gpus = 0 runs one of each on the CPU). "
              "May overlap learner_gpus only with [run] colocate_learner_rollout = true."},
      rollout_gpus);
    v({.key = "bench_gpus",
       .doc = "GPUs of the bench role, one bench worker each; required with 'bench'. A bench GPU "
              "may serve no other role unless [run] allow_shared_bench_gpu = true."},
      bench_gpus);
    v({.key = "compile_workers",
       .unit = "processes",
       .doc = "Compile worker processes started here; only with 'compile', where it defaults to 1.",
       .min = 1,
       .max = 1024},
      compile_workers);
  }
};

/// Every path of the manifest resolved against its directory (see the file comment).
struct ResolvedPaths {
  std::filesystem::path store_dir;       ///< [store] dir
  std::filesystem::path checkpoint_dir;  ///< [run] checkpoint_dir
  /// [tasks] train_set and eval_set, or with [corpus] count > 0 the corpus's task sets:
  /// corpus_dir/train-tasks and corpus_dir/heldout-tasks.
  std::filesystem::path train_set;
  std::filesystem::path eval_set;  ///< empty: none
  /// Where `cuda-agent train` writes the seed corpus: <store dir>/../corpus.
  std::filesystem::path corpus_dir;
  std::filesystem::path model_path;              ///< [model] path (empty: tiny random model)
  std::filesystem::path replay_transcripts;      ///< [rollout] replay_transcripts (empty: none)
  std::filesystem::path server_secret_key_file;  ///< [security] ... (empty: no CURVE)
  std::filesystem::path client_secret_key_file;
  std::filesystem::path server_public_key_file;
};

/// A loaded and validated manifest. Sections the file leaves out hold their defaults.
struct Manifest {
  std::filesystem::path file;      ///< as passed to load_manifest, or the source name
  std::filesystem::path base_dir;  ///< directory relative paths are resolved against
  RunOptions run;
  SecurityOptions security;
  StoreOptions store;
  CompileOptions compile;
  BenchOptions bench;
  RolloutOptions rollout;
  LearnerOptions learner;
  ModelOptions model;
  TaskOptions tasks;
  CorpusOptions corpus;
  std::vector<NodeSpec> nodes;  ///< in file order; exactly one has the role 'coordinator'
  ResolvedPaths paths;

  /// The node with the role 'coordinator'.
  const NodeSpec& coordinator() const;
};

/// Reads, parses and validates the file. Relative paths resolve against the file's directory
/// (made absolute). Key files named in [security] are read and checked.
Expected<Manifest> load_manifest(const std::filesystem::path& file);

/// Parses and validates manifest text; `source_name` is the file name used in messages and
/// `base_dir` the directory relative paths resolve against (and key files are read from).
Expected<Manifest> parse_manifest(std::string_view toml_text, std::string_view source_name,
                                  const std::filesystem::path& base_dir);

/// The text of examples/single-machine.toml, compiled in: the manifest of a run started without
/// --manifest (resolve its paths against the working directory).
std::string_view embedded_default_manifest();

/// The text of examples/single-machine-cpu.toml, compiled in: what `cuda-agent train` runs when it
/// is given no manifest and the machine has no GPU (every role on the CPU, compile-only reward).
std::string_view embedded_cpu_manifest();

/// A complete, commented TOML manifest: every section and option with its documentation, unit,
/// range or choices, set to its default, and one [[nodes]] table (localhost, coordinator +
/// compile, no GPUs) after a comment block documenting every node key. The only source of option
/// documentation: `cuda-agent manifest defaults` prints it and docs/MANIFEST.md embeds it.
/// parse_manifest(render_defaults()) succeeds and gives the defaults back.
std::string render_defaults();

/// `m` as a commented TOML manifest in the same layout as render_defaults(); parsing the result
/// gives back `m`'s options and nodes (paths as written).
std::string render_manifest(const Manifest& m);

}  // namespace cuda_agent
