#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// y[r, n] = act(x[r, :] . w[n, :] + b[n]) for every row r; one 32-thread tile per (r, n).
__global__ void gemv_layer(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                           float* __restrict__ y, int rows, int N, int K, int relu) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const long long out = (long long)blockIdx.x * (block.size() / 32) + tile.meta_group_rank();
  if (out >= (long long)rows * N) return;
  const long long r = out / N, n = out % N;
  float s = 0.f;
  for (int k = tile.thread_rank(); k < K; k += 32) s += x[r * K + k] * w[n * K + k];
  s = cg::reduce(tile, s, cg::plus<float>());
  if (tile.thread_rank() == 0) {
    float v = s + b[n];
    y[out] = relu ? fmaxf(v, 0.f) : v;
  }
}

extern "C" void gemv_linear(const float* x, const float* w, const float* b, float* y, int rows, int N, int K, int relu,
                            cudaStream_t stream) {
  long long outs = (long long)rows * N;
  gemv_layer<<<(unsigned)((outs + 7) / 8), 256, 0, stream>>>(x, w, b, y, rows, N, K, relu);
}
