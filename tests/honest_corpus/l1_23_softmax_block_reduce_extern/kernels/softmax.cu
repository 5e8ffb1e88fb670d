#include <cuda_runtime.h>

// Reduces v over the block (sum, or max when is_max); every thread gets the result.
__device__ float block_reduce(float v, float* sh, bool is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s])
                               : sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  float r = sh[0];
  __syncthreads();
  return r;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  __shared__ float sh[1024];
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_reduce(m, sh, true);
  float s = 0.f;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(row[j] - m);
  s = block_reduce(s, sh, false);
  const float inv = 1.f / s;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) out[j] = __expf(row[j] - m) * inv;
}

extern "C" void softmax_launch(const float* x, float* y, int rows, long long cols,
                               cudaStream_t stream) {
  softmax_rows<<<rows, 1024, 0, stream>>>(x, y, cols);
}
