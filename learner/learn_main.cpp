// cuda-agent-learn: the learner run alone on stored data (the torch-linked half of `cuda-agent
// learn`; a separate executable so that `cuda-agent` stays torch-free).
//
//   cuda-agent-learn sft   --store DIR --run RUN --model DIR --out DIR [--steps N] ...
//   cuda-agent-learn value --store DIR --run RUN --model DIR --out DIR [--critic DIR] ...
//   cuda-agent-learn ppo   --store DIR --run RUN --model DIR --out DIR [--critic DIR] ...
//
// Data: sft trains on the run's RFT selection (positive, completed episodes: RunStore::
// select_rft); value and ppo on every episode of the run (scan_replay). A malformed episode is
// refused with learner.bad_trajectory and the rest go on. Batches: --batch-episodes sequences per
// step, drawn without replacement from a seeded permutation per epoch, so step s always sees the
// same batch: a resumed run trains exactly the steps it owes, on the batches it owes them.
// Checkpoints: every --checkpoint-every steps and at the end, under --out (learner/checkpoint.h);
// a start with a valid checkpoint under --out resumes from it (--fresh refuses to start over a
// non-empty --out instead of silently mixing runs: remove it yourself).
// Data parallel: start W processes with --rank 0..W-1 --world-size W --rendezvous file:PATH (or
// tcp://HOST:PORT); each trains its share of every batch. One metrics line per step on stdout;
// --metrics FILE appends them as JSON Lines.
//
// Exit codes: 0 done, 1 the job failed, 2 bad input.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>

#include "learner/checkpoint.h"
#include "learner/episode_source.h"
#include "learner/learner_group.h"
#include "learner/trainer.h"
#include "storage/run_store.h"

namespace cuda_agent {
namespace {

int report(const Error& e) {
  std::fprintf(stderr, "cuda-agent-learn: %s [%s/%s]\n", e.message.c_str(),
               std::string(to_string(e.category)).c_str(), e.code.c_str());
  return e.category == ErrorCategory::kInvalidInput || e.category == ErrorCategory::kNotFound ? 2
                                                                                              : 1;
}

struct LearnArgs {
  std::string mode;  // sft | value | ppo
  std::string store, run, model, critic, out, metrics, device = "cpu", dtype, rendezvous;
  std::int64_t steps = 100, batch_episodes = 16, micro_batch_tokens = 32'768;
  std::int64_t checkpoint_every = 20, warmup_steps = 0, epochs = 1, keep_last = 3;
  double lr = 1e-5, critic_lr = 6e-6, max_grad_norm = 1.0, weight_decay = 0.0, temperature = 1.0;
  double clip_low = 0.2, clip_high = 0.28, gamma = 1.0, gae_lambda = 0.95;
  std::uint64_t seed = 0;
  int rank = 0, world_size = 1;
  std::int64_t timeout_ms = 600'000;
  bool shard_optimizer = false;
};

Expected<at::Device> parse_device(const std::string& d) {
  if (d == "cpu") return at::Device(at::kCPU);
  if (d.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available())
      return make_error(ErrorCategory::kUnavailable, "learner.no_gpu",
                        "--device " + d + ": no GPU visible to libtorch");
    return at::Device(d);
  }
  return make_error(ErrorCategory::kInvalidInput, "cli.usage",
                    "--device: cpu, cuda or cuda:N (got '" + d + "')");
}

// Step s's batch: indices into `n` sequences. Epoch e = s * b / n uses the permutation seeded by
// (seed, e); consecutive steps take consecutive slices, wrapping into the next epoch.
std::vector<std::size_t> batch_for_step(std::uint64_t seed, std::uint64_t step, std::size_t n,
                                        std::size_t b) {
  std::vector<std::size_t> out;
  std::uint64_t first = step * b;
  std::uint64_t cached_epoch = ~0ULL;
  std::vector<std::size_t> perm(n);
  for (std::size_t k = 0; k < std::min(b, n); ++k) {
    const std::uint64_t i = first + k, epoch = i / n;
    if (epoch != cached_epoch) {
      std::iota(perm.begin(), perm.end(), 0);
      std::mt19937_64 rng(seed * 1'000'003ULL + epoch);
      for (std::size_t j = n; j > 1; --j) std::swap(perm[j - 1], perm[rng() % j]);
      cached_epoch = epoch;
    }
    out.push_back(perm[i % n]);
  }
  return out;
}

Expected<std::vector<TrainSequence>> load_data(const LearnArgs& a, std::int64_t vocab) {
  StoreOptions so;
  so.dir = a.store;
  ASSIGN_OR_RETURN(auto store, RunStore::open(so, StoreMode::kReadOnly));
  std::vector<EpisodeSummary> picked;
  if (a.mode == "sft") {
    ASSIGN_OR_RETURN(picked, store->select_rft({.run = RunId{a.run}}));
  } else {
    RETURN_IF_ERROR(store->scan_replay({.run = RunId{a.run}}, [&](const EpisodeSummary& s) {
      picked.push_back(s);
      return true;
    }));
  }
  ASSIGN_OR_RETURN(LoadedSequences loaded,
                   load_sequences(*store, picked, {.vocab_size = vocab, .max_tokens = 0}));
  for (const Error& e : loaded.refused)
    std::fprintf(stderr, "cuda-agent-learn: refused: %s\n", e.to_string().c_str());
  if (loaded.sequences.empty())
    return make_error(ErrorCategory::kNotFound, "learner.no_data",
                      a.store + ": run '" + a.run + "' has no " +
                          (a.mode == "sft" ? "RFT-selected (positive, completed) " : "") +
                          "episodes to train on (" + std::to_string(picked.size()) + " selected, " +
                          std::to_string(loaded.refused.size()) + " refused)");
  std::printf("data: %zu sequences from run '%s' (%zu refused)\n", loaded.sequences.size(),
              a.run.c_str(), loaded.refused.size());
  return std::move(loaded.sequences);
}

int run_learn(const LearnArgs& a) {
  auto device = parse_device(a.device);
  if (!device) return report(device.error());
  LoadOptions lo{.device = *device};
  if (!a.dtype.empty()) {
    auto t = parse_dtype_name(a.dtype);
    if (!t) return report(t.error());
    lo.dtype = *t;
  }
  auto actor = Transformer::load(a.model, lo);
  if (!actor) return report(actor.error());
  std::optional<Critic> critic;
  if (a.mode != "sft") {
    const std::string dir = a.critic.empty() ? a.model : a.critic;
    auto backbone = Transformer::load(dir, lo);
    if (!backbone) return report(backbone.error());
    const std::string head_path = dir + "/value_head.safetensors";
    auto opts = at::TensorOptions().dtype(backbone->dtype()).device(backbone->device());
    ValueHead head = ValueHead::zeros(backbone->config().hidden_size, opts);
    if (std::filesystem::exists(head_path)) {
      auto h = ValueHead::load(head_path, opts);
      if (!h) return report(h.error());
      head = std::move(*h);
    }
    critic = Critic{std::move(*backbone), std::move(head)};
  }
  auto data = load_data(a, actor->config().vocab_size);
  if (!data) return report(data.error());

  std::unique_ptr<LearnerGroup> group;
  if (a.world_size > 1) {
    LearnerGroupOptions go{.rank = a.rank,
                           .world_size = a.world_size,
                           .rendezvous = a.rendezvous,
                           .timeout = std::chrono::milliseconds(a.timeout_ms)};
    if (device->is_cuda()) go.cuda_device = device->has_index() ? device->index() : 0;
    auto g = LearnerGroup::create(go);
    if (!g) return report(g.error());
    group = std::move(*g);
  }

  TrainerOptions to;
  to.micro_batch_tokens = a.micro_batch_tokens;
  to.temperature = a.temperature;
  to.ppo.clip_low = a.clip_low;
  to.ppo.clip_high = a.clip_high;
  to.gamma = a.gamma;
  to.gae_lambda = a.gae_lambda;
  to.ppo_epochs = a.epochs;
  to.shard_optimizer = a.shard_optimizer;
  to.actor_optimizer = {.lr = a.lr,
                        .weight_decay = a.weight_decay,
                        .max_grad_norm = a.max_grad_norm,
                        .warmup_steps = a.warmup_steps};
  to.critic_optimizer = to.actor_optimizer;
  to.critic_optimizer.lr = a.mode == "value" ? a.lr : a.critic_lr;
  auto trainer = Trainer::create(std::move(*actor), std::move(critic), to, group.get());
  if (!trainer) return report(trainer.error());
  Trainer& t = **trainer;

  auto restored = t.restore_checkpoint(a.out);
  if (!restored) return report(restored.error());
  if (*restored) {
    std::printf("resumed from %s at step %llu (version %llu)\n", a.out.c_str(),
                static_cast<unsigned long long>(t.steps()),
                static_cast<unsigned long long>(t.policy_version()));
  }
  std::ofstream metrics;
  if (!a.metrics.empty() && a.rank == 0) metrics.open(a.metrics, std::ios::app);
  const std::size_t n = data->size(), b = std::size_t(std::max<std::int64_t>(1, a.batch_episodes));
  while (t.steps() < std::uint64_t(a.steps)) {
    std::vector<TrainSequence> batch;
    for (std::size_t i : batch_for_step(a.seed, t.steps(), n, b)) batch.push_back((*data)[i]);
    Expected<StepMetrics> m = a.mode == "sft"     ? t.sft_step(batch)
                              : a.mode == "value" ? t.value_step(batch)
                                                  : t.ppo_step(batch);
    if (!m) return report(m.error());
    if (a.rank == 0) {
      std::printf("%s\n", m->line().c_str());
      std::fflush(stdout);
      if (metrics.is_open()) metrics << m->to_json().dump() << "\n" << std::flush;
    }
    if (t.steps() % std::uint64_t(a.checkpoint_every) == 0 || t.steps() == std::uint64_t(a.steps)) {
      Status s = t.save_checkpoint(a.out, {{"mode", a.mode}, {"run", a.run}, {"seed", a.seed}});
      if (!s) return report(s.error());
    }
  }
  if (a.rank == 0)
    std::printf("done: %llu steps; checkpoints under %s\n",
                static_cast<unsigned long long>(t.steps()), a.out.c_str());
  return 0;
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) {
  using namespace cuda_agent;
  CLI::App app{
      "cuda-agent-learn: the learner on stored episodes (SFT/RFT, value pretraining, PPO)"};
  app.require_subcommand(1);
  LearnArgs a;
  for (const char* mode : {"sft", "value", "ppo"}) {
    auto* sub = app.add_subcommand(
        mode, std::string(mode) == "sft"     ? "RFT / SFT on the run's positive, completed episodes"
              : std::string(mode) == "value" ? "value pretraining of the critic on GAE returns"
                                             : "PPO with a critic (or a reward baseline) on every "
                                               "episode of the run");
    sub->add_option("--store", a.store, "run store directory")->required();
    sub->add_option("--run", a.run, "run id in the store")->required();
    sub->add_option("--model", a.model, "actor: Hugging Face model directory")->required();
    sub->add_option("--out", a.out, "checkpoint directory (resumed when it holds one)")->required();
    sub->add_option("--critic", a.critic,
                    "critic backbone (+ value_head.safetensors); default: a copy of --model "
                    "with a zero value head");
    sub->add_option("--steps", a.steps, "total optimizer steps")->check(CLI::PositiveNumber);
    sub->add_option("--batch-episodes", a.batch_episodes, "sequences per step")
        ->check(CLI::PositiveNumber);
    sub->add_option("--micro-batch-tokens", a.micro_batch_tokens, "padded tokens per micro-batch")
        ->check(CLI::PositiveNumber);
    sub->add_option("--checkpoint-every", a.checkpoint_every, "steps between checkpoints")
        ->check(CLI::PositiveNumber);
    sub->add_option("--keep-last", a.keep_last, "checkpoints kept")->check(CLI::PositiveNumber);
    sub->add_option("--lr", a.lr, "actor learning rate (the critic's for value)");
    sub->add_option("--critic-lr", a.critic_lr, "critic learning rate (ppo)");
    sub->add_option("--warmup-steps", a.warmup_steps, "linear learning-rate warm-up");
    sub->add_option("--max-grad-norm", a.max_grad_norm, "gradient clipping (<= 0: off)");
    sub->add_option("--weight-decay", a.weight_decay, "AdamW decoupled weight decay");
    sub->add_option("--epochs", a.epochs, "PPO passes per batch")->check(CLI::PositiveNumber);
    sub->add_option("--temperature", a.temperature, "the behaviour policy's sampling temperature");
    sub->add_option("--clip-low", a.clip_low, "PPO clip below 1");
    sub->add_option("--clip-high", a.clip_high, "PPO clip above 1");
    sub->add_option("--gamma", a.gamma, "GAE discount");
    sub->add_option("--gae-lambda", a.gae_lambda, "GAE lambda");
    sub->add_option("--seed", a.seed, "batch order seed");
    sub->add_option("--device", a.device, "cpu, cuda or cuda:N");
    sub->add_option("--dtype", a.dtype, "fp32 | bf16 (default: the checkpoint's)");
    sub->add_option("--metrics", a.metrics, "append one JSON line per step to this file");
    sub->add_option("--rank", a.rank, "this process's rank")->check(CLI::NonNegativeNumber);
    sub->add_option("--world-size", a.world_size, "ranks in the group")->check(CLI::PositiveNumber);
    sub->add_option("--rendezvous", a.rendezvous, "file:PATH or tcp://HOST:PORT (world > 1)");
    sub->add_option("--timeout-ms", a.timeout_ms, "deadline of every collective")
        ->check(CLI::PositiveNumber);
    sub->add_flag("--shard-optimizer", a.shard_optimizer, "shard optimizer state across ranks");
    sub->callback([&a, mode] { a.mode = mode; });
  }
  CLI11_PARSE(app, argc, argv);
  if (a.world_size > 1 && a.rendezvous.empty()) {
    return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                             "--world-size > 1 needs --rendezvous file:PATH or tcp://HOST:PORT"));
  }
  if (a.rank >= a.world_size) {
    return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                             "--rank " + std::to_string(a.rank) + " is not below --world-size " +
                                 std::to_string(a.world_size)));
  }
  return run_learn(a);
}
