#include <cuda_runtime.h>

static __device__ float tree_sum(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  return sh[0];
}

__global__ void row_norms(const float* __restrict__ x, float* __restrict__ norms, long long cols) {
  __shared__ float sh[512];
  const float* row = x + blockIdx.x * cols;
  float s = 0.f;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += row[j] * row[j];
  s = tree_sum(s, sh);
  if (threadIdx.x == 0) norms[blockIdx.x] = sqrtf(s);
}

__global__ void divide_rows(const float* __restrict__ x, const float* __restrict__ norms, float* __restrict__ y, long long n, long long cols) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] / norms[i / cols];
}

extern "C" void l2_norm_launch(const float* x, float* norms, float* y, int rows, long long cols, cudaStream_t stream) {
  row_norms<<<rows, 512, 0, stream>>>(x, norms, cols);
  long long n = rows * cols;
  long long b = (n + 255) / 256;
  divide_rows<<<(unsigned)(b > 16384 ? 16384 : b), 256, 0, stream>>>(x, norms, y, n, cols);
}
