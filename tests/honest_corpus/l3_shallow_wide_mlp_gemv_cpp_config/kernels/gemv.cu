#include <cuda_runtime.h>

int gemv_warps_per_block(long long outputs);

__device__ float lane_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__global__ void gemv_warp(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                          float* __restrict__ y, int rows, int N, int K, int relu) {
  const long long out = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (out >= (long long)rows * N) return;
  const long long r = out / N, n = out % N;
  float s = 0.f;
  if ((K & 3) == 0) {
    const float4* xv = reinterpret_cast<const float4*>(x + r * K);
    const float4* wv = reinterpret_cast<const float4*>(w + n * K);
    for (int k = lane; k < K / 4; k += 32) {
      float4 a = xv[k], c = wv[k];
      s += a.x * c.x + a.y * c.y + a.z * c.z + a.w * c.w;
    }
  } else {
    for (int k = lane; k < K; k += 32) s += x[r * K + k] * w[n * K + k];
  }
  s = lane_sum(s);
  if (lane == 0) {
    float v = s + b[n];
    y[out] = relu ? fmaxf(v, 0.f) : v;
  }
}

extern "C" void wide_linear(const float* x, const float* w, const float* b, float* y, int rows, int N, int K, int relu,
                            cudaStream_t stream) {
  const long long outs = (long long)rows * N;
  const int warps = gemv_warps_per_block(outs);
  gemv_warp<<<(unsigned)((outs + warps - 1) / warps), warps * 32, 0, stream>>>(x, w, b, y, rows, N, K, relu);
}
