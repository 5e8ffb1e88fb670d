#include <cuda_runtime.h>
#include "launch_config.h"

__global__ void sigmoid_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = 1.f / (1.f + __expf(-x[i]));
}

extern "C" void sigmoid_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  const int threads = 256;
  sigmoid_kernel<<<grid_blocks(n, threads), threads, 0, stream>>>(x, y, n);
}
