#include "model/decode_graphs.h"

#include <algorithm>
#include <map>
#include <utility>

#ifdef CA_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace cuda_agent {

bool decode_graphs_compiled() {
#ifdef CA_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

std::int64_t DecodeGraphs::bucket_rows(std::int64_t rows, std::int64_t slots) {
  std::int64_t r = 1;
  if (rows <= 8) {
    while (r < rows) r *= 2;
  } else if (rows <= 64) {
    r = (rows + 7) / 8 * 8;
  } else {
    r = (rows + 31) / 32 * 32;
  }
  return std::min(r, slots);
}

std::int64_t DecodeGraphs::bucket_keys(std::int64_t keys, std::int64_t max_seq) {
  std::int64_t k = 256;
  while (k < keys) k *= 2;
  return std::min(k, max_seq);
}

#ifdef CA_TORCH_CUDA

namespace {
struct Graph {
  at::cuda::CUDAGraph graph;
  at::Tensor inputs;  // [2, R] int64 on the device: tokens, positions (static)
  at::Tensor logits;  // [R, vocab] model dtype (static output)
};
}  // namespace

struct DecodeGraphs::Impl {
  std::int64_t slots = 0, max_seq = 0;
  const Transformer* model = nullptr;  // the weights the graphs were captured with
  decltype(at::cuda::graph_pool_handle()) pool = at::cuda::graph_pool_handle();
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<Graph>> graphs;  // (R, K)
  std::int64_t replays = 0;
};

at::Tensor DecodeGraphs::decode(const Transformer& model, KvCache* cache,
                                const std::vector<std::int64_t>& rows,
                                const std::vector<std::int64_t>& tokens,
                                const std::vector<std::int64_t>& starts) {
  Impl& s = *impl_;
  const ModelConfig& c = model.config();
  if (!model.device().is_cuda() || rows.empty() || !cache->rope_cos.defined()) return {};
  const std::int64_t longest = *std::max_element(starts.begin(), starts.end()) + 1;
  if (c.rope_scaling.type == RopeType::kDynamic && longest > c.max_position_embeddings) return {};
  if (s.model != &model) {
    clear();
    s.model = &model;
  }
  const std::int64_t R = bucket_rows(rows.back() + 1, s.slots);
  const std::int64_t K = bucket_keys(longest, s.max_seq);
  if (rows.back() >= R || longest > K) return {};  // cannot happen with in-range slots

  // Inputs: running rows at their slots, padding rows at max_seq - 1 (see the header).
  auto host = at::empty({2, R}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  std::int64_t* h = host.data_ptr<std::int64_t>();
  std::fill(h, h + R, 0);
  std::fill(h + R, h + 2 * R, s.max_seq - 1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    h[rows[i]] = tokens[i];
    h[R + rows[i]] = starts[i];
  }
  auto& slot = s.graphs[{R, K}];
  if (!slot) {
    auto g = std::make_unique<Graph>();
    g->inputs = at::empty({2, R}, at::TensorOptions().dtype(at::kLong).device(model.device()));
    g->inputs.copy_(host);
    auto run = [&] { return model.decode_slots(g->inputs[0], g->inputs[1], K, cache); };
    // Warm up on the capture stream (lazy cuBLAS and kernel setup must not happen in capture),
    // then capture. The warm-up already performs this step's cache writes; the replay below
    // repeats them with the same values.
    c10::cuda::device_synchronize();
    auto stream = c10::cuda::getStreamFromPool();
    {
      c10::cuda::CUDAStreamGuard guard(stream);
      (void)run();
      stream.synchronize();
      // Thread-local: other threads' CUDA calls (another engine's allocations) stay legal.
      g->graph.capture_begin(s.pool, cudaStreamCaptureModeThreadLocal);
      g->logits = run();
      g->graph.capture_end();
    }
    c10::cuda::device_synchronize();
    slot = std::move(g);
  } else {
    slot->inputs.copy_(host, /*non_blocking=*/true);
  }
  slot->graph.replay();
  ++s.replays;
  const auto B = std::int64_t(rows.size());
  if (rows.back() == B - 1) return slot->logits.narrow(0, 0, B);  // rows are slots 0 .. B-1
  return slot->logits.index_select(0, upload_longs(rows, model.device()));
}

void DecodeGraphs::clear() {
  impl_->graphs.clear();
  impl_->model = nullptr;
  impl_->pool = at::cuda::graph_pool_handle();  // the old pool goes with its graphs
}

std::size_t DecodeGraphs::captured() const { return impl_->graphs.size(); }
std::int64_t DecodeGraphs::replays() const { return impl_->replays; }

#else  // no CUDA libtorch: never a graph

struct DecodeGraphs::Impl {
  std::int64_t slots = 0, max_seq = 0;
};

at::Tensor DecodeGraphs::decode(const Transformer&, KvCache*, const std::vector<std::int64_t>&,
                                const std::vector<std::int64_t>&,
                                const std::vector<std::int64_t>&) {
  return {};
}

void DecodeGraphs::clear() {}
std::size_t DecodeGraphs::captured() const { return 0; }
std::int64_t DecodeGraphs::replays() const { return 0; }

#endif

DecodeGraphs::DecodeGraphs(std::int64_t slots, std::int64_t max_seq)
    : impl_(std::make_unique<Impl>()) {
  impl_->slots = slots;
  impl_->max_seq = max_seq;
}
DecodeGraphs::~DecodeGraphs() = default;
DecodeGraphs::DecodeGraphs(DecodeGraphs&&) noexcept = default;
DecodeGraphs& DecodeGraphs::operator=(DecodeGraphs&&) noexcept = default;

}  // namespace cuda_agent
