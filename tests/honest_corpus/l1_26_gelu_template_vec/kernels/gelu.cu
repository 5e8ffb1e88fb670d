#include <cuda_runtime.h>
#include <cstdint>

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

template <int VEC>
__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x * VEC;
  for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * VEC; i < n; i += stride) {
    if (VEC == 4 && i + 3 < n) {
      float4 v = *reinterpret_cast<const float4*>(x + i);
      *reinterpret_cast<float4*>(y + i) = make_float4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w));
    } else {
      for (int k = 0; k < VEC && i + k < n; ++k) y[i + k] = gelu(x[i + k]);
    }
  }
}

extern "C" void gelu_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y)) & 15) == 0;
  const int threads = 256;
  long long blocks = (n + threads * 4LL - 1) / (threads * 4LL);
  if (blocks > 16384) blocks = 16384;
  if (blocks < 1) blocks = 1;
  if (aligned) gelu_kernel<4><<<(unsigned)blocks, threads, 0, stream>>>(x, y, n);
  else gelu_kernel<1><<<(unsigned)blocks, threads, 0, stream>>>(x, y, n);
}
