// minGPT's tanh GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), fused into one pass.
// Eager PyTorch runs it as seven elementwise kernels (pow, mul, add, mul, tanh, add, mul) with a
// full-size temporary each; this reads x once and writes y once.
#include <cuda_runtime.h>

__device__ __forceinline__ float new_gelu(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  float inner = k * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.f + tanhf(inner));
}

__global__ void new_gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 v = __ldcs(x + i);
  v.x = new_gelu(v.x);
  v.y = new_gelu(v.y);
  v.z = new_gelu(v.z);
  v.w = new_gelu(v.w);
  __stcs(y + i, v);
}

__global__ void new_gelu_tail(const float* __restrict__ x, float* __restrict__ y, long long begin,
                              long long n) {
  long long i = begin + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = new_gelu(x[i]);
}

// x, y: float32 [n], contiguous.
extern "C" void new_gelu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  const int threads = 256;
  long long n4 = n / 4;
  if (n4 > 0)
    new_gelu_vec4<<<(unsigned)((n4 + threads - 1) / threads), threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  if (n4 * 4 < n) new_gelu_tail<<<1, threads, 0, stream>>>(x, y, n4 * 4, n);
}
