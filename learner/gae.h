// Generalized advantage estimation over the model tokens of one sequence, and advantage whitening
// over a global (all-rank) batch. DESIGN.md section 6, stage 3: gamma 1, lambda 0.95.
//
//   GaeResult g = compute_gae(seq.loss_mask, values, seq.token_rewards(), gamma, lambda);
//   MomentSums m;  m.add(g.advantages, seq.loss_mask);   // every local sequence
//   // allreduce {m.sum, m.sum_sq, m.count} (sum) across ranks, then on every rank:
//   whiten(g.advantages, seq.loss_mask, m.mean(), m.stddev());
//
// Only model tokens (mask 1) are steps of the recursion: tool output between two model turns is
// the environment's move, not the policy's, so the recursion is carried across it (gamma is
// applied once per model token, not per tool token). Pure functions: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuda_agent {

/// Per token ([T]); 0 where the mask is 0.
struct GaeResult {
  std::vector<float> advantages;  ///< A: the actor's PPO advantages
  std::vector<float> returns;     ///< A + V: the critic's regression targets
};

/// GAE over the mask-1 positions k_0 < k_1 < ... < k_{n-1} of `loss_mask`:
///   delta_i = r[k_i] + gamma * V[k_{i+1}] - V[k_i]   (V[k_n] = 0: the episode ends)
///   A_i     = delta_i + gamma * lambda * A_{i+1}     (A_n = 0)
///   returns = A + V
/// values[t] is the critic's estimate for the state before token t is emitted; values and rewards
/// are read only where the mask is 1 (a reward at a mask-0 position is ignored: put the final
/// reward on the last model token, as TrainSequence::token_rewards does). Accumulates in double.
/// Precondition: the three vectors have the same length and mask bytes are 0 or 1; a length
/// mismatch is a programming error and aborts (the trainer builds all three from one sequence).
GaeResult compute_gae(const std::vector<std::uint8_t>& loss_mask, const std::vector<float>& values,
                      const std::vector<float>& rewards, double gamma, double lambda);

/// First and second moments of mask-1 advantages, summed; combinable across ranks by adding the
/// three fields (the trainer allreduces them), so every rank whitens with the global batch's
/// statistics. count is a double so all three reduce as one float64 tensor.
struct MomentSums {
  double sum = 0, sum_sq = 0;
  double count = 0;

  /// Adds values[t] for every t with mask[t] == 1. Precondition: same length (else aborts).
  void add(const std::vector<float>& values, const std::vector<std::uint8_t>& mask);
  /// Adds another rank's (or sequence's) sums.
  void merge(const MomentSums& other);
  /// sum / count; 0 when count is 0.
  double mean() const;
  /// Population standard deviation sqrt(sum_sq / count - mean^2), clamped at 0 against rounding;
  /// 0 when count is 0.
  double stddev() const;
};

/// adv[t] = (adv[t] - mean) / (std + eps) where mask[t] == 1; adv[t] = 0 where mask[t] == 0.
/// Precondition: same length (else aborts).
void whiten(std::vector<float>& adv, const std::vector<std::uint8_t>& mask, double mean, double std,
            double eps = 1e-8);

/// Group-relative (leave-one-out) advantages of whole episodes: episode i of group g gets
///   A_i = r_i - mean(r_j : j in g, j != i)
/// and an episode alone in its group gets 0 (alone[i] = true). `groups[i]` names episode i's
/// group (its task). Precondition: same length (else aborts).
struct GroupAdvantages {
  std::vector<double> advantages;
  std::vector<bool> alone;
  std::size_t alone_count() const;
};
GroupAdvantages leave_one_out_advantages(const std::vector<std::string>& groups,
                                         const std::vector<double>& rewards);

}  // namespace cuda_agent
