// The learner's training step (DESIGN.md sections 2 and 6): one global batch of stored episodes
// -> one update of the actor (PPO or SFT) and/or the critic (value loss), on one rank of a
// data-parallel group. The same object serves every stage: single-turn and agentic PPO
// (ppo_step), RFT (sft_step) and value pretraining (value_step).
//
//   ASSIGN_OR_RETURN(auto t, Trainer::create(std::move(actor), std::move(critic), options, group));
//   ASSIGN_OR_RETURN(StepMetrics m, t->ppo_step(batch));   // batch: the GLOBAL batch
//   std::puts(m.line().c_str());
//   RETURN_IF_ERROR(t->save_checkpoint("/ckpt", {{"stage", "agentic-ppo"}}));
//
// Every rank is given the same global batch (the same sequences in the same order); it trains
// on its share (shard_for_rank) and the ranks' gradients are summed. Every loss is a sum over
// model tokens divided by the global batch's model-token count, so K micro-batches give the
// gradient of one batch, and W ranks the gradient of one rank holding everything.
//
// One step, in order:
//   1. pack this rank's sequences into micro-batches of at most micro_batch_tokens (padded);
//   2. no-grad pass: proximal log-probs and entropy (actor), old values (critic);
//   3. GAE per sequence over model tokens (learner/gae.h), advantages whitened with moments
//      summed over the group;
//   4. ppo_epochs passes: per micro-batch forward + backward (actor and critic), then the flat
//      gradients are summed over the group and the optimizers step (learner/optimizer.h).
//
// Token positions: the model token at position t is scored from the hidden state at t - 1 (its
// log-prob, as the engine sampled it: logits / temperature), and the critic's value for it is
// read at t - 1 too (the state before the token is emitted).
//
// Threading: one thread (the learner process's main thread). Not copyable.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "learner/losses.h"
#include "learner/optimizer.h"
#include "learner/packing.h"
#include "learner/train_sequence.h"
#include "model/transformer.h"

namespace cuda_agent {

class LearnerGroup;

/// The critic: its own backbone (a copy of the actor or its own checkpoint) and a value head.
struct Critic {
  Transformer backbone;
  ValueHead head;
};

struct TrainerOptions {
  /// Padded tokens (rows x longest row) per forward/backward micro-batch ([learner]
  /// micro_batch_tokens).
  std::int64_t micro_batch_tokens = 32'768;
  /// Rows of the output projection computed at once for log-probs (bounds the tokens x vocab
  /// logits that exist at any moment to this many rows).
  std::int64_t logprob_chunk_rows = 1024;
  /// Sampling temperature the behaviour policy used: log-probs are of logits / temperature.
  double temperature = 1.0;
  PpoOptions ppo;
  double gamma = 1.0;
  double gae_lambda = 0.95;
  /// Value-loss clip around the old values; <= 0: unclipped.
  double value_clip = 0.2;
  /// Passes over each batch (one optimizer step per pass).
  std::int64_t ppo_epochs = 1;
  /// A PPO batch whose every sequence has the same reward carries no signal for the actor: its
  /// advantages are the critic's errors, which whitening scales up to unit size, so an update
  /// would only add noise (the first GPU demo's policy, every reward -1, drifted from entropy 0.31
  /// to 0.67 in three steps). Such a batch trains the critic only and leaves the actor as it is
  /// (StepMetrics::actor_skipped). false: update the actor anyway.
  bool skip_uniform_reward_batches = true;
  /// PPO's actor advantages ([learner] advantage = "group"): an episode's reward minus the mean
  /// reward of the other episodes of its task in the global batch (leave-one-out), the same for
  /// every one of its model tokens, not whitened; 0 for an episode alone with its task in the
  /// batch (StepMetrics::ungrouped). A batch whose advantages are all 0 leaves the actor as it is.
  /// The critic, if any, still trains on GAE returns. false: GAE over the critic's values.
  bool group_advantages = false;
  AdamWOptions actor_optimizer;
  AdamWOptions critic_optimizer;
  /// Shard the optimizer state (master weights, moments) across the group's ranks.
  bool shard_optimizer = false;
  /// Checkpoints kept under a root by save_checkpoint (the newest valid one always).
  std::size_t keep_checkpoints = 3;
  /// The model directory the actor came from: its tokenizer and generation files are copied
  /// into every checkpoint, so a checkpoint is a complete model directory. Empty: none.
  std::string model_dir;
};

/// What a step's line says when it left the actor as it was (StepMetrics::actor_skipped).
inline constexpr const char* kActorSkippedNote =
    " (actor not updated: every episode of the batch had the same reward, or with group "
    "advantages the same as the others of its task)";

/// What one step did, summed over the group (every rank reports the same figures).
struct StepMetrics {
  std::string kind;               ///< "ppo", "sft", "value"
  std::uint64_t step = 0;         ///< optimizer steps taken after this one
  std::uint64_t sequences = 0;    ///< sequences in the global batch
  double model_tokens = 0;        ///< model (loss) tokens in the global batch
  double total_tokens = 0;        ///< all tokens forwarded (unpadded), every rank
  double loss = 0;                ///< policy / SFT / value loss of the last epoch
  double value_loss = 0;          ///< ppo: the critic's loss (0 without a critic)
  double entropy = 0;             ///< mean per model token (proximal pass)
  double clip_fraction = 0;       ///< ppo: tokens whose ratio was clipped
  double approx_kl = 0;           ///< ppo: mean (proximal - new) log-prob
  double importance_capped = 0;   ///< ppo: tokens whose stale-sample weight hit the cap
  double grad_norm = 0;           ///< actor (critic for value steps), before clipping
  double explained_variance = 0;  ///< critic, when one is trained
  double reward_mean = 0;         ///< mean final reward of the batch's sequences
  double mean_staleness = 0;      ///< ppo: policy version now - sequence's min version, mean
  double seconds = 0;             ///< wall time of the step
  double tokens_per_s = 0;        ///< total_tokens / seconds
  /// ppo: every sequence had the same reward, so only the critic was trained
  /// (TrainerOptions::skip_uniform_reward_batches); line() then ends with kActorSkippedNote.
  bool actor_skipped = false;
  std::uint64_t ungrouped = 0;  ///< ppo with group advantages: sequences alone with their task
  double kl_reference = 0;      ///< ppo with kl_coef > 0: mean k3 KL to the reference
  bool kl_penalty = false;      ///< ppo: the loss had the KL penalty (a reference was set)
  /// ppo: mean |learner log-prob before the update - the engine's sampling log-prob| per model
  /// token (engine/learner agreement on fresh tokens; plus the policy's drift on stale ones)
  double behaviour_delta = 0;
  /// One line: "step 12 ppo loss=... entropy=... clip=... gnorm=... tok/s=... ev=...".
  std::string line() const;
  nlohmann::json to_json() const;
};

class Trainer {
 public:
  /// `group` may be null (one rank) and must outlive the trainer. The actor's (and critic's)
  /// tensors become trainable in place.
  static Expected<std::unique_ptr<Trainer>> create(Transformer actor, std::optional<Critic> critic,
                                                   const TrainerOptions& options,
                                                   LearnerGroup* group);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// RFT / SFT: maximise the log-likelihood of the model tokens.
  Expected<StepMetrics> sft_step(const std::vector<TrainSequence>& global_batch);
  /// Value pretraining: the critic regresses GAE returns of its own values (needs a critic).
  Expected<StepMetrics> value_step(const std::vector<TrainSequence>& global_batch);
  /// PPO: the actor on clipped, importance-weighted advantages; the critic (when present) on
  /// clipped returns. Without a critic the advantage of a token is the sequence's reward minus
  /// the batch's mean reward (whitened), as in GRPO-style baselines.
  Expected<StepMetrics> ppo_step(const std::vector<TrainSequence>& global_batch);

  const Transformer& actor() const;
  const Critic* critic() const;
  /// The frozen reference policy of the PPO loss's KL penalty (TrainerOptions::ppo.kl_coef > 0).
  /// create() sets it from TrainerOptions::model_dir, the model the actor started from, loaded
  /// again (it is not saved in checkpoints); without a model_dir, set it here. Same vocabulary as
  /// the actor, else kInvalidInput.
  Status set_reference(Transformer reference);
  /// Optimizer steps of the actor taken (the critic's for value-only training).
  std::uint64_t steps() const;
  /// The policy version the actor's weights are: the version it was created or restored with,
  /// plus one per actor update.
  std::uint64_t policy_version() const;
  void set_policy_version(std::uint64_t version);

  /// Writes an atomic, checksummed checkpoint under `root` (learner/checkpoint.h). Collective:
  /// every rank calls it (each writes its optimizer shard; rank 0 writes the weights and seals).
  /// `extra` is stored in trainer_state.json beside step and version.
  Status save_checkpoint(const std::string& root, const nlohmann::json& extra);
  /// Restores the newest valid checkpoint under `root` into this trainer (weights, optimizer
  /// state, step, version). Returns its trainer_state.json, or nullopt when there is none. With
  /// `accept`, the newest valid one whose trainer_state.json it accepts (none: kNotFound
  /// "checkpoint.none"). Collective, like save_checkpoint.
  Expected<std::optional<nlohmann::json>> restore_checkpoint(
      const std::string& root, const std::function<bool(const nlohmann::json&)>& accept = {});

  struct Impl;

 private:
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
