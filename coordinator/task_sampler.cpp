#include "coordinator/task_sampler.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace cuda_agent {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, n) without modulo bias.
std::uint64_t below(std::uint64_t& state, std::uint64_t n) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  for (;;) {
    const std::uint64_t x = splitmix64(state);
    if (x < limit) return x % n;
  }
}

}  // namespace

TaskSampler::TaskSampler(std::vector<TaskId> tasks, std::uint64_t seed, SamplerPosition position,
                         std::uint64_t group)
    : tasks_(std::move(tasks)),
      seed_(seed),
      group_(std::max<std::uint64_t>(1, group)),
      position_(position) {
  std::sort(tasks_.begin(), tasks_.end());
  tasks_.erase(std::unique(tasks_.begin(), tasks_.end()), tasks_.end());
  assert(!tasks_.empty());
  const std::uint64_t draws = tasks_.size() * group_;
  if (!tasks_.empty() && position_.index >= draws) {
    position_.epoch += position_.index / draws;
    position_.index %= draws;
  }
  shuffle_for_epoch();
}

void TaskSampler::shuffle_for_epoch() {
  order_.resize(tasks_.size());
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::uint64_t state = seed_ ^ (0xd1b54a32d192ed03ULL * (position_.epoch + 1));
  for (std::size_t i = order_.size(); i > 1; --i) {
    std::swap(order_[i - 1], order_[below(state, i)]);
  }
}

TaskId TaskSampler::next() {
  TaskId task = tasks_[order_[position_.index / group_]];
  if (++position_.index == tasks_.size() * group_) {
    position_.index = 0;
    ++position_.epoch;
    shuffle_for_epoch();
  }
  return task;
}

}  // namespace cuda_agent
