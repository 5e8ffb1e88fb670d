// The training step: see trainer.h for the order of work and the token conventions.
#include "learner/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "learner/checkpoint.h"
#include "learner/gae.h"
#include "learner/learner_group.h"
#include "learner/token_logprobs.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

Error torch_error(const char* what, const std::exception& e) {
  std::string m = e.what();
  if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  return make_error(ErrorCategory::kInternal, "learner.torch", std::string(what) + ": " + m);
}

// The tensors of one micro-batch: rows right-padded to the longest, and the model tokens of all
// rows in row order (N of them), each scored from the hidden state one position earlier.
struct MicroInputs {
  at::Tensor tokens;   // [B, T] int64 on the device
  at::Tensor index;    // [N] int64: b * T + (t - 1) for model token t of row b
  at::Tensor targets;  // [N] int64: the model tokens
  std::int64_t rows = 0, width = 0, n = 0;
  double real_tokens = 0;  // unpadded tokens of the rows
};

// Positions of a sequence's model tokens.
std::vector<std::int64_t> model_positions(const TrainSequence& s) {
  std::vector<std::int64_t> out;
  out.reserve(std::size_t(s.model_tokens()));
  for (std::size_t t = 0; t < s.loss_mask.size(); ++t)
    if (s.loss_mask[t] != 0) out.push_back(std::int64_t(t));
  return out;
}

MicroInputs make_inputs(const std::vector<const TrainSequence*>& rows,
                        const std::vector<std::vector<std::int64_t>*>& positions,
                        at::Device device) {
  MicroInputs in;
  in.rows = std::int64_t(rows.size());
  for (const TrainSequence* s : rows) in.width = std::max<std::int64_t>(in.width, s->ids.size());
  std::vector<std::int64_t> tokens(std::size_t(in.rows * in.width), 0), index, targets;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const TrainSequence& s = *rows[b];
    std::copy(s.ids.begin(), s.ids.end(), tokens.begin() + std::int64_t(b) * in.width);
    in.real_tokens += double(s.ids.size());
    for (std::int64_t t : *positions[b]) {
      index.push_back(std::int64_t(b) * in.width + t - 1);
      targets.push_back(s.ids[std::size_t(t)]);
    }
  }
  in.n = std::int64_t(index.size());
  in.tokens = upload_longs(tokens, device).view({in.rows, in.width});
  in.index = upload_longs(index, device);
  in.targets = upload_longs(targets, device);
  return in;
}

// Hidden states of the scored positions: [N, H].
at::Tensor scored_hidden(const Transformer& m, const MicroInputs& in) {
  at::Tensor h = m.hidden(in.tokens, nullptr, {}, {});  // [B, T, H]
  return h.reshape({in.rows * in.width, h.size(-1)}).index_select(0, in.index);
}

at::Tensor floats_on(const std::vector<float>& v, at::Device device) {
  return upload_floats(v, device);
}

std::vector<float> to_floats(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

void set_trainable(const Transformer& m) {
  for (auto& [name, t] : m.parameters()) t.requires_grad_(true);
}

void clear_grads(const std::vector<std::pair<std::string, at::Tensor>>& params) {
  for (const auto& [name, t] : params)
    if (t.grad().defined()) t.mutable_grad().reset();
}

}  // namespace

std::string StepMetrics::line() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "step %llu %s loss=%.6g value_loss=%.4g entropy=%.4g clip=%.4f kl=%.3g "
                "gnorm=%.4g ev=%.3f reward=%.3f seqs=%llu tokens=%.0f tok/s=%.0f",
                static_cast<unsigned long long>(step), kind.c_str(), loss, value_loss, entropy,
                clip_fraction, approx_kl, grad_norm, explained_variance, reward_mean,
                static_cast<unsigned long long>(sequences), model_tokens, tokens_per_s);
  std::string out = buf;
  if (kind == "ppo") {
    char more[96];
    std::snprintf(more, sizeof more, " logp_delta=%.3g", behaviour_delta);
    out += more;
  }
  if (actor_skipped) out += kActorSkippedNote;
  return out;
}

nlohmann::json StepMetrics::to_json() const {
  return {{"kind", kind},
          {"step", step},
          {"sequences", sequences},
          {"model_tokens", model_tokens},
          {"total_tokens", total_tokens},
          {"loss", loss},
          {"value_loss", value_loss},
          {"entropy", entropy},
          {"clip_fraction", clip_fraction},
          {"approx_kl", approx_kl},
          {"importance_capped", importance_capped},
          {"grad_norm", grad_norm},
          {"explained_variance", explained_variance},
          {"reward_mean", reward_mean},
          {"mean_staleness", mean_staleness},
          {"seconds", seconds},
          {"tokens_per_s", tokens_per_s},
          {"actor_skipped", actor_skipped},
          {"ungrouped", ungrouped},
          {"kl_reference", kl_reference},
          {"behaviour_delta", behaviour_delta}};
}

struct Trainer::Impl {
  Transformer actor;
  std::optional<Critic> critic;
  TrainerOptions opt;
  LearnerGroup* group = nullptr;
  std::vector<std::pair<std::string, at::Tensor>> actor_params, critic_params;
  std::optional<MasterAdamW> actor_opt, critic_opt;
  std::uint64_t steps = 0;
  std::uint64_t version = 0;
  std::optional<Transformer> reference;  // frozen; set_reference

  int rank() const { return group ? group->rank() : 0; }
  int world() const { return group ? group->world_size() : 1; }
  at::Device device() const { return actor.device(); }

  Status sum(std::vector<double>& values) {
    if (group == nullptr || group->world_size() == 1) return Status::ok();
    return group->allreduce_sum(values);
  }

  // Sums the flat gradient over the group, steps the optimizer, and makes the new weights the
  // compute weights on every rank.
  Expected<OptimizerStepStats> apply(MasterAdamW& o) {
    at::Tensor g = o.flat_grad();
    if (group != nullptr && group->world_size() > 1) {
      std::vector<at::Tensor> gs{g};
      RETURN_IF_ERROR(group->allreduce_sum(gs));
      g = gs[0];
    }
    OptimizerStepStats s = o.step(g);
    if (opt.shard_optimizer && world() > 1) {
      at::Tensor full = o.full_master();
      RETURN_IF_ERROR(group->all_gather_into(o.owned_master(), full));
      o.publish();
    }
    return s;
  }

  // This rank's sequences of the global batch, and their micro-batches.
  struct Local {
    std::vector<TrainSequence> owned;                  // this rank's share, in batch order
    std::vector<const TrainSequence*> seqs;            // &owned[i]
    std::vector<std::vector<std::int64_t>> positions;  // model-token positions per sequence
    std::vector<MicroBatch> micro;                     // rows index seqs
  };
  Expected<Local> local_share(const std::vector<TrainSequence>& batch) {
    Local l;
    for (std::size_t i : shard_for_rank(batch, rank(), world())) l.owned.push_back(batch[i]);
    for (const TrainSequence& s : l.owned) {
      l.seqs.push_back(&s);
      l.positions.push_back(model_positions(s));
    }
    ASSIGN_OR_RETURN(l.micro, pack_micro_batches(l.owned, opt.micro_batch_tokens));
    return l;
  }

  MicroInputs inputs(Local& l, const MicroBatch& mb) {
    std::vector<const TrainSequence*> rows;
    std::vector<std::vector<std::int64_t>*> pos;
    for (std::size_t r : mb.rows) {
      rows.push_back(l.seqs[r]);
      pos.push_back(&l.positions[r]);
    }
    return make_inputs(rows, pos, device());
  }

  // Concatenates per-sequence vectors in a micro-batch's row order: [N] float32 on the device.
  at::Tensor gather(const std::vector<std::vector<float>>& per_seq, const MicroBatch& mb) {
    std::vector<float> flat;
    for (std::size_t r : mb.rows) flat.insert(flat.end(), per_seq[r].begin(), per_seq[r].end());
    return floats_on(flat, device());
  }
  // Splits an [N] tensor back into per-sequence vectors.
  void scatter(const at::Tensor& flat, const MicroBatch& mb, const Local& l,
               std::vector<std::vector<float>>& per_seq) {
    std::vector<float> v = to_floats(flat);
    std::size_t at = 0;
    for (std::size_t r : mb.rows) {
      const std::size_t n = l.positions[r].size();
      per_seq[r].assign(v.begin() + std::int64_t(at), v.begin() + std::int64_t(at + n));
      at += n;
    }
  }

  double inv_temperature() const { return opt.temperature > 0 ? 1.0 / opt.temperature : 1.0; }

  // Global counts: sequences, model tokens, rewards, staleness.
  struct Totals {
    double sequences = 0, model_tokens = 0, tokens = 0, reward = 0, staleness = 0;
    double reward_sq = 0;
    // Every sequence of the global batch has the same reward (its variance is 0: tier rewards
    // are small integers, whose sums of squares are exact).
    bool uniform_reward() const {
      if (sequences <= 0) return false;
      const double mean = reward / sequences;
      return reward_sq / sequences - mean * mean <= 1e-12 * std::max(1.0, mean * mean);
    }
  };
  Expected<Totals> totals(const Local& l) {
    std::vector<double> v(6, 0.0);
    for (const TrainSequence* s : l.seqs) {
      v[0] += 1;
      v[1] += double(s->model_tokens());
      v[2] += double(s->ids.size());
      v[3] += s->reward;
      v[4] += version >= s->min_version ? double(version - s->min_version) : 0.0;
      v[5] += s->reward * s->reward;
    }
    RETURN_IF_ERROR(sum(v));
    return Totals{v[0], v[1], v[2], v[3], v[4], v[5]};
  }

  // The figures every kind of step reports; `passes` forwards of the batch's tokens were made.
  StepMetrics metrics(const char* kind, const Totals& tot, Clock::time_point t0,
                      double passes) const {
    StepMetrics m;
    m.kind = kind;
    m.step = steps;
    m.sequences = std::uint64_t(tot.sequences);
    m.model_tokens = tot.model_tokens;
    m.total_tokens = tot.tokens * passes;
    m.reward_mean = tot.reward / std::max(1.0, tot.sequences);
    m.mean_staleness = tot.staleness / std::max(1.0, tot.sequences);
    m.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    m.tokens_per_s = m.total_tokens / std::max(1e-9, m.seconds);
    return m;
  }

  // Critic values per model token of every local sequence (no grad).
  void critic_values(Local& l, std::vector<std::vector<float>>& values) {
    values.assign(l.seqs.size(), {});
    at::NoGradGuard no_grad;
    for (const MicroBatch& mb : l.micro) {
      MicroInputs in = inputs(l, mb);
      scatter(critic->head.forward(scored_hidden(critic->backbone, in)), mb, l, values);
    }
  }

  // GAE over each sequence's model tokens from per-model-token values; fills advantages and
  // returns per model token.
  void advantages(const Local& l, const std::vector<std::vector<float>>& values,
                  std::vector<std::vector<float>>& adv, std::vector<std::vector<float>>& ret) {
    adv.assign(l.seqs.size(), {});
    ret.assign(l.seqs.size(), {});
    for (std::size_t i = 0; i < l.seqs.size(); ++i) {
      const TrainSequence& s = *l.seqs[i];
      const auto& pos = l.positions[i];
      std::vector<float> full_values(s.ids.size(), 0.f);
      if (!values.empty())
        for (std::size_t k = 0; k < pos.size(); ++k) full_values[pos[k]] = values[i][k];
      GaeResult g =
          compute_gae(s.loss_mask, full_values, s.token_rewards(), opt.gamma, opt.gae_lambda);
      for (std::int64_t t : pos) {
        adv[i].push_back(g.advantages[std::size_t(t)]);
        ret[i].push_back(g.returns[std::size_t(t)]);
      }
    }
  }

  // Whitens per-model-token advantages with the moments of the whole global batch.
  Status whiten_global(std::vector<std::vector<float>>& adv) {
    MomentSums m;
    for (const auto& a : adv) m.add(a, std::vector<std::uint8_t>(a.size(), 1));
    std::vector<double> sums{m.sum, m.sum_sq, m.count};
    RETURN_IF_ERROR(sum(sums));
    m = MomentSums{.sum = sums[0], .sum_sq = sums[1], .count = sums[2]};
    if (m.count == 0) return Status::ok();
    for (auto& a : adv) whiten(a, std::vector<std::uint8_t>(a.size(), 1), m.mean(), m.stddev());
    return Status::ok();
  }

  // Explained variance of `values` as predictions of `returns`, over the group (0 where it is
  // undefined: constant returns).
  Expected<double> explained_variance(const std::vector<std::vector<float>>& values,
                                      const std::vector<std::vector<float>>& returns) {
    ExplainedVariance ev;
    for (std::size_t i = 0; i < returns.size(); ++i)
      for (std::size_t k = 0; k < returns[i].size(); ++k) {
        const double r = returns[i][k], d = r - values[i][k];
        ev.count += 1;
        ev.returns_sum += r;
        ev.returns_sq_sum += r * r;
        ev.residual_sum += d;
        ev.residual_sq_sum += d * d;
      }
    std::array<double, 5> a = ev.as_array();
    std::vector<double> sums(a.begin(), a.end());
    RETURN_IF_ERROR(sum(sums));
    std::copy(sums.begin(), sums.end(), a.begin());
    const double v = ExplainedVariance::from_array(a).value();
    return std::isfinite(v) ? v : 0.0;
  }
};

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

Expected<std::unique_ptr<Trainer>> Trainer::create(Transformer actor, std::optional<Critic> critic,
                                                   const TrainerOptions& options,
                                                   LearnerGroup* group) {
  try {
    auto impl = std::make_unique<Impl>(Impl{std::move(actor), std::move(critic), options, group});
    const ShardSpec shard{.rank = impl->rank(),
                          .world_size = impl->world(),
                          .sharded = options.shard_optimizer && impl->world() > 1};
    set_trainable(impl->actor);
    impl->actor_params = impl->actor.parameters();
    impl->actor_opt.emplace(
        MasterAdamW::create(impl->actor_params, options.actor_optimizer, shard));
    if (impl->critic) {
      set_trainable(impl->critic->backbone);
      impl->critic->head.weight.requires_grad_(true);
      impl->critic->head.bias.requires_grad_(true);
      impl->critic_params = impl->critic->backbone.parameters();
      impl->critic_params.emplace_back("value_head.weight", impl->critic->head.weight);
      impl->critic_params.emplace_back("value_head.bias", impl->critic->head.bias);
      impl->critic_opt.emplace(
          MasterAdamW::create(impl->critic_params, options.critic_optimizer, shard));
    }
    std::unique_ptr<Trainer> trainer(new Trainer(std::move(impl)));
    if (options.ppo.kl_coef > 0 && !options.model_dir.empty()) {
      // The KL penalty's reference: the model the actor started from, loaded again and frozen.
      const Transformer& actor = trainer->impl_->actor;
      ASSIGN_OR_RETURN(
          Transformer reference,
          Transformer::load(options.model_dir, {.device = actor.device(), .dtype = actor.dtype()}));
      RETURN_IF_ERROR(trainer->set_reference(std::move(reference)));
    }
    return trainer;
  } catch (const std::exception& e) {
    return torch_error("learner: creating the trainer", e);
  }
}

const Transformer& Trainer::actor() const { return impl_->actor; }
const Critic* Trainer::critic() const { return impl_->critic ? &*impl_->critic : nullptr; }

Status Trainer::set_reference(Transformer reference) {
  if (reference.config().vocab_size != impl_->actor.config().vocab_size)
    return make_error(ErrorCategory::kInvalidInput, "learner.reference",
                      "the reference policy's vocabulary (" +
                          std::to_string(reference.config().vocab_size) +
                          ") differs from the actor's (" +
                          std::to_string(impl_->actor.config().vocab_size) + ")");
  impl_->reference.emplace(std::move(reference));
  return Status::ok();
}
std::uint64_t Trainer::steps() const { return impl_->steps; }
std::uint64_t Trainer::policy_version() const { return impl_->version; }
void Trainer::set_policy_version(std::uint64_t version) { impl_->version = version; }

Expected<StepMetrics> Trainer::sft_step(const std::vector<TrainSequence>& batch) {
  Impl& I = *impl_;
  const auto t0 = Clock::now();
  try {
    ASSIGN_OR_RETURN(Impl::Local l, I.local_share(batch));
    ASSIGN_OR_RETURN(Impl::Totals tot, I.totals(l));
    if (tot.model_tokens == 0)
      return make_error(ErrorCategory::kInvalidInput, "learner.empty_batch",
                        "sft step: the batch has no model tokens");
    std::vector<double> stats(3, 0.0);  // nll sum, entropy sum, tokens
    for (const MicroBatch& mb : l.micro) {
      MicroInputs in = I.inputs(l, mb);
      TokenLogprobs lp = chunked_token_logprobs(
          scored_hidden(I.actor, in), I.actor.weights().lm_head, in.targets,
          I.opt.logprob_chunk_rows, /*with_entropy=*/true, I.inv_temperature());
      at::Tensor mask = at::ones({in.n}, lp.logprobs.options());
      SftLossResult r = sft_loss(lp.logprobs, mask, tot.model_tokens);
      r.loss.backward();
      stats[0] += r.nll_sum;
      stats[1] += lp.entropy.detach().sum().item<double>();
      stats[2] += double(in.n);
    }
    RETURN_IF_ERROR(I.sum(stats));
    ASSIGN_OR_RETURN(OptimizerStepStats os, I.apply(*I.actor_opt));
    clear_grads(I.actor_params);
    ++I.steps;
    ++I.version;
    StepMetrics m = I.metrics("sft", tot, t0, 1.0);
    m.loss = stats[0] / tot.model_tokens;
    m.entropy = stats[1] / std::max(1.0, stats[2]);
    m.grad_norm = os.grad_norm;
    return m;
  } catch (const std::exception& e) {
    return torch_error("learner: sft step", e);
  }
}

Expected<StepMetrics> Trainer::value_step(const std::vector<TrainSequence>& batch) {
  Impl& I = *impl_;
  if (!I.critic)
    return make_error(ErrorCategory::kInvalidInput, "learner.no_critic",
                      "value step: this learner has no critic (give it --critic or "
                      "--critic-from-actor)");
  const auto t0 = Clock::now();
  try {
    ASSIGN_OR_RETURN(Impl::Local l, I.local_share(batch));
    ASSIGN_OR_RETURN(Impl::Totals tot, I.totals(l));
    std::vector<std::vector<float>> old_values, adv, ret;
    I.critic_values(l, old_values);
    I.advantages(l, old_values, adv, ret);
    ASSIGN_OR_RETURN(double ev, I.explained_variance(old_values, ret));
    std::vector<double> stats(1, 0.0);
    for (const MicroBatch& mb : l.micro) {
      MicroInputs in = I.inputs(l, mb);
      at::Tensor v = I.critic->head.forward(scored_hidden(I.critic->backbone, in));
      at::Tensor mask = at::ones({in.n}, v.options());
      ValueLossResult r = value_loss(v, I.gather(old_values, mb), I.gather(ret, mb), mask,
                                     I.opt.value_clip, tot.model_tokens);
      r.loss.backward();
      stats[0] += r.loss.item<double>();
    }
    RETURN_IF_ERROR(I.sum(stats));
    ASSIGN_OR_RETURN(OptimizerStepStats os, I.apply(*I.critic_opt));
    clear_grads(I.critic_params);
    ++I.steps;
    StepMetrics m = I.metrics("value", tot, t0, 1.0);
    m.loss = stats[0];
    m.value_loss = stats[0];
    m.grad_norm = os.grad_norm;
    m.explained_variance = ev;
    return m;
  } catch (const std::exception& e) {
    return torch_error("learner: value step", e);
  }
}

Expected<StepMetrics> Trainer::ppo_step(const std::vector<TrainSequence>& batch) {
  Impl& I = *impl_;
  const auto t0 = Clock::now();
  try {
    ASSIGN_OR_RETURN(Impl::Local l, I.local_share(batch));
    ASSIGN_OR_RETURN(Impl::Totals tot, I.totals(l));
    if (tot.model_tokens == 0)
      return make_error(ErrorCategory::kInvalidInput, "learner.empty_batch",
                        "ppo step: the batch has no model tokens");
    // 2. Proximal log-probs and entropy under the current weights; old values.
    std::vector<std::vector<float>> prox(l.seqs.size()), behaviour(l.seqs.size()), values;
    // The KL penalty's reference log-probs, on the same scale as the actor's (logits / T).
    const bool with_kl = I.opt.ppo.kl_coef > 0 && I.reference.has_value();
    std::vector<std::vector<float>> ref(l.seqs.size());
    double entropy_sum = 0;
    {
      at::NoGradGuard no_grad;
      for (const MicroBatch& mb : l.micro) {
        MicroInputs in = I.inputs(l, mb);
        TokenLogprobs lp = chunked_token_logprobs(
            scored_hidden(I.actor, in), I.actor.weights().lm_head, in.targets,
            I.opt.logprob_chunk_rows, /*with_entropy=*/true, I.inv_temperature());
        I.scatter(lp.logprobs, mb, l, prox);
        entropy_sum += lp.entropy.sum().item<double>();
        if (with_kl) {
          TokenLogprobs r = chunked_token_logprobs(
              scored_hidden(*I.reference, in), I.reference->weights().lm_head, in.targets,
              I.opt.logprob_chunk_rows, /*with_entropy=*/false, I.inv_temperature());
          I.scatter(r.logprobs, mb, l, ref);
        }
      }
    }
    // How far the engine's sampling log-probs are from the learner's on the weights that sampled
    // them (mean |delta| over model tokens; stale tokens add their policy's drift).
    std::vector<double> delta{0.0};
    for (std::size_t i = 0; i < l.seqs.size(); ++i)
      for (std::size_t k = 0; k < l.positions[i].size(); ++k) {
        behaviour[i].push_back(l.seqs[i]->behaviour_logprobs[std::size_t(l.positions[i][k])]);
        delta[0] += std::abs(double(prox[i][k]) - double(behaviour[i].back()));
      }
    RETURN_IF_ERROR(I.sum(delta));
    if (I.critic) I.critic_values(l, values);
    // 3. Advantages (a critic's GAE, or the sequence reward as a whitened baseline).
    std::vector<std::vector<float>> adv, ret;
    I.advantages(l, values, adv, ret);
    double ev = 0;
    if (I.critic) {
      ASSIGN_OR_RETURN(ev, I.explained_variance(values, ret));
    }
    // Every reward the same: no signal for the actor (TrainerOptions::skip_uniform_reward_batches),
    // so its advantages are not needed either (the critic trains on the returns).
    bool actor_skipped = I.opt.skip_uniform_reward_batches && tot.uniform_reward();
    std::uint64_t ungrouped = 0;
    if (I.opt.group_advantages) {
      // From the global batch, which every rank holds: the same figures on every rank.
      std::vector<std::string> tasks;
      std::vector<double> rewards;
      for (const TrainSequence& s : batch) {
        tasks.push_back(s.task.value());
        rewards.push_back(s.reward);
      }
      const GroupAdvantages g = leave_one_out_advantages(tasks, rewards);
      ungrouped = g.alone_count();
      std::map<std::string, double> by_episode;
      bool any = false;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        by_episode[batch[i].episode.value()] = g.advantages[i];
        any = any || g.advantages[i] != 0;
      }
      for (std::size_t i = 0; i < l.seqs.size(); ++i)
        std::fill(adv[i].begin(), adv[i].end(), float(by_episode[l.seqs[i]->episode.value()]));
      // All 0: the actor's gradient is 0, and an optimizer step would still move it (momentum).
      actor_skipped = !any;
    } else if (!actor_skipped) {
      RETURN_IF_ERROR(I.whiten_global(adv));
    }
    // 4. Epochs.
    // policy loss, clipped tokens, approx KL, capped tokens, value loss, (unused), reference KL
    std::vector<double> stats(7, 0.0);
    OptimizerStepStats actor_stats;
    for (std::int64_t epoch = 0; epoch < std::max<std::int64_t>(1, I.opt.ppo_epochs); ++epoch) {
      std::fill(stats.begin(), stats.end(), 0.0);
      for (const MicroBatch& mb : l.micro) {
        MicroInputs in = I.inputs(l, mb);
        if (!actor_skipped) {
          TokenLogprobs lp = chunked_token_logprobs(
              scored_hidden(I.actor, in), I.actor.weights().lm_head, in.targets,
              I.opt.logprob_chunk_rows, /*with_entropy=*/false, I.inv_temperature());
          at::Tensor mask = at::ones({in.n}, lp.logprobs.options());
          PolicyLossResult p = ppo_policy_loss(
              lp.logprobs, I.gather(prox, mb), I.gather(behaviour, mb), I.gather(adv, mb), mask,
              I.opt.ppo, tot.model_tokens, with_kl ? I.gather(ref, mb) : at::Tensor());
          p.loss.backward();
          stats[0] += p.loss.item<double>();
          stats[1] += p.clipped_tokens;
          stats[2] += p.approx_kl_sum;
          stats[3] += p.capped_tokens;
          stats[6] += p.kl_sum;
        }
        if (I.critic) {
          at::Tensor v = I.critic->head.forward(scored_hidden(I.critic->backbone, in));
          at::Tensor mask = at::ones({in.n}, v.options());
          ValueLossResult r = value_loss(v, I.gather(values, mb), I.gather(ret, mb), mask,
                                         I.opt.value_clip, tot.model_tokens);
          r.loss.backward();
          stats[4] += r.loss.item<double>();
        }
      }
      RETURN_IF_ERROR(I.sum(stats));
      if (!actor_skipped) {
        ASSIGN_OR_RETURN(actor_stats, I.apply(*I.actor_opt));
        clear_grads(I.actor_params);
      }
      if (I.critic) {
        ASSIGN_OR_RETURN(OptimizerStepStats cs, I.apply(*I.critic_opt));
        (void)cs;
        clear_grads(I.critic_params);
      }
    }
    std::vector<double> ent{entropy_sum};
    RETURN_IF_ERROR(I.sum(ent));
    ++I.steps;
    ++I.version;
    StepMetrics m = I.metrics("ppo", tot, t0, double(std::max<std::int64_t>(1, I.opt.ppo_epochs)));
    m.loss = stats[0];
    m.value_loss = stats[4];
    m.entropy = ent[0] / tot.model_tokens;
    m.clip_fraction = stats[1] / tot.model_tokens;
    m.approx_kl = stats[2] / tot.model_tokens;
    m.importance_capped = stats[3] / tot.model_tokens;
    m.grad_norm = actor_stats.grad_norm;
    m.explained_variance = ev;
    m.actor_skipped = actor_skipped;
    m.ungrouped = ungrouped;
    m.kl_reference = stats[6] / tot.model_tokens;
    m.kl_penalty = with_kl;
    m.behaviour_delta = delta[0] / tot.model_tokens;
    return m;
  } catch (const std::exception& e) {
    return torch_error("learner: ppo step", e);
  }
}

namespace {

// Files beside the weights that make a checkpoint a complete model directory for the engine and
// for transformers (the tokenizer and generation settings), copied from the model the trainer
// started from.
constexpr const char* kModelSideFiles[] = {"tokenizer.json",
                                           "tokenizer_config.json",
                                           "special_tokens_map.json",
                                           "generation_config.json",
                                           "vocab.json",
                                           "merges.txt"};

Status copy_side_files(const std::string& from, const CheckpointStaging& s) {
  namespace fs = std::filesystem;
  if (from.empty()) return Status::ok();
  for (const char* name : kModelSideFiles) {
    const fs::path p = fs::path(from) / name;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof())
      return make_error(ErrorCategory::kIo, "checkpoint.io", p.string() + ": read failed");
    RETURN_IF_ERROR(s.add_file(name, bytes));
  }
  return Status::ok();
}

}  // namespace

Status Trainer::save_checkpoint(const std::string& root, const nlohmann::json& extra) {
  Impl& I = *impl_;
  try {
    at::NoGradGuard no_grad;
    const bool lead = I.rank() == 0;
    std::optional<CheckpointStaging> staging;
    if (lead) {
      ASSIGN_OR_RETURN(CheckpointStaging s, CheckpointStaging::begin(root, I.steps));
      staging.emplace(std::move(s));
      RETURN_IF_ERROR(I.actor.save(staging->path()));
      RETURN_IF_ERROR(copy_side_files(I.opt.model_dir, *staging));
      if (I.critic) {
        ASSIGN_OR_RETURN(std::string dir, staging->subdir("critic"));
        RETURN_IF_ERROR(I.critic->backbone.save(dir));
        RETURN_IF_ERROR(I.critic->head.save(dir + "/value_head.safetensors"));
      }
      TrainerState ts{.step = I.steps,
                      .stage = extra.value("stage", std::string()),
                      .policy_version = I.version};
      for (const auto& [k, v] : extra.items())
        if (k != "stage") ts.extra[k] = v;
      RETURN_IF_ERROR(staging->add_trainer_state(ts));
    }
    if (I.group != nullptr) RETURN_IF_ERROR(I.group->barrier());
    if (!lead) {
      ASSIGN_OR_RETURN(CheckpointStaging s, CheckpointStaging::attach(root, I.steps));
      staging.emplace(std::move(s));
    }
    RETURN_IF_ERROR(staging->add_tensors(optimizer_file_name("", I.rank()), I.actor_opt->state()));
    if (I.critic_opt)
      RETURN_IF_ERROR(
          staging->add_tensors(optimizer_file_name("critic", I.rank()), I.critic_opt->state()));
    if (I.group != nullptr) RETURN_IF_ERROR(I.group->barrier());
    if (lead) {
      ASSIGN_OR_RETURN(std::string dir, staging->seal());
      (void)dir;
      ASSIGN_OR_RETURN(auto removed,
                       prune_checkpoints(root, {.keep_last = I.opt.keep_checkpoints}));
      (void)removed;
    }
    // No rank may start a new checkpoint of this root before the seal (its staging would race).
    if (I.group != nullptr) RETURN_IF_ERROR(I.group->barrier());
    return Status::ok();
  } catch (const std::exception& e) {
    return torch_error("learner: saving a checkpoint", e);
  }
}

// The newest checkpoint under `root` that verifies and that `accept` takes; kNotFound
// "checkpoint.none" naming what was skipped when none does.
static Expected<LoadedCheckpoint> newest_accepted(
    const std::string& root, const std::function<bool(const nlohmann::json&)>& accept) {
  std::string skipped;
  for (std::uint64_t step : list_checkpoints(root)) {
    Expected<LoadedCheckpoint> ck = load_checkpoint(root + "/" + checkpoint_dir_name(step));
    if (!ck) {
      skipped += "; " + ck.error().message;
      continue;
    }
    if (accept(ck->trainer_state)) return ck;
    skipped += "; " + ck->path + " (not the one wanted)";
  }
  return make_error(ErrorCategory::kNotFound, "checkpoint.none",
                    "no checkpoint under " + root + " verifies and fits" + skipped);
}

Expected<std::optional<nlohmann::json>> Trainer::restore_checkpoint(
    const std::string& root, const std::function<bool(const nlohmann::json&)>& accept) {
  Impl& I = *impl_;
  try {
    Expected<LoadedCheckpoint> ck =
        accept ? newest_accepted(root, accept) : load_latest_checkpoint(root);
    if (!ck) {
      if (ck.error().code == "checkpoint.none" && list_checkpoints(root).empty())
        return std::optional<nlohmann::json>();
      return ck.error();
    }
    for (const std::string& why : ck->skipped)
      std::fprintf(stderr, "learner: skipped checkpoint: %s\n", why.c_str());
    auto restore = [&](MasterAdamW& o, const std::string& prefix) -> Status {
      const std::string name = optimizer_file_name(prefix, I.rank());
      if (!ck->has(name))
        return make_error(ErrorCategory::kInvalidInput, "checkpoint.bad",
                          ck->path + ": no " + name + " (was it written by " +
                              std::to_string(I.world()) + " ranks?)");
      ASSIGN_OR_RETURN(auto state, ck->load_tensors(name));
      if (Status st = o.load_state(state); !st) return st.error().with_context(ck->file(name));
      if (o.shard().sharded) {
        at::Tensor full = o.full_master();
        RETURN_IF_ERROR(I.group->all_gather_into(o.owned_master(), full));
        o.publish();
      }
      return Status::ok();
    };
    {
      at::NoGradGuard no_grad;
      RETURN_IF_ERROR(restore(*I.actor_opt, ""));
      if (I.critic_opt) RETURN_IF_ERROR(restore(*I.critic_opt, "critic"));
    }
    const nlohmann::json& ts = ck->trainer_state;
    I.steps = ts.value("step", std::uint64_t(0));
    I.version = ts.value("policy_version", std::uint64_t(0));
    if (ts.contains("rng")) RETURN_IF_ERROR(restore_rng_state(ts["rng"]));
    return std::optional<nlohmann::json>(ts);
  } catch (const std::exception& e) {
    return torch_error("learner: restoring a checkpoint", e);
  }
}

}  // namespace cuda_agent
