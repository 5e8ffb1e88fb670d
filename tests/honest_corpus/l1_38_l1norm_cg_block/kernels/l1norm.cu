#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void l1_normalise(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  __shared__ float sums[32];
  __shared__ float scale;
  const float* row = x + blockIdx.x * cols;
  float s = 0.f;
  for (long long j = block.thread_rank(); j < cols; j += block.size()) s += fabsf(row[j]);
  s = cg::reduce(warp, s, cg::plus<float>());
  if (warp.thread_rank() == 0) sums[warp.meta_group_rank()] = s;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    float v = warp.thread_rank() < warp.meta_group_size() ? sums[warp.thread_rank()] : 0.f;
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) scale = (float)cols / v;
  }
  block.sync();
  float* out = y + blockIdx.x * cols;
  for (long long j = block.thread_rank(); j < cols; j += block.size()) out[j] = row[j] * scale;
}

extern "C" void l1_norm_launch(const float* x, float* y, int rows, long long cols, cudaStream_t stream) {
  l1_normalise<<<rows, 512, 0, stream>>>(x, y, cols);
}
