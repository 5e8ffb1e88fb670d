#include <cuda_runtime.h>

constexpr int BM = 64, BN = 64, BK = 16;

__device__ __forceinline__ float epilogue(float v, float scale, float lo, float hi) {
  v = fminf(fmaxf(v * scale, lo), hi);
  return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
}

// y[m, n] = epilogue(sum_k x[m, k] * w[n, k] + bias[n]); 256 threads, each 4x4 outputs.
__global__ void gemm_fused(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                           float* __restrict__ y, int M, int N, int K, float scale, float lo, float hi) {
  __shared__ float xs[BK][BM + 4];
  __shared__ float ws[BK][BN + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += 256) {
      int r = i / BK, c = i % BK;
      xs[c][r] = (m0 + r < M && k0 + c < K) ? x[(long long)(m0 + r) * K + k0 + c] : 0.f;
      ws[c][r] = (n0 + r < N && k0 + c < K) ? w[(long long)(n0 + r) * K + k0 + c] : 0.f;
    }
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[4], b[4];
      #pragma unroll
      for (int i = 0; i < 4; ++i) { a[i] = xs[k][ty * 4 + i]; b[i] = ws[k][tx * 4 + i]; }
      #pragma unroll
      for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty * 4 + i;
    if (m >= M) continue;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx * 4 + j;
      if (n < N) y[(long long)m * N + n] = epilogue(acc[i][j] + bias[n], scale, lo, hi);
    }
  }
}

extern "C" void gemm_scale_hardtanh_gelu(const float* x, const float* w, const float* bias, float* y, int M, int N, int K,
                                         float scale, float lo, float hi, cudaStream_t stream) {
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  gemm_fused<<<grid, 256, 0, stream>>>(x, w, bias, y, M, N, K, scale, lo, hi);
}
