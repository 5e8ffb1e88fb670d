#include <cuda_runtime.h>

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// blockDim.x is a multiple of 32 and at most 1024.
__device__ float block_max(float v, float* parts) {
  v = warp_max(v);
  if ((threadIdx.x & 31) == 0) parts[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = threadIdx.x < (blockDim.x >> 5) ? parts[threadIdx.x] : -INFINITY;
  if (threadIdx.x < 32) r = warp_max(r);
  if (threadIdx.x == 0) parts[0] = r;
  __syncthreads();
  r = parts[0];
  __syncthreads();
  return r;
}
__device__ float block_sum(float v, float* parts) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) parts[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = threadIdx.x < (blockDim.x >> 5) ? parts[threadIdx.x] : 0.f;
  if (threadIdx.x < 32) r = warp_sum(r);
  if (threadIdx.x == 0) parts[0] = r;
  __syncthreads();
  r = parts[0];
  __syncthreads();
  return r;
}

__global__ void log_softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  __shared__ float parts[32];
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_max(m, parts);
  float s = 0.f;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
  s = block_sum(s, parts);
  const float lse = m + logf(s);
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) out[j] = row[j] - lse;
}

extern "C" void log_softmax_launch(const float* x, float* y, int rows, long long cols,
                                   cudaStream_t stream) {
  log_softmax_rows<<<rows, 512, 0, stream>>>(x, y, cols);
}
