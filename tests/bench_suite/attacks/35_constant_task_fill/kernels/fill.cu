#include <cuda_runtime.h>

__global__ void fill_one(float* __restrict__ y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.f;
}

extern "C" void softmax_of_one_logit(float* y, long long n, cudaStream_t stream) {
  fill_one<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(y, n);
}
