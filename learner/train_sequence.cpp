#include "learner/train_sequence.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "core/escape.h"

namespace cuda_agent {
namespace {

// "run 'r' episode 'e'": the episode a refusal names.
std::string episode_name(const Episode& e) {
  std::string out = "run '";
  append_escaped(out, e.run_id.value());
  out += "' episode '";
  append_escaped(out, e.episode_id.value());
  out += "'";
  return out;
}

Error bad(const Episode& e, const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "learner.bad_trajectory",
                    episode_name(e) + ": " + what);
}

Error bad_turn(const Episode& e, std::size_t turn, const std::string& what) {
  return bad(e, "turn " + std::to_string(turn) + ": " + what);
}

std::string number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return std::to_string(x);
}

}  // namespace

std::int64_t TrainSequence::model_tokens() const {
  return std::count(loss_mask.begin(), loss_mask.end(), std::uint8_t{1});
}

std::vector<float> TrainSequence::token_rewards() const {
  std::vector<float> out(ids.size(), 0.0f);
  if (last_model_token >= 0 && last_model_token < size()) {
    out[static_cast<std::size_t>(last_model_token)] = static_cast<float>(reward);
  }
  return out;
}

Expected<TrainSequence> to_train_sequence(const Episode& episode, const SequenceLimits& limits) {
  if (episode.turns.empty()) return bad(episode, "no turns");

  // Length first, before anything is allocated for it.
  std::size_t total = 0;
  for (std::size_t i = 0; i < episode.turns.size(); ++i) {
    total += episode.turns[i].token_ids.size();
    if (limits.max_tokens > 0 && total > static_cast<std::size_t>(limits.max_tokens)) {
      std::size_t all = total;
      for (std::size_t j = i + 1; j < episode.turns.size(); ++j) {
        all += episode.turns[j].token_ids.size();
      }
      return bad_turn(episode, i,
                      "the sequence reaches " + std::to_string(total) + " tokens here (" +
                          std::to_string(all) + " in all), more than max_tokens " +
                          std::to_string(limits.max_tokens));
    }
  }

  TrainSequence seq;
  seq.run = episode.run_id;
  seq.episode = episode.episode_id;
  seq.task = episode.task_id;
  seq.stage = episode.stage;
  seq.reward = episode.final_reward;
  seq.ids.reserve(total);
  seq.loss_mask.reserve(total);
  seq.behaviour_logprobs.reserve(total);
  seq.policy_versions.reserve(total);

  bool any_model = false;
  for (std::size_t i = 0; i < episode.turns.size(); ++i) {
    const Turn& turn = episode.turns[i];
    const std::size_t n = turn.token_ids.size();
    if (turn.loss_mask.size() != n) {
      return bad_turn(episode, i,
                      "loss mask has " + std::to_string(turn.loss_mask.size()) + " entries for " +
                          std::to_string(n) + " tokens");
    }
    if (!turn.logprobs.empty() && turn.logprobs.size() != n) {
      return bad_turn(episode, i,
                      std::to_string(turn.logprobs.size()) + " logprobs for " + std::to_string(n) +
                          " tokens (must be one per token or none)");
    }
    const std::uint64_t version = turn.policy_version.value();
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint8_t mask = turn.loss_mask[k];
      // Built only for a refusal: this loop runs once per token.
      const auto where = [&] {
        return "token " + std::to_string(k) + " (sequence position " +
               std::to_string(seq.ids.size()) + ")";
      };
      if (mask > 1) {
        return bad_turn(episode, i,
                        where() + ": loss mask byte " + std::to_string(mask) + " (must be 0 or 1)");
      }
      const std::uint32_t id = turn.token_ids[k];
      if (limits.vocab_size > 0 && static_cast<std::int64_t>(id) >= limits.vocab_size) {
        return bad_turn(episode, i,
                        where() + ": token id " + std::to_string(id) + " >= vocab_size " +
                            std::to_string(limits.vocab_size));
      }
      float logprob = 0.0f;
      if (mask == 1) {
        if (seq.ids.empty()) {
          return bad_turn(episode, i,
                          where() +
                              ": the sequence's first token has loss mask 1, but nothing "
                              "precedes it to predict it");
        }
        if (turn.logprobs.empty()) {
          return bad_turn(
              episode, i,
              "has model tokens (loss mask 1) but no logprobs (" + std::to_string(n) + " tokens)");
        }
        logprob = turn.logprobs[k];
        if (!std::isfinite(logprob)) {
          return bad_turn(episode, i, where() + ": logprob " + number(logprob) + " is not finite");
        }
        if (logprob > 0.0f) {
          return bad_turn(
              episode, i,
              where() + ": logprob " + number(logprob) + " > 0 (not a log-probability)");
        }
        if (!any_model) {
          seq.min_version = seq.max_version = version;
        } else {
          seq.min_version = std::min(seq.min_version, version);
          seq.max_version = std::max(seq.max_version, version);
        }
        any_model = true;
        seq.last_model_token = static_cast<std::int64_t>(seq.ids.size());
      }
      seq.ids.push_back(static_cast<std::int64_t>(id));
      seq.loss_mask.push_back(mask);
      seq.behaviour_logprobs.push_back(logprob);
      seq.policy_versions.push_back(version);
    }
  }
  if (!any_model) {
    return bad(episode, "no model token in turns 0.." + std::to_string(episode.turns.size() - 1) +
                            ": loss mask 0 on all " + std::to_string(seq.ids.size()) + " tokens");
  }
  return seq;
}

SequenceBatch to_train_sequences(const std::vector<Episode>& episodes,
                                 const SequenceLimits& limits) {
  SequenceBatch out;
  out.sequences.reserve(episodes.size());
  for (const Episode& e : episodes) {
    Expected<TrainSequence> seq = to_train_sequence(e, limits);
    if (seq) {
      out.sequences.push_back(std::move(seq).value());
    } else {
      out.refused.push_back(seq.error());
    }
  }
  return out;
}

}  // namespace cuda_agent
