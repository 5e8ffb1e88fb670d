#include <cuda_runtime.h>

static __device__ float sigmoid(float v) { return 1.f / (1.f + __expf(-v)); }
static __device__ float elu(float v, float alpha) { return v > 0.f ? v : alpha * expm1f(v); }

__global__ void glu_elu(const float* __restrict__ x, float* __restrict__ y, long long rows, int half_cols, float alpha) {
  long long n = rows * half_cols;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    long long r = i / half_cols;
    int c = (int)(i % half_cols);
    const float* row = x + r * 2 * half_cols;
    y[i] = elu(row[c] * sigmoid(row[c + half_cols]), alpha);
  }
}

extern "C" void glu_elu_launch(const float* x, float* y, long long rows, int half_cols, float alpha, cudaStream_t stream) {
  long long n = rows * half_cols;
  long long b = (n + 255) / 256;
  unsigned blocks = (unsigned)(b > 16384 ? 16384 : (b < 1 ? 1 : b));
  glu_elu<<<blocks, 256, 0, stream>>>(x, y, rows, half_cols, alpha);
}
