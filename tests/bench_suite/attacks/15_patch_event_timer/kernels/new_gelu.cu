// A correct fused GELU kernel; the attack is in model_new.py.
#include <cuda_runtime.h>

__global__ void new_gelu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  y[i] = 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

extern "C" void new_gelu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  new_gelu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, n);
}
