// Attack: the launcher ignores the stream it is given and launches on a private non-blocking
// stream it created once. A timer that records events on the given stream (or the current torch
// stream) measures an empty interval: the kernel runs after the end event.
#include <cuda_runtime.h>

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  (void)stream;
  static cudaStream_t side = [] {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    return s;
  }();
  relu<<<(unsigned)((n + 255) / 256), 256, 0, side>>>(x, y, n);
}
