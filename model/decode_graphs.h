// CUDA graphs of the generation engine's decode step (model/generate.h). A decode step of a
// small model is a thousand small kernels whose launch cost, not their work, sets the step time;
// replaying them as one captured graph removes that cost.
//
//   DecodeGraphs graphs(cache.slots, cache.max_seq);
//   at::Tensor logits = graphs.decode(model, &cache, rows, tokens, starts);  // [rows, vocab]
//   if (!logits.defined()) { ... run the step eagerly ... }
//
// A graph is captured per bucket (rows R, keys K), lazily, the first time a step needs it, and
// replayed afterwards. It runs Transformer::decode_slots over cache slots 0 .. R-1 (row b is slot
// b, so the cache is read through views and no index copies are captured), attending to the first
// K positions of each slot. A step whose running slots all lie below R and whose positions all
// lie below K replays the smallest such bucket: R from 1, 2, 4, 8, then multiples of 8 up to 64,
// then of 32, at most the cache's slots; K a power of two from 256, at most max_seq. Slots below R
// that are not decoded this step are padding rows: token 0 at position max_seq - 1 of their own
// slot, a position no request ever reads (prompt + max_new_tokens <= max_seq, and the last
// sampled token is never fed back), so the K/V they write there are never seen.
//
// Static buffers: per graph the [2, R] int64 inputs (tokens, positions) on the device, written
// from pinned host memory before each replay, and the [R, vocab] logits it writes. Every graph
// shares one memory pool for its intermediates: a replay may overwrite another graph's logits,
// so the tensor decode returns is valid until the next decode call (the engine samples from it
// first).
//
// Numerics: the same arithmetic as the eager step (forward with last_only) except for the shapes:
// R and K may exceed the eager step's rows and keys (masked keys add exact zeros), so matmul and
// attention kernels may pick other tilings: fp32 logits agree to ~1e-6, bf16 ones to rounding.
//
// No graph applies (decode returns an undefined tensor; the caller runs eagerly): on a device
// other than CUDA, in builds against a libtorch without CUDA (decode_graphs_compiled() false), and
// for dynamic NTK RoPE once a row is past max_position_embeddings (its rotation is per step).
// Captured graphs hold the weights' addresses: clear() them when the weights change (decode also
// notices a different Transformer object and recaptures).
//
// Threading: one owner (the engine); not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/transformer.h"

namespace cuda_agent {

/// True in builds against a CUDA libtorch (CMake defines CA_TORCH_CUDA when torch_cuda exists).
bool decode_graphs_compiled();

class DecodeGraphs {
 public:
  DecodeGraphs(std::int64_t slots, std::int64_t max_seq);
  ~DecodeGraphs();
  DecodeGraphs(DecodeGraphs&&) noexcept;
  DecodeGraphs& operator=(DecodeGraphs&&) noexcept;

  /// One decode step: running slot rows[i] takes token tokens[i] at position starts[i] (rows in
  /// increasing order, distinct). Returns logits [rows.size(), vocab] in the model dtype, valid
  /// until the next call, or an undefined tensor when no graph applies (see above). Captures the
  /// bucket's graph first if needed (it then synchronises the device). Throws c10::Error as the
  /// eager forward does.
  at::Tensor decode(const Transformer& model, KvCache* cache, const std::vector<std::int64_t>& rows,
                    const std::vector<std::int64_t>& tokens,
                    const std::vector<std::int64_t>& starts);
  /// Drops every captured graph (after a weight swap).
  void clear();

  /// Graphs captured so far, and decode steps replayed from a graph.
  std::size_t captured() const;
  std::int64_t replays() const;

  /// The bucket of a step: rows for the highest running slot + 1, keys for the longest row.
  static std::int64_t bucket_rows(std::int64_t rows, std::int64_t slots);
  static std::int64_t bucket_keys(std::int64_t keys, std::int64_t max_seq);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda_agent
