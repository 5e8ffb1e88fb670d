#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__device__ float smooth_l1(float d) {
  float a = fabsf(d);
  return a < 1.f ? 0.5f * d * d : a - 0.5f;
}

__global__ void huber_sum(const float* __restrict__ p, const float* __restrict__ t, double* __restrict__ acc, long long n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  __shared__ double warp_sums[32];
  double s = 0.0;
  float chunk = 0.f;
  int k = 0;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    chunk += smooth_l1(p[i] - t[i]);
    if (++k == 64) { s += chunk; chunk = 0.f; k = 0; }
  }
  s += chunk;
  s = cg::reduce(warp, s, cg::plus<double>());
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = s;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    double v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.0;
    v = cg::reduce(warp, v, cg::plus<double>());
    if (warp.thread_rank() == 0) atomicAdd(acc, v);
  }
}

__global__ void to_mean(const double* acc, float* out, double n) { *out = (float)(*acc / n); }

extern "C" int huber_loss(const float* p, const float* t, double* acc, float* out, long long n, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(double), stream);
  if (e != cudaSuccess) return (int)e;
  huber_sum<<<2048, 512, 0, stream>>>(p, t, acc, n);
  to_mean<<<1, 1, 0, stream>>>(acc, out, (double)n);
  return 0;
}
