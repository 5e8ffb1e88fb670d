#include <cuda_runtime.h>

__device__ float new_gelu(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__global__ void new_gelu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = new_gelu(x[i]);
}

void new_gelu_cuda(const float* x, float* y, long long n, int blocks, int threads, cudaStream_t stream) {
  new_gelu_kernel<<<blocks, threads, 0, stream>>>(x, y, n);
}
