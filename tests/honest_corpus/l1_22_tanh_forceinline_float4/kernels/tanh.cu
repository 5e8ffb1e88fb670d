#include <cuda_runtime.h>

__device__ __forceinline__ float4 tanh4(float4 v) {
  return make_float4(tanhf(v.x), tanhf(v.y), tanhf(v.z), tanhf(v.w));
}

__global__ void tanh_vec(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride)
    y[i] = tanh4(x[i]);
}

__global__ void tanh_tail(const float* __restrict__ x, float* __restrict__ y, long long from, long long n) {
  long long i = from + threadIdx.x;
  if (i < n) y[i] = tanhf(x[i]);
}

extern "C" void tanh_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  long long n4 = n / 4;
  if (n4 > 0) {
    long long blocks = (n4 + 255) / 256;
    tanh_vec<<<(unsigned)(blocks > 16384 ? 16384 : blocks), 256, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  if (n % 4) tanh_tail<<<1, 4, 0, stream>>>(x, y, n4 * 4, n);
}
