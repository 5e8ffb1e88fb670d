#include "learner/gae.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace cuda_agent {
namespace {

// A broken precondition is a bug in the caller (as Expected's wrong-side access): say where, stop.
void require_same_length(std::size_t a, std::size_t b, const char* what) {
  if (a == b) return;
  std::fprintf(stderr, "cuda_agent: %s: lengths differ (%zu vs %zu)\n", what, a, b);
  std::abort();
}

}  // namespace

GaeResult compute_gae(const std::vector<std::uint8_t>& loss_mask, const std::vector<float>& values,
                      const std::vector<float>& rewards, double gamma, double lambda) {
  require_same_length(loss_mask.size(), values.size(), "compute_gae: loss_mask and values");
  require_same_length(loss_mask.size(), rewards.size(), "compute_gae: loss_mask and rewards");
  const std::size_t n = loss_mask.size();
  GaeResult out;
  out.advantages.assign(n, 0.0f);
  out.returns.assign(n, 0.0f);
  // Backwards over model tokens; next_value is V at the next model token (0 past the last).
  double next_value = 0;
  double next_advantage = 0;
  const double decay = gamma * lambda;
  for (std::size_t t = n; t-- > 0;) {
    if (loss_mask[t] == 0) continue;
    const double v = values[t];
    const double delta = static_cast<double>(rewards[t]) + gamma * next_value - v;
    const double a = delta + decay * next_advantage;
    out.advantages[t] = static_cast<float>(a);
    out.returns[t] = static_cast<float>(a + v);
    next_value = v;
    next_advantage = a;
  }
  return out;
}

void MomentSums::add(const std::vector<float>& values, const std::vector<std::uint8_t>& mask) {
  require_same_length(values.size(), mask.size(), "MomentSums::add: values and mask");
  for (std::size_t t = 0; t < values.size(); ++t) {
    if (mask[t] == 0) continue;
    const double x = values[t];
    sum += x;
    sum_sq += x * x;
    count += 1;
  }
}

void MomentSums::merge(const MomentSums& other) {
  sum += other.sum;
  sum_sq += other.sum_sq;
  count += other.count;
}

double MomentSums::mean() const { return count > 0 ? sum / count : 0.0; }

double MomentSums::stddev() const {
  if (count <= 0) return 0.0;
  const double m = mean();
  const double var = sum_sq / count - m * m;
  return var > 0 ? std::sqrt(var) : 0.0;
}

void whiten(std::vector<float>& adv, const std::vector<std::uint8_t>& mask, double mean, double std,
            double eps) {
  require_same_length(adv.size(), mask.size(), "whiten: adv and mask");
  const double scale = 1.0 / (std + eps);
  for (std::size_t t = 0; t < adv.size(); ++t) {
    adv[t] = mask[t] == 0 ? 0.0f : static_cast<float>((adv[t] - mean) * scale);
  }
}

std::size_t GroupAdvantages::alone_count() const {
  std::size_t n = 0;
  for (bool a : alone) n += a ? 1 : 0;
  return n;
}

GroupAdvantages leave_one_out_advantages(const std::vector<std::string>& groups,
                                         const std::vector<double>& rewards) {
  require_same_length(groups.size(), rewards.size(),
                      "leave_one_out_advantages: groups and rewards");
  struct Sums {
    double sum = 0;
    std::size_t count = 0;
  };
  std::map<std::string, Sums> by_group;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    Sums& g = by_group[groups[i]];
    g.sum += rewards[i];
    g.count += 1;
  }
  GroupAdvantages out;
  out.advantages.resize(rewards.size(), 0.0);
  out.alone.resize(rewards.size(), false);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Sums& g = by_group[groups[i]];
    if (g.count < 2) {
      out.alone[i] = true;
      continue;
    }
    out.advantages[i] = rewards[i] - (g.sum - rewards[i]) / double(g.count - 1);
  }
  return out;
}

}  // namespace cuda_agent
