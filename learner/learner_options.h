// Options of the learner (manifest section [learner]): CUDA Agent's staged recipe (DESIGN.md
// section 6) with its published hyperparameters as defaults.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct LearnerOptions {
  static constexpr std::string_view kSection = "learner";
  static constexpr std::string_view kDoc =
      "The learner: PPO with a critic, RFT and value pretraining, data-parallel over NCCL.";

  std::string stage = "all";
  std::int64_t single_turn_steps = 20;
  std::int64_t agent_warmup_steps = 10;
  std::int64_t agentic_steps = 200;
  double actor_lr = 3e-6;
  double critic_lr = 6e-6;
  std::int64_t lr_warmup_steps = 0;
  double clip_low = 0.2;
  double clip_high = 0.28;
  double gamma = 1.0;
  double gae_lambda = 0.95;
  std::int64_t batch_episodes = 64;
  std::int64_t staleness = 1;
  std::int64_t ppo_epochs = 1;
  std::string advantage = "critic";
  std::int64_t group_size = 1;
  double kl_coef = 0.0;
  std::int64_t value_epochs = 1;
  bool skip_uniform_reward_batches = true;
  std::int64_t micro_batch_tokens = 32'768;
  std::int64_t checkpoint_every_steps = 20;
  std::int64_t nccl_timeout_ms = 600'000;

  template <class V>
  void visit(V& v) {
    v({.key = "stage",
       .doc = "RL stage to run: 'all' runs every stage with steps > 0 in order (single-turn "
              "warm-up PPO, agent warm-up (RFT + value pretraining), multi-turn agentic PPO); "
              "a named stage runs alone, for its own steps.",
       .choices = {"all", "single-turn-ppo", "agent-warmup", "agentic-ppo"}},
      stage);
    v({.key = "single_turn_steps",
       .unit = "steps",
       .doc = "Learner steps of the single-turn warm-up PPO stage; 0 skips it.",
       .min = 0},
      single_turn_steps);
    v({.key = "agent_warmup_steps",
       .unit = "steps",
       .doc = "Learner steps of the agent warm-up stage (RFT of the actor, value pretraining of "
              "the critic); 0 skips it.",
       .min = 0},
      agent_warmup_steps);
    v({.key = "agentic_steps",
       .unit = "steps",
       .doc = "Learner steps of the multi-turn agentic PPO stage; 0 skips it. After the last "
              "stage the run is finished.",
       .min = 0},
      agentic_steps);
    v({.key = "actor_lr", .doc = "Actor learning rate (AdamW).", .min = 0.0}, actor_lr);
    v({.key = "critic_lr", .doc = "Critic learning rate (AdamW).", .min = 0.0}, critic_lr);
    v({.key = "lr_warmup_steps",
       .unit = "steps",
       .doc = "Both learning rates rise linearly from 0 over this many optimizer steps (Adam's "
              "first steps are otherwise full-size whatever the gradient's scale); 0: none.",
       .min = 0},
      lr_warmup_steps);
    v({.key = "clip_low", .doc = "PPO ratio clip below 1 (1 - clip_low).", .min = 0.0, .max = 1.0},
      clip_low);
    v({.key = "clip_high",
       .doc = "PPO ratio clip above 1 (1 + clip_high); asymmetric clipping keeps exploration.",
       .min = 0.0,
       .max = 10.0},
      clip_high);
    v({.key = "gamma", .doc = "GAE discount.", .min = 0.0, .max = 1.0}, gamma);
    v({.key = "gae_lambda", .doc = "GAE lambda.", .min = 0.0, .max = 1.0}, gae_lambda);
    v({.key = "batch_episodes", .unit = "episodes", .doc = "Episodes per policy update.", .min = 1},
      batch_episodes);
    v({.key = "staleness",
       .unit = "versions",
       .doc = "Staleness bound S: an episode is admitted only while accepted + running <= "
              "(S + version + 1) * batch_episodes.",
       .min = 0},
      staleness);
    v({.key = "ppo_epochs", .unit = "epochs", .doc = "Passes over each batch.", .min = 1},
      ppo_epochs);
    v({.key = "advantage",
       .doc = "What an episode's tokens are credited with in PPO. 'critic': GAE over the critic's "
              "values, whitened over the batch (CUDA Agent's recipe). 'group': the episode's "
              "reward minus the mean reward of the other episodes of the same task in the batch "
              "(leave-one-out; group_size episodes of each task are sampled in a row), so a task "
              "every sample fails or passes alike teaches nothing, and an episode with no other "
              "of its task in the batch gets 0; the critic, if any, still trains and reports its "
              "explained variance.",
       .choices = {"critic", "group"}},
      advantage);
    v({.key = "group_size",
       .unit = "episodes",
       .doc = "Episodes of each task the coordinator starts in a row (the group that "
              "advantage = 'group' compares); at least 2 with advantage = 'group'.",
       .min = 1,
       .max = 1024},
      group_size);
    v({.key = "kl_coef",
       .doc = "Weight of a per-token KL penalty (k3 estimator) in the PPO loss toward the run's "
              "initial policy, which the learner then loads a second time (frozen; one more copy "
              "of the weights in its memory); 0: no penalty, no reference.",
       .min = 0.0},
      kl_coef);
    v({.key = "value_epochs",
       .unit = "passes",
       .doc = "Passes of value pretraining over each agent warm-up batch (the critic's explained "
              "variance should reach 0.3 before PPO; the learner reports it before the first "
              "pass and before the last).",
       .min = 1,
       .max = 64},
      value_epochs);
    v({.key = "skip_uniform_reward_batches",
       .doc = "A PPO batch whose every episode has the same reward carries no signal for the "
              "actor (its advantages are the critic's errors, whitened to unit size): train only "
              "the critic on it. false: update the actor anyway (deterministic-mode tests do, to "
              "keep the actor moving on a compile-only reward that stays at -1)."},
      skip_uniform_reward_batches);
    v({.key = "micro_batch_tokens",
       .unit = "tokens",
       .doc = "Tokens per forward/backward micro-batch on one GPU.",
       .min = 1},
      micro_batch_tokens);
    v({.key = "checkpoint_every_steps",
       .unit = "steps",
       .doc = "Policy updates between atomic checkpoints.",
       .min = 1},
      checkpoint_every_steps);
    v({.key = "nccl_timeout_ms",
       .unit = "ms",
       .doc = "Deadline of one collective; a timed-out communicator is aborted and rebuilt.",
       .min = 1000},
      nccl_timeout_ms);
  }
};

}  // namespace cuda_agent
