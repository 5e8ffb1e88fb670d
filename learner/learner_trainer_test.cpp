// The training step on a tiny model, CPU, fp32: SFT learns, PPO moves probability toward the
// rewarded answer, the critic learns the reward, K micro-batches equal one batch, and a restored
// checkpoint continues bit-identically.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "learner/trainer.h"
#include "model/model_test_util.h"

namespace cuda_agent {
namespace {

constexpr std::int64_t kVocab = 50;

ModelConfig config() {
  ModelConfig c = tiny_model_config("qwen2", kVocab, /*head_dim=*/8);
  c.max_position_embeddings = 256;
  return c;
}

// A sequence: `prompt` (mask 0), then `answer` (mask 1) sampled with `logprobs`.
TrainSequence sequence(const std::string& id, const std::vector<std::int64_t>& prompt,
                       const std::vector<std::int64_t>& answer, double reward,
                       std::vector<float> logprobs = {}, std::uint64_t version = 0) {
  TrainSequence s;
  s.run = RunId{"r"};
  s.episode = EpisodeId{id};
  s.task = TaskId{"t"};
  s.ids = prompt;
  s.ids.insert(s.ids.end(), answer.begin(), answer.end());
  s.loss_mask.assign(prompt.size(), 0);
  s.loss_mask.resize(s.ids.size(), 1);
  if (logprobs.empty()) logprobs.assign(answer.size(), -std::log(float(kVocab)));
  s.behaviour_logprobs.assign(prompt.size(), 0.f);
  s.behaviour_logprobs.insert(s.behaviour_logprobs.end(), logprobs.begin(), logprobs.end());
  s.policy_versions.assign(s.ids.size(), version);
  s.reward = reward;
  s.last_model_token = std::int64_t(s.ids.size()) - 1;
  s.min_version = s.max_version = version;
  return s;
}

// Sum of the answer's log-probs under `m`, from a plain full-logits forward.
double answer_logprob(const Transformer& m, const TrainSequence& s) {
  at::NoGradGuard no_grad;
  at::Tensor ids = at::tensor(s.ids, at::kLong).view({1, -1});
  at::Tensor logp = at::log_softmax(m.forward(ids).to(at::kFloat), -1)[0];
  double total = 0;
  for (std::size_t t = 1; t < s.ids.size(); ++t)
    if (s.loss_mask[t]) total += logp[std::int64_t(t) - 1][s.ids[t]].item<double>();
  return total;
}

// On-policy: the behaviour log-probs of a sequence whose answer starts at token 3 become the
// current policy's.
void refresh_behaviour(const Transformer& m, TrainSequence& seq) {
  at::NoGradGuard ng;
  at::Tensor ids = at::tensor(seq.ids, at::kLong).view({1, -1});
  at::Tensor logp = at::log_softmax(m.forward(ids).to(at::kFloat), -1)[0];
  for (std::size_t k = 3; k < seq.ids.size(); ++k)
    seq.behaviour_logprobs[k] = logp[std::int64_t(k) - 1][seq.ids[k]].item<float>();
}

// One on-policy PPO step on a good and a bad answer (their behaviour log-probs refreshed first).
Expected<StepMetrics> on_policy_step(Trainer& t, TrainSequence& good, TrainSequence& bad) {
  refresh_behaviour(t.actor(), good);
  refresh_behaviour(t.actor(), bad);
  return t.ppo_step({good, bad});
}

Critic critic_of(const Transformer& actor_like) {
  return Critic{Transformer::random(actor_like.config(), 99),
                ValueHead::zeros(actor_like.config().hidden_size, at::kFloat)};
}

double max_param_diff(const Transformer& a, const Transformer& b) {
  auto pa = a.parameters(), pb = b.parameters();
  double d = 0;
  for (std::size_t i = 0; i < pa.size(); ++i)
    d = std::max(d, (pa[i].second - pb[i].second).abs().max().item<double>());
  return d;
}

TEST(Trainer, SftLossFallsFiveFoldIn200Steps) {
  // 8 prompts; the answer continues the prompt's first token by +1 per position (a rule to
  // learn, not only to memorise).
  std::vector<TrainSequence> corpus;
  for (int p = 0; p < 8; ++p) {
    std::vector<std::int64_t> prompt{1 + p, 2, 3}, answer;
    for (int i = 0; i < 20; ++i) answer.push_back((1 + p + 3 * i) % kVocab);
    corpus.push_back(sequence("e" + std::to_string(p), prompt, answer, 1.0));
  }
  TrainerOptions o;
  o.actor_optimizer = {.lr = 3e-3, .max_grad_norm = 1.0};
  auto t = Trainer::create(Transformer::random(config(), 1), std::nullopt, o, nullptr);
  ASSERT_TRUE(t) << t.error().to_string();
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    auto m = (*t)->sft_step(corpus);
    ASSERT_TRUE(m) << m.error().to_string();
    if (step == 0) first = m->loss;
    last = m->loss;
    if (step % 50 == 0 || step == 199) std::printf("%s\n", m->line().c_str());
  }
  std::printf("sft loss %.4f -> %.4f (%.1fx)\n", first, last, first / last);
  EXPECT_GE(first / last, 5.0);
}

TEST(Trainer, KMicroBatchesEqualOneBatch) {
  std::mt19937 rng(7);
  std::vector<TrainSequence> batch;
  for (int i = 0; i < 6; ++i) {
    std::vector<std::int64_t> prompt, answer;
    std::vector<float> lps;
    for (int k = 0; k < 3 + i; ++k) prompt.push_back(std::int64_t(rng() % kVocab));
    for (int k = 0; k < 5 + 2 * i; ++k) {
      answer.push_back(std::int64_t(rng() % kVocab));
      lps.push_back(-1.0f - float(rng() % 100) / 50.f);
    }
    batch.push_back(sequence("e" + std::to_string(i), prompt, answer, (i % 3) - 1.0, lps));
  }
  auto run = [&](std::int64_t micro_tokens) {
    TrainerOptions o;
    o.micro_batch_tokens = micro_tokens;
    o.actor_optimizer = {.lr = 1e-4};
    o.critic_optimizer = {.lr = 1e-4};
    Transformer actor = Transformer::random(config(), 3);
    Critic c = critic_of(actor);
    auto t = Trainer::create(std::move(actor), std::move(c), o, nullptr);
    EXPECT_TRUE(t);
    for (int s = 0; s < 2; ++s) {
      auto m = (*t)->ppo_step(batch);
      EXPECT_TRUE(m) << m.error().to_string();
    }
    return std::move(*t);
  };
  auto one = run(1 << 20);
  auto many = run(24);  // one or two rows per micro-batch
  const double actor_d = max_param_diff(one->actor(), many->actor());
  const double critic_d = max_param_diff(one->critic()->backbone, many->critic()->backbone);
  std::printf("max |one batch - K micro-batches|: actor %.3g, critic %.3g\n", actor_d, critic_d);
  EXPECT_LE(actor_d, 1e-6);
  EXPECT_LE(critic_d, 1e-6);
  EXPECT_GT(max_param_diff(one->actor(), Transformer::random(config(), 3)), 1e-6);  // it moved
}

TEST(Trainer, PpoMovesProbabilityTowardTheRewardedAnswer) {
  const std::vector<std::int64_t> prompt{5, 6, 7};
  TrainerOptions o;
  o.actor_optimizer = {.lr = 1e-3};
  auto t = Trainer::create(Transformer::random(config(), 4), std::nullopt, o, nullptr);
  ASSERT_TRUE(t);
  TrainSequence good = sequence("good", prompt, {10, 11, 12, 13}, 3.0);
  TrainSequence bad = sequence("bad", prompt, {20, 21, 22, 23}, -1.0);
  const double good0 = answer_logprob((*t)->actor(), good);
  const double bad0 = answer_logprob((*t)->actor(), bad);
  for (int s = 0; s < 10; ++s) {
    auto m = on_policy_step(**t, good, bad);
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_LE(m->importance_capped, 0.0);
    EXPECT_LT(m->behaviour_delta, 1e-5) << "on-policy: the behaviour log-probs are the learner's";
  }
  const double good1 = answer_logprob((*t)->actor(), good);
  const double bad1 = answer_logprob((*t)->actor(), bad);
  std::printf("log p(good) %.3f -> %.3f, log p(bad) %.3f -> %.3f\n", good0, good1, bad0, bad1);
  EXPECT_GT(good1, good0 + 1.0);
  EXPECT_LT(bad1, bad0);
  EXPECT_EQ((*t)->policy_version(), 10u);
}

// Every reward the same (the first GPU demo: every episode -1): the advantages are only the
// critic's errors, whitened to unit size, so the actor is left as it is and only the critic
// learns; with the option off the actor moves.
TEST(Trainer, ABatchWhoseRewardsAreAllTheSameTrainsTheCriticOnly) {
  std::vector<TrainSequence> batch;
  for (int i = 0; i < 4; ++i)
    batch.push_back(sequence("e" + std::to_string(i), {1, 2 + i}, {3, 4 + i, 5}, -1.0));
  auto run = [&](bool skip) {
    TrainerOptions o;
    o.actor_optimizer = {.lr = 1e-3};
    o.critic_optimizer = {.lr = 1e-3};
    o.skip_uniform_reward_batches = skip;
    Transformer actor = Transformer::random(config(), 6);
    Critic c = critic_of(actor);
    auto t = Trainer::create(std::move(actor), std::move(c), o, nullptr);
    EXPECT_TRUE(t);
    auto m = (*t)->ppo_step(batch);
    EXPECT_TRUE(m) << m.error().to_string();
    EXPECT_EQ(m->actor_skipped, skip);
    EXPECT_EQ(m->line().find("actor not updated") != std::string::npos, skip) << m->line();
    return std::move(*t);
  };
  auto skipped = run(true);
  EXPECT_EQ(max_param_diff(skipped->actor(), Transformer::random(config(), 6)), 0.0);
  // The value head starts at zero, so the first step moves it (and not yet the backbone).
  EXPECT_GT(skipped->critic()->head.bias.abs().max().item<double>(), 0.0)
      << "the critic still learns the reward";
  EXPECT_EQ(skipped->policy_version(), 1u) << "the step is taken all the same";
  auto updated = run(false);
  EXPECT_GT(max_param_diff(updated->actor(), Transformer::random(config(), 6)), 1e-6);
  // One different reward is signal enough.
  batch[0].reward = 1.0;
  TrainerOptions o;
  o.actor_optimizer = {.lr = 1e-3};
  auto t = Trainer::create(Transformer::random(config(), 6), std::nullopt, o, nullptr);
  ASSERT_TRUE(t);
  auto m = (*t)->ppo_step(batch);
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_FALSE(m->actor_skipped);
}

// Group advantages: episodes are compared only with the others of their task. Tasks whose
// episodes all got the same reward, and an episode alone with its task, give the actor nothing,
// so it is left as it is; a task with a better and a worse episode moves it toward the better.
TEST(Trainer, GroupAdvantagesCompareEpisodesOfOneTask) {
  TrainerOptions o;
  o.actor_optimizer = {.lr = 1e-3};
  o.critic_optimizer = {.lr = 1e-3};
  o.group_advantages = true;
  auto of_task = [](TrainSequence s, const std::string& task) {
    s.task = TaskId{task};
    return s;
  };
  std::vector<TrainSequence> uniform = {of_task(sequence("a0", {1, 2}, {3, 4}, -1.0), "a"),
                                        of_task(sequence("a1", {1, 2}, {5, 6}, -1.0), "a"),
                                        of_task(sequence("b0", {1, 7}, {8, 9}, 3.0), "b"),
                                        of_task(sequence("b1", {1, 7}, {8, 10}, 3.0), "b"),
                                        of_task(sequence("c0", {1, 11}, {12}, 1.0), "c")};
  {
    Transformer actor = Transformer::random(config(), 6);
    Critic c = critic_of(actor);
    auto t = Trainer::create(std::move(actor), std::move(c), o, nullptr);
    ASSERT_TRUE(t);
    auto m = (*t)->ppo_step(uniform);
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_TRUE(m->actor_skipped) << "the rewards differ across tasks only";
    EXPECT_EQ(m->ungrouped, 1u);
    EXPECT_EQ(max_param_diff((*t)->actor(), Transformer::random(config(), 6)), 0.0);
    EXPECT_GT((*t)->critic()->head.bias.abs().max().item<double>(), 0.0) << "the critic learns";
  }
  auto t = Trainer::create(Transformer::random(config(), 6), std::nullopt, o, nullptr);
  ASSERT_TRUE(t);
  const std::vector<std::int64_t> prompt = {1, 2, 3};
  TrainSequence good = of_task(sequence("good", prompt, {10, 11, 12, 13}, 3.0), "x");
  TrainSequence bad = of_task(sequence("bad", prompt, {20, 21, 22, 23}, 1.0), "x");
  const double good0 = answer_logprob((*t)->actor(), good);
  const double bad0 = answer_logprob((*t)->actor(), bad);
  for (int s = 0; s < 10; ++s) {
    auto m = on_policy_step(**t, good, bad);
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_FALSE(m->actor_skipped);
    EXPECT_EQ(m->ungrouped, 0u);
  }
  // Both rewards are positive: only their difference within the task pushes the worse one down.
  EXPECT_GT(answer_logprob((*t)->actor(), good), good0 + 1.0);
  EXPECT_LT(answer_logprob((*t)->actor(), bad), bad0);
}

// The KL penalty toward a frozen reference (the initial policy): the same PPO steps move the
// rewarded answer's log-prob less with it than without, and the step reports the KL (0 while the
// actor still equals the reference). A reference of another vocabulary is refused.
TEST(Trainer, KlPenaltyHoldsThePolicyNearTheReference) {
  auto run = [](double kl_coef, std::vector<double>* kls) {
    TrainerOptions o;
    o.actor_optimizer = {.lr = 1e-3};
    o.ppo.kl_coef = kl_coef;
    auto t = Trainer::create(Transformer::random(config(), 6), std::nullopt, o, nullptr);
    EXPECT_TRUE(t);
    if (kl_coef > 0) EXPECT_TRUE((*t)->set_reference(Transformer::random(config(), 6)).is_ok());
    const std::vector<std::int64_t> prompt = {1, 2, 3};
    TrainSequence good = sequence("good", prompt, {10, 11, 12, 13}, 1.0);
    TrainSequence bad = sequence("bad", prompt, {20, 21, 22, 23}, -1.0);
    const double good0 = answer_logprob((*t)->actor(), good);
    for (int s = 0; s < 10; ++s) {
      auto m = on_policy_step(**t, good, bad);
      EXPECT_TRUE(m) << m.error().to_string();
      if (kls) kls->push_back(m->kl_reference);
    }
    return answer_logprob((*t)->actor(), good) - good0;
  };
  std::vector<double> kls;
  const double free_rise = run(0.0, nullptr), held_rise = run(5.0, &kls);
  std::printf("log p(good) rises %.3f without the penalty, %.3f with it\n", free_rise, held_rise);
  EXPECT_GT(free_rise, 1.0);
  EXPECT_LT(held_rise, 0.8 * free_rise);
  EXPECT_EQ(kls.front(), 0.0) << "the first step's actor is the reference";
  EXPECT_GT(kls.back(), 0.0);

  ModelConfig other = config();
  other.vocab_size += 1;
  auto t = Trainer::create(Transformer::random(config(), 6), std::nullopt, {}, nullptr);
  ASSERT_TRUE(t);
  EXPECT_FALSE((*t)->set_reference(Transformer::random(other, 6)).is_ok());
}

// The demo's dynamic in miniature, on-policy: after a warm-up the policy opens with one of three
// plans (tokens 10, 11, 12) about equally and then writes a fixed "tool-call format" (20 21 22).
// On the easy task the reward is +3 for plan 12, +1 for the others, -1 whenever the format is
// broken; a hard task always gets -1 (an operator the policy copies wrong). PPO with group
// advantages (8 samples of each task per step) and the KL penalty toward the warmed-up policy
// must move the easy task's opening toward plan 12 and leave the format intact. (Session 28's GPU
// run broke the format; this miniature does not reproduce that with the batch-whitened
// advantages either, so it guards the group path, not the diagnosis.)
TEST(Trainer, GroupPpoRaisesTheRewardAndKeepsTheFormat) {
  const std::vector<std::int64_t> prompt = {1, 2, 3}, format = {20, 21, 22};
  auto warm = Trainer::create(Transformer::random(config(), 11), std::nullopt,
                              {.actor_optimizer = {.lr = 1e-2}}, nullptr);
  ASSERT_TRUE(warm);
  const std::vector<std::int64_t> hard_prompt = {4, 5, 6};
  std::vector<TrainSequence> corpus;
  for (const auto& p : {prompt, hard_prompt})
    for (std::int64_t plan : {10, 11, 12}) {
      std::vector<std::int64_t> answer{plan};
      answer.insert(answer.end(), format.begin(), format.end());
      corpus.push_back(sequence("w" + std::to_string(p[0]) + std::to_string(plan), p, answer, 1.0));
    }
  for (int s = 0; s < 60; ++s) ASSERT_TRUE((*warm)->sft_step(corpus));
  const std::string dir = ::testing::TempDir() + "/group_ppo_warm";
  ASSERT_TRUE((*warm)->actor().save(dir).is_ok());

  // Next-token distribution after `ids` under `m` (temperature 1).
  auto next = [](const Transformer& m, const std::vector<std::int64_t>& ids) {
    at::NoGradGuard ng;
    at::Tensor x = at::tensor(ids, at::kLong).view({1, -1});
    return at::softmax(m.forward(x).to(at::kFloat)[0][-1], -1);
  };
  auto plan_probability = [&](const Transformer& m, std::int64_t plan) {
    return next(m, prompt)[plan].item<double>();
  };
  auto format_logprob = [&](const Transformer& m) {  // after each plan, averaged
    double total = 0;
    for (std::int64_t plan : {10, 11, 12}) {
      std::vector<std::int64_t> ids = prompt;
      ids.push_back(plan);
      for (std::int64_t f : format) {
        total += std::log(next(m, ids)[f].item<double>());
        ids.push_back(f);
      }
    }
    return total / 3;
  };

  TrainerOptions o;
  o.actor_optimizer = {.lr = 2e-3, .warmup_steps = 2};
  o.group_advantages = true;
  o.ppo.kl_coef = 0.1;
  o.model_dir = dir;  // create() loads it again as the KL penalty's reference
  auto loaded = Transformer::load(dir);
  ASSERT_TRUE(loaded);
  auto t = Trainer::create(std::move(*loaded), std::nullopt, o, nullptr);
  ASSERT_TRUE(t) << t.error().to_string();
  const double p12_before = plan_probability((*t)->actor(), 12);
  const double format_before = format_logprob((*t)->actor());
  std::mt19937 rng(5);  // fixed: the run is deterministic on the CPU
  double first_reward = 0, last_reward = 0;
  for (int step = 0; step < 25; ++step) {
    std::vector<TrainSequence> batch;
    double reward_sum = 0;
    for (int k = 0; k < 16; ++k) {
      const bool hard = k >= 8;  // a task the policy always fails (an operator it copies wrong)
      const std::vector<std::int64_t>& task_prompt = hard ? hard_prompt : prompt;
      std::vector<std::int64_t> ids = task_prompt;
      std::vector<float> logprobs;
      for (int pos = 0; pos < 4; ++pos) {  // the plan, then three format tokens
        at::Tensor p = next((*t)->actor(), ids);
        std::discrete_distribution<int> pick(p.data_ptr<float>(), p.data_ptr<float>() + p.numel());
        const int tok = pick(rng);
        logprobs.push_back(std::log(p[tok].item<float>()));
        ids.push_back(tok);
      }
      const bool formatted = std::equal(format.begin(), format.end(), ids.begin() + 4);
      const double reward = hard || !formatted ? -1.0 : ids[3] == 12 ? 3.0 : 1.0;
      if (!hard) reward_sum += reward;
      TrainSequence s = sequence("s" + std::to_string(step) + "-" + std::to_string(k), task_prompt,
                                 std::vector<std::int64_t>(ids.begin() + 3, ids.end()), reward,
                                 logprobs, std::uint64_t(step));
      s.task = TaskId{hard ? "hard" : "easy"};  // two groups of 8
      batch.push_back(std::move(s));
    }
    if (step == 0) first_reward = reward_sum / 8;
    last_reward = reward_sum / 8;
    auto m = (*t)->ppo_step(batch);
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_EQ(m->ungrouped, 0u);
  }
  const double p12_after = plan_probability((*t)->actor(), 12);
  const double format_after = format_logprob((*t)->actor());
  std::printf("P(plan 12) %.3f -> %.3f; format log-prob %.4f -> %.4f; batch reward %.2f -> %.2f\n",
              p12_before, p12_after, format_before, format_after, first_reward, last_reward);
  EXPECT_GT(p12_after, p12_before + 0.3);
  EXPECT_GT(format_after, std::log(0.9)) << "the format must survive";
  EXPECT_GT(last_reward, first_reward);
}

TEST(Trainer, ValuePretrainingExplainsTheReward) {
  // The reward is decided by the prompt's first token (even: +1, odd: -1); the answer is noise.
  std::mt19937 rng(11);
  std::vector<TrainSequence> batch;
  for (int i = 0; i < 16; ++i) {
    std::vector<std::int64_t> prompt{1 + i, 2}, answer;
    for (int k = 0; k < 6; ++k) answer.push_back(std::int64_t(rng() % kVocab));
    batch.push_back(sequence("e" + std::to_string(i), prompt, answer, i % 2 == 0 ? 1.0 : -1.0));
  }
  TrainerOptions o;
  o.critic_optimizer = {.lr = 3e-3};
  o.value_clip = 0;
  Transformer actor = Transformer::random(config(), 5);
  Critic c = critic_of(actor);
  auto t = Trainer::create(std::move(actor), std::move(c), o, nullptr);
  ASSERT_TRUE(t);
  double ev = -1;
  for (int s = 0; s < 150; ++s) {
    auto m = (*t)->value_step(batch);
    ASSERT_TRUE(m) << m.error().to_string();
    ev = m->explained_variance;
    if (s % 50 == 0 || s == 149) std::printf("%s\n", m->line().c_str());
  }
  EXPECT_GE(ev, 0.3);
  EXPECT_EQ((*t)->policy_version(), 0u);  // the actor did not change
}

TEST(Trainer, RestoredCheckpointContinuesBitIdentically) {
  testing::TempDir dir;
  std::vector<TrainSequence> batch;
  for (int i = 0; i < 4; ++i)
    batch.push_back(sequence("e" + std::to_string(i), {1, 2 + i}, {3, 4 + i, 5}, i - 1.5));
  TrainerOptions o;
  o.actor_optimizer = {.lr = 1e-3, .warmup_steps = 3};
  o.critic_optimizer = {.lr = 1e-3};
  auto make = [&] {
    Transformer actor = Transformer::random(config(), 8);
    Critic c = critic_of(actor);
    auto t = Trainer::create(std::move(actor), std::move(c), o, nullptr);
    EXPECT_TRUE(t);
    return std::move(*t);
  };
  auto straight = make();
  for (int s = 0; s < 5; ++s) ASSERT_TRUE(straight->ppo_step(batch));

  auto first = make();
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(first->ppo_step(batch));
  ASSERT_TRUE(first->save_checkpoint(dir.str("ckpt"), {{"note", "test"}}));
  auto resumed = make();
  auto state = resumed->restore_checkpoint(dir.str("ckpt"));
  ASSERT_TRUE(state) << state.error().to_string();
  ASSERT_TRUE(state->has_value());
  EXPECT_EQ((**state)["note"], "test");
  EXPECT_EQ(resumed->steps(), 3u);
  EXPECT_EQ(resumed->policy_version(), 3u);
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(resumed->ppo_step(batch));
  EXPECT_EQ(max_param_diff(straight->actor(), resumed->actor()), 0.0);
  EXPECT_EQ(max_param_diff(straight->critic()->backbone, resumed->critic()->backbone), 0.0);
}

}  // namespace
}  // namespace cuda_agent
