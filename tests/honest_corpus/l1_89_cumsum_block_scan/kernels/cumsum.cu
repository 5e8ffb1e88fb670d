#include <cuda_runtime.h>

// Inclusive scan over the block (blockDim.x == 1024): warp scans, then a scan of warp totals.
static __device__ float block_inclusive_scan(float v, float* warp_totals) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    float u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += u;
  }
  if (lane == 31) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = warp_totals[lane];
    for (int o = 1; o < 32; o <<= 1) {
      float u = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += u;
    }
    warp_totals[lane] = w;
  }
  __syncthreads();
  return warp > 0 ? v + warp_totals[warp - 1] : v;
}

__global__ void cumsum_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  __shared__ float warp_totals[32];
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  const long long chunk = (cols + blockDim.x - 1) / blockDim.x;
  const long long begin = threadIdx.x * chunk;
  const long long end = begin + chunk < cols ? begin + chunk : cols;
  float local = 0.f;
  for (long long j = begin; j < end; ++j) local += row[j];
  float running = block_inclusive_scan(local, warp_totals) - local;  // exclusive prefix
  for (long long j = begin; j < end; ++j) {
    running += row[j];
    out[j] = running;
  }
}

extern "C" void cumsum_launch(const float* x, float* y, int rows, long long cols, cudaStream_t stream) {
  cumsum_rows<<<rows, 1024, 0, stream>>>(x, y, cols);
}
