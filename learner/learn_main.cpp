// cuda-agent-learn: the learner run alone on stored data (the torch-linked half of `cuda-agent
// learn`; a separate executable so that `cuda-agent` stays torch-free).
//
//   cuda-agent-learn sft   --store DIR --run RUN --model DIR --out DIR [--steps N] ...
//   cuda-agent-learn sft   --corpus FILE --model DIR --out DIR [--corpus-split train|all|S]
//                          [--max-tokens N] [--corpus-reward compile-only|tier] [--steps N] ...
//   cuda-agent-learn value --store DIR --run RUN --model DIR --out DIR [--critic DIR] ...
//   cuda-agent-learn ppo   --store DIR --run RUN --model DIR --out DIR [--critic DIR] ...
//   cuda-agent-learn serve --store DIR --run RUN --model DIR --out DIR
//                          --coordinator tcp://HOST:PORT [--engine http://HOST:PORT]... [--id ID]
//
// serve: the run's learner, driven by the coordinator (learner/learner_service.h): it attaches
// through the coordinator's gateway (coordinator/coordinator_client.h serve_learner), trains the
// steps it is sent on the episodes they name, publishes every new version under --out/policy and
// to each --engine, and writes checkpoints under --out/checkpoints when asked (resuming from the
// newest one at start). Only rank 0 talks to the coordinator; with --world-size > 1 it hands each
// request to the other ranks (LearnerLoop). SIGTERM / SIGINT stop it between steps (exit 0). One
// line per step on stdout. --device defaults to cuda:0 when a GPU is visible, else cpu; without
// --rendezvous, MASTER_ADDR and MASTER_PORT (as the launch plan sets them) give tcp://ADDR:PORT.
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
// Corpus: sft --corpus FILE trains on a seed corpus instead (learner/corpus_sequences.h): the
// transcripts of --corpus-split, tokenized with --model's tokenizer exactly as RL will see them;
// one longer than --max-tokens (default: the model's max_position_embeddings) is refused, not
// truncated, like a malformed line (learner.bad_corpus_line). At the end it prints the mean token
// accuracy (greedy next token == the transcript's, over trained tokens) on --accuracy-sequences
// of them, evenly spaced, and over the opening of each (its first 32 trained tokens: the plan that
// names the task's operators, copied from the prompt). --holdout K keeps the corpus's last K
// transcripts out of training and measures both on them too: what the policy does on tasks it has
// not memorised.
//
// Exit codes: 0 done, 1 the job failed, 2 bad input.
#include <pthread.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <thread>

#include "actors/curve_keys.h"
#include "cli/stop_signals.h"
#include "coordinator/coordinator_client.h"
#include "learner/checkpoint.h"
#include "learner/corpus_sequences.h"
#include "learner/episode_source.h"
#include "learner/learner_group.h"
#include "learner/learner_service.h"
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
  std::string mode;  // sft | value | ppo | serve
  std::string store, run, model, critic, out, metrics, device = "cpu", dtype, rendezvous;
  // sft --corpus
  std::string corpus, corpus_split = "train", corpus_reward = "compile-only";
  std::int64_t max_tokens = 0;           // 0: the model's max_position_embeddings
  std::int64_t accuracy_sequences = 32;  // 0: every sequence
  std::int64_t holdout = 0;              // the last K corpus sequences: measured, not trained
  std::int64_t steps = 100, batch_episodes = 16, micro_batch_tokens = 32'768;
  std::int64_t checkpoint_every = 20, warmup_steps = 0, decay_steps = 0, epochs = 1, keep_last = 3;
  double lr = 1e-5, critic_lr = 6e-6, max_grad_norm = 1.0, weight_decay = 0.0, temperature = 1.0;
  double min_lr_ratio = 0.1;
  double clip_low = 0.2, clip_high = 0.28, gamma = 1.0, gae_lambda = 0.95;
  std::uint64_t seed = 0;
  int rank = 0, world_size = 1;
  std::int64_t timeout_ms = 600'000;
  bool shard_optimizer = false;
  bool skip_uniform_reward_batches = true;
  std::string advantage = "critic";
  double kl_coef = 0.0;
  std::int64_t value_epochs = 1;
  // serve only
  std::string coordinator, id, curve_client_key, curve_server_public_key, checkpoint_dir;
  std::vector<std::string> engines;
  std::int64_t engine_timeout_ms = 300'000, keep_versions = 2, max_sequence_tokens = 0;
  std::int64_t request_timeout_ms = 30'000, heartbeat_ms = 2'000, idle_tick_ms = 30'000;
};

Expected<at::Device> parse_device(const std::string& d) {
  if (d == "cpu") return at::Device(at::kCPU);
  if (d == "auto") return torch::cuda::is_available() ? at::Device("cuda:0") : at::Device(at::kCPU);
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

// sft --corpus: the transcripts as training sequences, tokenized with the model's tokenizer.
Expected<std::vector<TrainSequence>> load_corpus(const LearnArgs& a, const ModelConfig& config) {
  ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::load(a.model + "/tokenizer.json"));
  ASSIGN_OR_RETURN(ChatFormat format,
                   ChatFormat::create(std::make_shared<const Tokenizer>(std::move(tok))));
  if (a.corpus_reward != "compile-only" && a.corpus_reward != "tier")
    return make_error(ErrorCategory::kInvalidInput, "cli.usage",
                      "--corpus-reward: compile-only or tier (got '" + a.corpus_reward + "')");
  CorpusSequenceOptions o{
      .reward = a.corpus_reward == "tier" ? CorpusReward::kTier : CorpusReward::kCompileOnly,
      .split = a.corpus_split,
      .limits = {.vocab_size = config.vocab_size,
                 .max_tokens = a.max_tokens > 0 ? a.max_tokens : config.max_position_embeddings}};
  ASSIGN_OR_RETURN(CorpusSequences loaded, load_corpus_sequences(a.corpus, format, o));
  for (const Error& e : loaded.refused)
    std::fprintf(stderr, "cuda-agent-learn: refused: %s\n", e.to_string().c_str());
  std::int64_t tokens = 0, model_tokens = 0, longest = 0;
  for (const TrainSequence& s : loaded.sequences) {
    tokens += s.size();
    model_tokens += s.model_tokens();
    longest = std::max(longest, s.size());
  }
  if (loaded.sequences.empty())
    return make_error(ErrorCategory::kNotFound, "learner.no_data",
                      a.corpus + ": no transcript to train on (" + std::to_string(loaded.lines) +
                          " lines, " + std::to_string(loaded.other_split) +
                          " of another split than '" + a.corpus_split + "', " +
                          std::to_string(loaded.refused.size()) + " refused)");
  std::printf(
      "data: %zu sequences from %s (split %s; %zu of other splits, %zu refused): %lld "
      "tokens, %lld trained on, longest %lld (limit %lld)\n",
      loaded.sequences.size(), a.corpus.c_str(), a.corpus_split.c_str(), loaded.other_split,
      loaded.refused.size(), static_cast<long long>(tokens), static_cast<long long>(model_tokens),
      static_cast<long long>(longest), static_cast<long long>(o.limits.max_tokens));
  return std::move(loaded.sequences);
}

// Greedy next-token accuracy over the trained (mask-1) tokens: how well the model reproduces
// the transcripts. One full forward per sequence (logits [T, vocab]: small models only).
struct TokenAccuracy {
  std::int64_t correct = 0, tokens = 0;
  // The same over each sequence's first kOpening trained tokens.
  std::int64_t opening_correct = 0, opening_tokens = 0;
  double mean() const { return tokens > 0 ? double(correct) / double(tokens) : 0.0; }
  double opening() const {
    return opening_tokens > 0 ? double(opening_correct) / double(opening_tokens) : 0.0;
  }
};
constexpr std::int64_t kOpening = 32;

Expected<TokenAccuracy> token_accuracy(const Transformer& model,
                                       const std::vector<TrainSequence>& data) {
  TokenAccuracy acc;
  try {
    at::NoGradGuard no_grad;
    for (const TrainSequence& s : data) {
      const std::int64_t T = s.size();
      if (T < 2) continue;
      const at::Tensor ids = at::tensor(s.ids, at::TensorOptions().dtype(at::kLong));  // [T]
      const at::Tensor mask =
          at::tensor(std::vector<std::int64_t>(s.loss_mask.begin(), s.loss_mask.end()),
                     at::TensorOptions().dtype(at::kLong))
              .narrow(0, 1, T - 1)
              .to(at::kBool);  // [T-1]: token t+1 is trained on
      const at::Tensor logits = model.forward(ids.to(model.device()).view({1, T}));  // [1,T,V]
      const at::Tensor guess = logits.squeeze(0).narrow(0, 0, T - 1).argmax(-1).to(at::kCPU);
      const at::Tensor hit = guess.eq(ids.narrow(0, 1, T - 1)).logical_and(mask);
      acc.correct += hit.sum().item<std::int64_t>();
      acc.tokens += mask.sum().item<std::int64_t>();
      // The opening: trained positions up to and including the kOpening-th.
      const at::Tensor opening = mask.logical_and(mask.to(at::kLong).cumsum(0).le(kOpening));
      acc.opening_correct += hit.logical_and(opening).sum().item<std::int64_t>();
      acc.opening_tokens += opening.sum().item<std::int64_t>();
    }
  } catch (const c10::Error& e) {
    return make_error(ErrorCategory::kInternal, "learner.torch_error", e.what_without_backtrace());
  }
  return acc;
}

Expected<std::vector<TrainSequence>> load_data(const LearnArgs& a, const ModelConfig& config) {
  if (!a.corpus.empty()) return load_corpus(a, config);
  const std::int64_t vocab = config.vocab_size;
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

TrainerOptions trainer_options(const LearnArgs& a) {
  TrainerOptions to;
  to.micro_batch_tokens = a.micro_batch_tokens;
  to.temperature = a.temperature;
  to.ppo.clip_low = a.clip_low;
  to.ppo.clip_high = a.clip_high;
  to.gamma = a.gamma;
  to.gae_lambda = a.gae_lambda;
  to.ppo_epochs = a.epochs;
  to.skip_uniform_reward_batches = a.skip_uniform_reward_batches;
  to.group_advantages = a.advantage == "group";
  to.ppo.kl_coef = a.kl_coef;
  to.shard_optimizer = a.shard_optimizer;
  to.actor_optimizer = {.lr = a.lr,
                        .weight_decay = a.weight_decay,
                        .max_grad_norm = a.max_grad_norm,
                        .warmup_steps = a.warmup_steps,
                        .decay_steps = a.decay_steps,
                        .min_lr_ratio = a.min_lr_ratio};
  to.critic_optimizer = to.actor_optimizer;
  to.critic_optimizer.lr = a.mode == "value" ? a.lr : a.critic_lr;
  to.keep_checkpoints = std::size_t(a.keep_last);
  to.model_dir = a.model;
  return to;
}

Expected<std::unique_ptr<LearnerGroup>> make_group(const LearnArgs& a, at::Device device) {
  if (a.world_size <= 1) return std::unique_ptr<LearnerGroup>();
  LearnerGroupOptions go{.rank = a.rank,
                         .world_size = a.world_size,
                         .rendezvous = a.rendezvous,
                         .timeout = std::chrono::milliseconds(a.timeout_ms)};
  if (device.is_cuda()) go.cuda_device = device.has_index() ? device.index() : 0;
  return LearnerGroup::create(go);
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
  auto data = load_data(a, actor->config());
  if (!data) return report(data.error());

  auto group = make_group(a, *device);
  if (!group) return report(group.error());

  TrainerOptions to = trainer_options(a);
  auto trainer = Trainer::create(std::move(*actor), std::move(critic), to, group->get());
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
  const std::size_t all = data->size(),
                    b = std::size_t(std::max<std::int64_t>(1, a.batch_episodes));
  if (a.holdout > 0 && std::size_t(a.holdout) >= all)
    return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                             "--holdout " + std::to_string(a.holdout) + " leaves nothing of the " +
                                 std::to_string(all) + " sequences to train on"));
  const std::size_t n = all - std::size_t(std::max<std::int64_t>(0, a.holdout));
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
      nlohmann::json extra = {{"mode", a.mode}, {"seed", a.seed}};
      if (a.corpus.empty()) {
        extra["run"] = a.run;
      } else {
        extra["corpus"] = a.corpus;
        extra["corpus_split"] = a.corpus_split;
      }
      Status s = t.save_checkpoint(a.out, extra);
      if (!s) return report(s.error());
    }
  }
  if (a.rank == 0)
    std::printf("done: %llu steps; checkpoints under %s\n",
                static_cast<unsigned long long>(t.steps()), a.out.c_str());
  if (a.rank == 0 && !a.corpus.empty()) {
    // An evenly spaced sample (a full forward per sequence is slow on a CPU: math attention).
    std::vector<TrainSequence> sample;
    const std::size_t k =
        a.accuracy_sequences > 0 ? std::min<std::size_t>(n, std::size_t(a.accuracy_sequences)) : n;
    for (std::size_t i = 0; i < k; ++i) sample.push_back((*data)[i * n / k]);
    Expected<TokenAccuracy> acc = token_accuracy(t.actor(), sample);
    if (!acc) return report(acc.error());
    std::printf(
        "token accuracy: %.4f (%lld of %lld trained tokens predicted greedily, %zu of "
        "%zu sequences); openings %.4f\n",
        acc->mean(), static_cast<long long>(acc->correct), static_cast<long long>(acc->tokens), k,
        n, acc->opening());
    if (n < all) {
      const std::vector<TrainSequence> held(data->begin() + std::ptrdiff_t(n), data->end());
      Expected<TokenAccuracy> h = token_accuracy(t.actor(), held);
      if (!h) return report(h.error());
      std::printf(
          "held-out token accuracy: %.4f (%lld of %lld tokens, %zu sequences never trained on); "
          "openings %.4f (%lld of %lld)\n",
          h->mean(), static_cast<long long>(h->correct), static_cast<long long>(h->tokens),
          held.size(), h->opening(), static_cast<long long>(h->opening_correct),
          static_cast<long long>(h->opening_tokens));
    }
  }
  return 0;
}

// --- serve ---------------------------------------------------------------------------------------

// The coordinator's requests, handed to the thread that owns the trainer.
class LoopHandler final : public LearnerHandler {
 public:
  explicit LoopHandler(LearnerLoop& loop) : loop_(loop) {}
  Expected<StepDone> train(const TrainStep& step) override { return loop_.train(step); }
  Expected<CheckpointDone> checkpoint(const CheckpointRequest& request) override {
    Expected<CheckpointDone> done = loop_.checkpoint(request);
    if (done)
      std::printf("checkpoint step %llu: %s (%llu bytes, %s)\n",
                  static_cast<unsigned long long>(done->step), done->path.c_str(),
                  static_cast<unsigned long long>(done->size_bytes), done->checksum.c_str());
    else
      std::printf("checkpoint step %llu failed: %s\n",
                  static_cast<unsigned long long>(request.step), done.error().message.c_str());
    std::fflush(stdout);
    return done;
  }

 private:
  LearnerLoop& loop_;
};

std::string default_member_id(int rank) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "-" + std::to_string(::getpid()) + "-learner-rank" +
         std::to_string(rank);
}

// "step 12 agentic_ppo v12->v13 loss/policy=... reward/mean=... ..." (the figures people read).
std::string step_line(const TrainStep& step, const StepDone& done) {
  std::string line = "step " + std::to_string(step.step) + " " + to_string(step.stage) + " v" +
                     std::to_string(step.version.value()) + "->v" +
                     std::to_string(done.new_version.value());
  for (const char* key : {"loss/policy",
                          "loss/rft",
                          "loss/value",
                          "reward/mean",
                          "explained_variance",
                          "entropy",
                          "explained_variance/last",
                          "approx_kl",
                          "kl/reference",
                          "clip_fraction",
                          "importance_capped",
                          "logprob_delta/behaviour",
                          "staleness/mean",
                          "grad_norm/actor",
                          "advantage/ungrouped",
                          "episodes/trained",
                          "episodes/refused",
                          "publish/engines_ok",
                          "publish/engines_failed",
                          "step/seconds"}) {
    const auto it = done.metrics.find(key);
    if (it == done.metrics.end()) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s=%.4g", key, it->second);
    line += buf;
  }
  if (auto it = done.metrics.find("actor/skipped"); it != done.metrics.end() && it->second > 0)
    line += kActorSkippedNote;
  return line;
}

int run_serve(const LearnArgs& a) {
  // Before any thread: SIGINT / SIGTERM are taken by the signal thread below.
  cli::StopSignals signals;
  auto device = parse_device(a.device);
  if (!device) return report(device.error());
  std::optional<CurveClientKeys> curve;
  if (!a.curve_client_key.empty() || !a.curve_server_public_key.empty()) {
    if (a.curve_client_key.empty() || a.curve_server_public_key.empty())
      return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                               "--curve-client-key and --curve-server-public-key go together"));
    auto client = read_curve_key_file(a.curve_client_key);
    if (!client) return report(client.error());
    auto server = read_curve_key_file(a.curve_server_public_key);
    if (!server) return report(server.error());
    curve = CurveClientKeys{.server_public_z85 = server->public_z85, .client = *client};
  }
  auto group = make_group(a, *device);
  if (!group) return report(group.error());

  LearnerServiceOptions o;
  o.store_dir = a.store;
  o.run = RunId{a.run};
  o.model_dir = a.model;
  o.critic_dir = a.critic;
  o.out_dir = a.out;
  o.checkpoint_dir = a.checkpoint_dir;
  o.device = device->str();
  o.dtype = a.dtype;
  o.trainer = trainer_options(a);
  o.max_sequence_tokens = a.max_sequence_tokens;
  o.engine_urls = a.engines;
  o.engine_timeout = std::chrono::milliseconds(a.engine_timeout_ms);
  o.keep_policy_versions = std::size_t(a.keep_versions);
  o.value_epochs = a.value_epochs;
  // The engines hold the run's newest version (a restarted one loads it from policy/): weights
  // resumed from an older checkpoint are not pushed over it; the first step after the resume
  // replays up to the run's step and publishes the version after it.
  o.publish_on_resume = false;
  auto service = LearnerService::create(o, group->get());
  if (!service) return report(service.error());
  std::printf("learner rank %d/%d on %s: version %llu (%s), %zu engine(s), coordinator %s\n",
              a.rank, a.world_size, device->str().c_str(),
              static_cast<unsigned long long>((*service)->policy_version()),
              (*service)->resumed()
                  ? ("resumed from " +
                     (a.checkpoint_dir.empty() ? a.out + "/checkpoints" : a.checkpoint_dir))
                        .c_str()
                  : "fresh",
              a.engines.size(), a.coordinator.c_str());
  std::fflush(stdout);

  std::atomic<bool> stop{false};
  std::thread signal_thread([&] {
    signals.wait();
    stop = true;
  });
  std::ofstream metrics;
  if (!a.metrics.empty() && a.rank == 0) metrics.open(a.metrics, std::ios::app);
  LearnerLoop loop(**service, group->get(),
                   {.idle_tick = std::chrono::milliseconds(std::min<std::int64_t>(
                        a.idle_tick_ms, std::max<std::int64_t>(1, a.timeout_ms / 4)))});
  auto on_step = [&](const TrainStep& step, const Expected<StepDone>& done) {
    if (a.rank != 0) return;
    if (!done) {
      std::printf("step %llu failed: %s [%s]\n", static_cast<unsigned long long>(step.step),
                  done.error().message.c_str(), done.error().code.c_str());
    } else {
      std::printf("%s\n", step_line(step, *done).c_str());
      if (metrics.is_open()) {
        nlohmann::json j = done->metrics;
        j["step"] = step.step;
        j["stage"] = to_string(step.stage);
        j["version"] = done->new_version.value();
        metrics << j.dump() << "\n" << std::flush;
      }
    }
    std::fflush(stdout);
  };

  // Rank 0 answers the coordinator on its own thread; this thread trains (LearnerLoop::run).
  Status rpc_status = Status::ok();
  std::thread rpc;
  LoopHandler handler(loop);
  if (a.rank == 0) {
    CoordinatorClientOptions co{.endpoint = a.coordinator,
                                .run = RunId{a.run},
                                .member = WorkerId{a.id.empty() ? default_member_id(a.rank) : a.id},
                                .role = MemberRole::kLearner,
                                .request_timeout = std::chrono::milliseconds(a.request_timeout_ms),
                                .heartbeat_interval = std::chrono::milliseconds(a.heartbeat_ms),
                                .curve = curve};
    rpc = std::thread([&, co] {
      rpc_status = serve_learner(co, handler, stop);
      stop = true;  // bad options: the loop stops too
    });
  }
  Status ran = loop.run(stop, on_step);
  stop = true;
  if (rpc.joinable()) rpc.join();
  ::pthread_kill(signal_thread.native_handle(), SIGTERM);  // wakes its sigwait if no signal came
  signal_thread.join();
  if (!rpc_status) return report(rpc_status.error());
  if (!ran) return report(ran.error());
  if (a.rank == 0)
    std::printf("learner stopped at version %llu\n",
                static_cast<unsigned long long>((*service)->policy_version()));
  return 0;
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) {
  using namespace cuda_agent;
  CLI::App app{
      "cuda-agent-learn: the learner on stored episodes (SFT/RFT, value pretraining, PPO), or "
      "driven by the coordinator (serve)"};
  app.require_subcommand(1);
  LearnArgs a;
  CLI::Option* device_option = nullptr;
  for (const char* mode : {"sft", "value", "ppo", "serve"}) {
    const std::string m = mode;
    auto* sub = app.add_subcommand(
        mode, m == "sft"     ? "RFT / SFT on the run's positive, completed episodes, or on a seed "
                               "corpus (--corpus)"
              : m == "value" ? "value pretraining of the critic on GAE returns"
              : m == "ppo" ? "PPO with a critic (or a reward baseline) on every episode of the run"
                           : "the run's learner, driven by the coordinator: trains the steps it "
                             "is sent and publishes each version to the policy engines");
    auto* store_opt = sub->add_option("--store", a.store, "run store directory");
    auto* run_opt = sub->add_option("--run", a.run, "run id in the store");
    if (m == "sft") {
      // Either the run store's RFT selection or a corpus file (checked after parsing).
      sub->add_option("--corpus", a.corpus,
                      "train on this seed corpus (cuda-agent-corpus JSON Lines, `cuda-agent tasks "
                      "corpus`) instead of --store/--run");
      sub->add_option("--corpus-split", a.corpus_split,
                      "the corpus lines trained on: those of this split, or all")
          ->capture_default_str();
      sub->add_option("--corpus-reward", a.corpus_reward,
                      "sequence reward from the line's expected_compile_only or expected_tier "
                      "(compile-only | tier; SFT does not use it)")
          ->capture_default_str();
      sub->add_option("--max-tokens", a.max_tokens,
                      "longest transcript accepted (longer ones are refused, not truncated); "
                      "default: the model's max_position_embeddings")
          ->check(CLI::PositiveNumber);
      sub->add_option("--accuracy-sequences", a.accuracy_sequences,
                      "token accuracy at the end on this many corpus sequences, evenly spaced "
                      "(0: all)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
      sub->add_option("--holdout", a.holdout,
                      "keep the corpus's last K transcripts out of training and measure the "
                      "token accuracy on them")
          ->check(CLI::NonNegativeNumber);
    } else {
      store_opt->required();
      run_opt->required();
    }
    sub->add_option("--model", a.model, "actor: Hugging Face model directory")->required();
    sub->add_option("--out", a.out,
                    m == "serve" ? "the learner's directory: checkpoints/ (resumed from) and "
                                   "policy/ (published versions)"
                                 : "checkpoint directory (resumed when it holds one)")
        ->required();
    if (m == "serve") {
      sub->add_option("--checkpoint-dir", a.checkpoint_dir,
                      "where checkpoints are written and resumed from (default: <out>/checkpoints; "
                      "the launch plan passes [run] checkpoint_dir)");
    }
    sub->add_option("--critic", a.critic,
                    "critic backbone (+ value_head.safetensors); default: a copy of --model "
                    "with a zero value head");
    if (m != "serve") {
      sub->add_option("--steps", a.steps, "total optimizer steps")->check(CLI::PositiveNumber);
      sub->add_option("--batch-episodes", a.batch_episodes, "sequences per step")
          ->check(CLI::PositiveNumber);
      sub->add_option("--checkpoint-every", a.checkpoint_every, "steps between checkpoints")
          ->check(CLI::PositiveNumber);
      sub->add_option("--seed", a.seed, "batch order seed");
    }
    sub->add_option("--micro-batch-tokens", a.micro_batch_tokens, "padded tokens per micro-batch")
        ->check(CLI::PositiveNumber);
    sub->add_option("--keep-last", a.keep_last, "checkpoints kept")->check(CLI::PositiveNumber);
    sub->add_option("--lr", a.lr, "actor learning rate (the critic's for value)");
    sub->add_option("--critic-lr", a.critic_lr, "critic learning rate (ppo, serve)");
    sub->add_option("--warmup-steps", a.warmup_steps, "linear learning-rate warm-up");
    sub->add_option("--decay-steps", a.decay_steps,
                    "cosine learning-rate decay after the warm-up, to --min-lr-ratio x lr at this "
                    "step (0: a constant rate)");
    sub->add_option("--min-lr-ratio", a.min_lr_ratio, "where the decay ends (default 0.1)");
    sub->add_option("--max-grad-norm", a.max_grad_norm, "gradient clipping (<= 0: off)");
    sub->add_option("--weight-decay", a.weight_decay, "AdamW decoupled weight decay");
    sub->add_option("--epochs", a.epochs, "PPO passes per batch")->check(CLI::PositiveNumber);
    sub->add_option("--skip-uniform-reward-batches", a.skip_uniform_reward_batches,
                    "true: a batch whose every episode has the same reward trains the critic only");
    sub->add_option("--temperature", a.temperature, "the behaviour policy's sampling temperature");
    sub->add_option("--advantage", a.advantage,
                    "PPO advantages: critic (GAE over the critic's values, whitened) or group "
                    "(reward minus the mean of the other episodes of the same task in the batch)")
        ->check(CLI::IsMember({"critic", "group"}));
    if (m == "serve")
      sub->add_option("--value-epochs", a.value_epochs,
                      "passes of value pretraining over each agent warm-up batch")
          ->check(CLI::Range(1, 64));
    sub->add_option("--kl-coef", a.kl_coef,
                    "PPO: weight of a KL penalty toward --model (loaded a second time, frozen); 0: "
                    "none")
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--clip-low", a.clip_low, "PPO clip below 1");
    sub->add_option("--clip-high", a.clip_high, "PPO clip above 1");
    sub->add_option("--gamma", a.gamma, "GAE discount");
    sub->add_option("--gae-lambda", a.gae_lambda, "GAE lambda");
    auto* dev = sub->add_option("--device", a.device,
                                m == "serve" ? "cpu, cuda, cuda:N or auto (default: auto, cuda:0 "
                                               "when a GPU is visible)"
                                             : "cpu, cuda, cuda:N or auto");
    if (m == "serve") device_option = dev;
    sub->add_option("--dtype", a.dtype, "fp32 | bf16 (default: the checkpoint's)");
    sub->add_option("--metrics", a.metrics, "append one JSON line per step to this file");
    sub->add_option("--rank", a.rank, "this process's rank")->check(CLI::NonNegativeNumber);
    sub->add_option("--world-size", a.world_size, "ranks in the group")->check(CLI::PositiveNumber);
    sub->add_option("--rendezvous", a.rendezvous,
                    "file:PATH or tcp://HOST:PORT (world > 1; default: tcp://$MASTER_ADDR:"
                    "$MASTER_PORT when both are set)");
    sub->add_option("--timeout-ms", a.timeout_ms, "deadline of every collective")
        ->check(CLI::PositiveNumber);
    sub->add_flag("--shard-optimizer", a.shard_optimizer, "shard optimizer state across ranks");
    if (m == "serve") {
      sub->add_option("--coordinator", a.coordinator, "the coordinator's gateway, tcp://HOST:PORT")
          ->required();
      sub->add_option("--engine", a.engines,
                      "a policy engine to publish each version to, http://HOST:PORT (repeat "
                      "for several)");
      sub->add_option("--id", a.id, "this learner's member id (default: host-pid-learner-rankR)");
      sub->add_option("--engine-timeout-ms", a.engine_timeout_ms,
                      "deadline of one engine's weight load")
          ->check(CLI::PositiveNumber);
      sub->add_option("--keep-versions", a.keep_versions, "published versions kept under policy/")
          ->check(CLI::PositiveNumber);
      sub->add_option("--max-sequence-tokens", a.max_sequence_tokens,
                      "longest episode trained on (longer ones are refused); 0: no limit");
      sub->add_option("--request-timeout-ms", a.request_timeout_ms,
                      "deadline of one request to the coordinator")
          ->check(CLI::PositiveNumber);
      sub->add_option("--heartbeat-ms", a.heartbeat_ms, "between two heartbeats to the coordinator")
          ->check(CLI::PositiveNumber);
      sub->add_option("--idle-tick-ms", a.idle_tick_ms,
                      "rank 0 keeps idle ranks inside the collective deadline this often "
                      "(at most --timeout-ms / 4)")
          ->check(CLI::PositiveNumber);
      sub->add_option("--curve-client-key", a.curve_client_key,
                      "CURVE: this client's secret key file ([security] client_secret_key_file)");
      sub->add_option("--curve-server-public-key", a.curve_server_public_key,
                      "CURVE: the coordinator's public key file");
    }
    sub->callback([&a, mode] { a.mode = mode; });
  }
  CLI11_PARSE(app, argc, argv);
  if (a.mode == "sft") {
    const bool store = !a.store.empty() || !a.run.empty();
    if (store && !a.corpus.empty())
      return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                               "sft: --corpus or --store/--run, not both"));
    if (a.corpus.empty() && (a.store.empty() || a.run.empty()))
      return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                               "sft: --store DIR --run RUN (the run's RFT selection) or --corpus "
                               "FILE (a seed corpus)"));
    if (a.holdout > 0 && a.corpus.empty())
      return report(
          make_error(ErrorCategory::kInvalidInput, "cli.usage",
                     "sft: --holdout measures a seed corpus's transcripts: give --corpus"));
  }
  if (a.mode == "serve" && device_option != nullptr && device_option->count() == 0)
    a.device = "auto";
  if (a.world_size > 1 && a.rendezvous.empty()) {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    if (addr != nullptr && port != nullptr && *addr != '\0' && *port != '\0')
      a.rendezvous = std::string("tcp://") + addr + ":" + port;
  }
  if (a.world_size > 1 && a.rendezvous.empty()) {
    return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                             "--world-size > 1 needs --rendezvous file:PATH or tcp://HOST:PORT "
                             "(or MASTER_ADDR and MASTER_PORT)"));
  }
  if (a.rank >= a.world_size) {
    return report(make_error(ErrorCategory::kInvalidInput, "cli.usage",
                             "--rank " + std::to_string(a.rank) + " is not below --world-size " +
                                 std::to_string(a.world_size)));
  }
  return a.mode == "serve" ? run_serve(a) : run_learn(a);
}
