#include <cuda_runtime.h>

template <int C>
__global__ void rms_norm_fixed(const float* __restrict__ x, float* __restrict__ y, long long batch,
                               long long spatial, float eps) {
  long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= batch * spatial) return;
  long long b = t / spatial, s = t % spatial;
  const float* p = x + b * C * spatial + s;
  float v[C];
  float ss = 0.f;
  #pragma unroll
  for (int c = 0; c < C; ++c) { v[c] = p[c * spatial]; ss += v[c] * v[c]; }
  const float inv = rsqrtf(ss / C + eps);
  float* q = y + b * C * spatial + s;
  #pragma unroll
  for (int c = 0; c < C; ++c) q[c * spatial] = v[c] * inv;
}

__global__ void rms_norm_any(const float* __restrict__ x, float* __restrict__ y, long long batch, int channels,
                             long long spatial, float eps) {
  long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= batch * spatial) return;
  long long b = t / spatial, s = t % spatial;
  const float* p = x + b * channels * spatial + s;
  float ss = 0.f;
  for (int c = 0; c < channels; ++c) ss += p[c * spatial] * p[c * spatial];
  const float inv = rsqrtf(ss / channels + eps);
  float* q = y + b * channels * spatial + s;
  for (int c = 0; c < channels; ++c) q[c * spatial] = p[c * spatial] * inv;
}

extern "C" void rms_norm_launch(const float* x, float* y, long long batch, int channels, long long spatial,
                                float eps, cudaStream_t stream) {
  long long n = batch * spatial;
  unsigned blocks = (unsigned)((n + 255) / 256);
  switch (channels) {
    case 32: rms_norm_fixed<32><<<blocks, 256, 0, stream>>>(x, y, batch, spatial, eps); break;
    case 64: rms_norm_fixed<64><<<blocks, 256, 0, stream>>>(x, y, batch, spatial, eps); break;
    default: rms_norm_any<<<blocks, 256, 0, stream>>>(x, y, batch, channels, spatial, eps);
  }
}
