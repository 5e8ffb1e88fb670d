#include "learner/packing.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/escape.h"

namespace cuda_agent {
namespace {

// Indices of `sequences`, longest first, ties by lower index.
std::vector<std::size_t> longest_first(const std::vector<TrainSequence>& sequences) {
  std::vector<std::size_t> order(sequences.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sequences[a].ids.size() > sequences[b].ids.size();
  });
  return order;
}

}  // namespace

Expected<std::vector<MicroBatch>> pack_micro_batches(const std::vector<TrainSequence>& sequences,
                                                     std::int64_t micro_batch_tokens) {
  if (micro_batch_tokens < 1) {
    return make_error(
        ErrorCategory::kInvalidInput, "learner.bad_budget",
        "micro_batch_tokens is " + std::to_string(micro_batch_tokens) + "; it must be at least 1");
  }
  std::vector<MicroBatch> out;
  for (std::size_t index : longest_first(sequences)) {
    const TrainSequence& s = sequences[index];
    const std::int64_t len = s.size();
    if (len > micro_batch_tokens) {
      std::string name = "sequence " + std::to_string(index) + " (run '";
      append_escaped(name, s.run.value());
      name += "' episode '";
      append_escaped(name, s.episode.value());
      name += "')";
      return make_error(ErrorCategory::kInvalidInput, "learner.sequence_too_long",
                        name + " has " + std::to_string(len) + " tokens: 1 row x " +
                            std::to_string(len) + " = " + std::to_string(len) +
                            " padded tokens > micro_batch_tokens " +
                            std::to_string(micro_batch_tokens));
    }
    // Longest first: every open micro-batch's max_len is >= len, so adding a row costs max_len.
    auto fits = [&](const MicroBatch& mb) {
      return (static_cast<std::int64_t>(mb.rows.size()) + 1) * std::max(mb.max_len, len) <=
             micro_batch_tokens;
    };
    auto it = std::find_if(out.begin(), out.end(), fits);
    if (it == out.end()) it = out.insert(out.end(), MicroBatch{});
    it->rows.push_back(index);
    it->max_len = std::max(it->max_len, len);
  }
  return out;
}

std::vector<std::size_t> shard_for_rank(const std::vector<TrainSequence>& sequences, int rank,
                                        int world_size) {
  std::vector<std::size_t> mine;
  if (world_size < 1 || rank < 0 || rank >= world_size) return mine;
  std::vector<std::int64_t> load(static_cast<std::size_t>(world_size), 0);
  for (std::size_t index : longest_first(sequences)) {
    // min_element returns the first minimum: ties go to the lower rank.
    const auto least = std::min_element(load.begin(), load.end());
    *least += sequences[index].size();
    if (least - load.begin() == rank) mine.push_back(index);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace cuda_agent
