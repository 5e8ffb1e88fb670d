#include <cuda_runtime.h>

__device__ float log_sigmoid(float v) { return fminf(v, 0.f) - log1pf(expf(-fabsf(v))); }

__global__ void cumsum_logsigmoid(const float* __restrict__ x, float* __restrict__ y, int batch, int steps, int cols) {
  long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= (long long)batch * cols) return;
  long long b = t / cols, c = t % cols;
  const float* p = x + b * steps * (long long)cols + c;
  float* q = y + b * steps * (long long)cols + c;
  float s = 0.f;
  for (int i = 0; i < steps; ++i) {
    s += p[(long long)i * cols];
    q[(long long)i * cols] = log_sigmoid(s);
  }
}

extern "C" void cumsum_logsigmoid_launch(const float* x, float* y, int batch, int steps, int cols, cudaStream_t stream) {
  long long n = (long long)batch * cols;
  cumsum_logsigmoid<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, batch, steps, cols);
}
