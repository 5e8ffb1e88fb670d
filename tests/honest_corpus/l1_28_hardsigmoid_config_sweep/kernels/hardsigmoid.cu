#include <cuda_runtime.h>

__global__ void hardsigmoid_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = fminf(fmaxf(x[i] / 6.f + 0.5f, 0.f), 1.f);
}

int threads_for_config(int config) {
  static const int choices[4] = {128, 256, 512, 1024};
  return choices[(config < 0 ? 0 : config) % 4];
}

unsigned blocks_for(long long n, int threads) {
  long long b = (n + threads - 1) / threads;
  return (unsigned)(b > 65535 ? 65535 : (b < 1 ? 1 : b));
}

extern "C" void hardsigmoid_launch(const float* x, float* y, long long n, int config,
                                   cudaStream_t stream) {
  const int threads = threads_for_config(config);
  hardsigmoid_kernel<<<blocks_for(n, threads), threads, 0, stream>>>(x, y, n);
}
