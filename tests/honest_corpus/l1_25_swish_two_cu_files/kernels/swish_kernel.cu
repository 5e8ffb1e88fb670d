#include <cuda_runtime.h>

__global__ void swish_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = x[i];
    y[i] = v / (1.f + __expf(-v));
  }
}

void run_swish(const float* x, float* y, long long n, cudaStream_t stream) {
  long long blocks = (n + 255) / 256;
  swish_kernel<<<(unsigned)(blocks > 8192 ? 8192 : (blocks < 1 ? 1 : blocks)), 256, 0, stream>>>(x, y, n);
}
