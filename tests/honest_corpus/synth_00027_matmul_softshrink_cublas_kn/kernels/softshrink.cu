#include <cuda_runtime.h>

int sgemm_rowmajor(const float* x, const float* w, float* y, long long m, int k, int n, cudaStream_t stream);

__device__ float softshrink(float v, float l) { return v > l ? v - l : (v < -l ? v + l : 0.f); }

__global__ void bias_softshrink(float* __restrict__ y, const float* __restrict__ bias, long long total, int cols, float l) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += stride) y[i] = softshrink(y[i] + bias[i % cols], l);
}

extern "C" int matmul_bias_softshrink(const float* x, const float* w, const float* bias, float* y, long long m, int k, int n,
                                      float lambd, cudaStream_t stream) {
  int status = sgemm_rowmajor(x, w, y, m, k, n, stream);
  if (status != 0) return status;
  long long total = m * n;
  long long b = (total + 255) / 256;
  bias_softshrink<<<(unsigned)(b > 16384 ? 16384 : b), 256, 0, stream>>>(y, bias, total, n, lambd);
  return 0;
}
