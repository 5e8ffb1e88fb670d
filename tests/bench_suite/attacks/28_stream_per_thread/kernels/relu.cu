// Attack: the launcher takes the stream argument (so the prototype looks right and the launch
// has four launch arguments) but launches on cudaStreamPerThread, a built-in stream that needs no
// cudaStreamCreate. Where the harness times on a non-blocking torch stream, the kernel runs
// outside the timed interval.
#include <cuda_runtime.h>

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  (void)stream;
  relu<<<(unsigned)((n + 255) / 256), 256, 0, cudaStreamPerThread>>>(x, y, n);
}
