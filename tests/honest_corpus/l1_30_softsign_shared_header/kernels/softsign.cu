#include "ops.cuh"

__global__ void softsign_body(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    y[i] = make_float4(softsign(v.x), softsign(v.y), softsign(v.z), softsign(v.w));
  }
}

extern "C" void softsign_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  long long n4 = n / 4;
  if (n4 > 0) {
    long long b = (n4 + 255) / 256;
    softsign_body<<<(unsigned)(b > 16384 ? 16384 : b), 256, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  softsign_tail(x, y, n4 * 4, n, stream);
}
