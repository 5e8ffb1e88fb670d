#include <cuda_runtime.h>

__device__ float relu_op(float v) { return v > 0.f ? v : 0.f; }

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = relu_op(x[i]);
}

extern "C" void relu_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  long long blocks = (n + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  if (blocks < 1) blocks = 1;
  relu_kernel<<<(unsigned)blocks, 256, 0, stream>>>(x, y, n);
}
