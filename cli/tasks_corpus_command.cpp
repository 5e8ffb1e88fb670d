// `cuda-agent tasks corpus`: the seed corpus of issue 25 (rollout/seed_corpus.h) as JSON Lines,
// and beside it the RL training tasks and the held-out tasks of the same pointwise-chain family
// (tasks/pointwise_chain.h) as KernelBench-format files, NNNNN_<ops>.py like tasks/sample.
//
//   cuda-agent tasks corpus --seed 1 --count 2000 --out corpus.jsonl
//       --train-tasks tasks-train --train-count 256
//       --heldout-tasks tasks-heldout --heldout-count 32
//
// Transcript i is on train task i, so the train directory's tasks are the first K corpus tasks;
// the held-out tasks' operator combinations are in neither (the family's split rule). The same
// flags give byte-identical files. Files are written to a temporary name and renamed.
//
// Exit codes: 0 written; 2 bad input (a count of 0, an unknown style or system prompt, a path that
// cannot be written, a task directory that is not empty without --force).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "cli/command.h"
#include "rollout/seed_corpus.h"

namespace cuda_agent::cli {
namespace {
namespace fs = std::filesystem;

struct CorpusArgs {
  std::uint64_t seed = 0;
  std::uint64_t count = 0;
  std::string out;
  std::string train_dir, heldout_dir;
  std::uint64_t train_count = 64;
  std::uint64_t heldout_count = 32;
  std::string system_prompt = "full";
  std::string mix = "cpu";
  std::vector<std::int64_t> elements;
  bool force = false;
};

Error bad_input(const std::string& code, const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, code, message);
}

Status write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return bad_input("cli.output", "cannot write " + tmp.string());
    out << text;
    if (!out.flush()) return bad_input("cli.output", "cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return bad_input("cli.output", "cannot rename " + tmp.string() + ": " + ec.message());
  return Status::ok();
}

// An empty (or, with --force, emptied of .py files) directory for `what`.
Status prepare_dir(const std::string& dir, const char* what, bool force) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return bad_input("cli.output", std::string("cannot create the ") + what + " directory " + dir +
                                       (ec ? ": " + ec.message() : ""));
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".py") continue;
    if (!force)
      return bad_input("cli.output", std::string("the ") + what + " directory " + dir +
                                         " already holds tasks (" + e.path().filename().string() +
                                         "); pass --force to replace them");
    fs::remove(e.path(), ec);
  }
  return Status::ok();
}

Status write_tasks(const std::vector<PointwiseChainTask>& tasks, const std::string& dir) {
  for (const PointwiseChainTask& t : tasks)
    RETURN_IF_ERROR(write_atomically(fs::path(dir) / (t.name + ".py"), t.source));
  return Status::ok();
}

Status run_corpus(const CorpusArgs& a) {
  if (a.count == 0) return bad_input("cli.usage", "--count must be at least 1");
  if (a.heldout_dir.size() && a.heldout_count == 0)
    return bad_input("cli.usage", "--heldout-count must be at least 1");
  if (a.train_dir.size() && a.train_count == 0)
    return bad_input("cli.usage", "--train-count must be at least 1");
  SeedCorpusOptions o{.seed = a.seed, .system_prompt = a.system_prompt};
  ASSIGN_OR_RETURN(o.style_weights, parse_style_mix(a.mix));
  o.chain.seed = a.seed;
  if (!a.elements.empty()) o.chain.elements_choices = a.elements;
  // Everything that can be refused is checked before the first byte is written.
  ASSIGN_OR_RETURN(CorpusTranscript first, seed_transcript(o, 0));
  {
    std::ofstream probe(a.out + ".tmp", std::ios::binary | std::ios::trunc);
    if (!probe) return bad_input("cli.output", "cannot write the corpus to " + a.out);
  }
  std::error_code ec;
  fs::remove(a.out + ".tmp", ec);
  if (!a.train_dir.empty()) RETURN_IF_ERROR(prepare_dir(a.train_dir, "train tasks", a.force));
  if (!a.heldout_dir.empty())
    RETURN_IF_ERROR(prepare_dir(a.heldout_dir, "held-out tasks", a.force));

  std::string lines;
  std::map<std::string, std::uint64_t> styles;
  double tier_sum = 0, compile_only_sum = 0;
  for (std::uint64_t i = 0; i < a.count; ++i) {
    ASSIGN_OR_RETURN(CorpusTranscript t,
                     i == 0 ? Expected<CorpusTranscript>(std::move(first)) : seed_transcript(o, i));
    lines += corpus_json_line(t) + "\n";
    ++styles[to_string(t.style)];
    tier_sum += t.expected_tier;
    compile_only_sum += t.expected_compile_only;
  }
  RETURN_IF_ERROR(write_atomically(a.out, lines));
  std::string mix;
  for (const auto& [name, n] : styles)
    mix += (mix.empty() ? "" : ", ") + name + " " + std::to_string(n);
  std::printf(
      "wrote %llu transcripts to %s (%s); mean expected tier %.3f, mean compile-only %.3f\n",
      static_cast<unsigned long long>(a.count), a.out.c_str(), mix.c_str(),
      tier_sum / static_cast<double>(a.count), compile_only_sum / static_cast<double>(a.count));

  if (!a.train_dir.empty()) {
    std::vector<PointwiseChainTask> train;
    for (std::uint64_t i = 0; i < a.train_count; ++i) {
      ASSIGN_OR_RETURN(PointwiseChainTask t, pointwise_chain_task(o.chain, ChainSplit::kTrain, i));
      train.push_back(std::move(t));
    }
    RETURN_IF_ERROR(write_tasks(train, a.train_dir));
    std::printf("wrote %llu train tasks to %s\n", static_cast<unsigned long long>(train.size()),
                a.train_dir.c_str());
  }
  if (!a.heldout_dir.empty()) {
    ASSIGN_OR_RETURN(auto heldout,
                     distinct_chain_tasks(o.chain, ChainSplit::kHeldOut, a.heldout_count));
    RETURN_IF_ERROR(write_tasks(heldout, a.heldout_dir));
    std::printf(
        "wrote %llu held-out tasks to %s (operator combinations in neither the corpus "
        "nor the train tasks)\n",
        static_cast<unsigned long long>(heldout.size()), a.heldout_dir.c_str());
  }
  return Status::ok();
}

}  // namespace

void add_tasks_corpus_command(CLI::App& tasks, CommandResult& result) {
  auto a = std::make_shared<CorpusArgs>();
  auto* cmd = tasks.add_subcommand(
      "corpus",
      "Write the seed corpus: agent transcripts on pointwise-chain tasks with known reward tiers "
      "(JSON Lines for the learner), and the family's RL training and held-out task files.");
  cmd->add_option("--seed", a->seed, "seeds the tasks and the styles")->capture_default_str();
  cmd->add_option("--count", a->count, "transcripts to write")->required();
  cmd->add_option("--out", a->out, "the JSON Lines file")->required();
  cmd->add_option("--mix", a->mix,
                  "style weights: cpu (half do not build: mean compile-only reward 0), gpu, or "
                  "STYLE:W,... over fused_vectorized, fused_scalar, per_op_kernels, serial, "
                  "buggy, buggy_fixed")
      ->capture_default_str();
  cmd->add_option("--elements", a->elements,
                  "elements per input tensor, drawn per task (default 16Mi,32Mi,64Mi; a few "
                  "million are launch-bound on an H100 and blur the expected tiers)")
      ->delimiter(',');
  cmd->add_option("--system-prompt", a->system_prompt,
                  "the system message: full (the skill document) or brief")
      ->capture_default_str();
  cmd->add_option("--train-tasks", a->train_dir, "write the RL training tasks here (NNNNN_ops.py)");
  cmd->add_option("--train-count", a->train_count, "training tasks: train tasks 0..K-1")
      ->capture_default_str();
  cmd->add_option("--heldout-tasks", a->heldout_dir,
                  "write held-out tasks here: operator combinations never in the corpus or the "
                  "training tasks");
  cmd->add_option("--heldout-count", a->heldout_count, "held-out tasks, distinct combinations")
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "replace the .py files already in the task directories");
  cmd->callback([a, &result] {
    if (Status s = run_corpus(*a); !s) result.exit_code = report(s.error());
  });
}

}  // namespace cuda_agent::cli
