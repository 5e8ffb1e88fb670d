#include <cuda_runtime.h>

void new_gelu_cuda(const float* x, float* y, long long n, int blocks, int threads, cudaStream_t stream);

namespace {
int blocks_for(long long n, int threads) {
  long long b = (n + threads - 1) / threads;
  return b > 16384 ? 16384 : (b < 1 ? 1 : (int)b);
}
}  // namespace

extern "C" void new_gelu_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  new_gelu_cuda(x, y, n, blocks_for(n, 256), 256, stream);
}
