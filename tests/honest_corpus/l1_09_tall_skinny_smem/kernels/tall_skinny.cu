#include <cuda_runtime.h>

template <int K>
__global__ void ts_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m, int n) {
  __shared__ float As[32][K + 1];
  __shared__ float Bs[K][32];
  const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int r = row0 + i;
    As[i][threadIdx.x] = r < m ? A[(long long)r * K + threadIdx.x] : 0.f;
  }
  for (int kk = threadIdx.y; kk < K; kk += blockDim.y) {
    const int c = col0 + threadIdx.x;
    Bs[kk][threadIdx.x] = c < n ? B[(long long)kk * n + c] : 0.f;
  }
  __syncthreads();
  const int c = col0 + threadIdx.x;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int r = row0 + i;
    float acc = 0.f;
    #pragma unroll
    for (int kk = 0; kk < K; ++kk) acc += As[i][kk] * Bs[kk][threadIdx.x];
    if (r < m && c < n) C[(long long)r * n + c] = acc;
  }
}

__global__ void generic_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m, int n, int k) {
  const int c = blockIdx.x * 32 + threadIdx.x;
  for (int r = blockIdx.y * 32 + threadIdx.y; r < min(m, (int)(blockIdx.y + 1) * 32); r += blockDim.y) {
    if (c >= n) continue;
    float acc = 0.f;
    for (int kk = 0; kk < k; ++kk) acc += A[(long long)r * k + kk] * B[(long long)kk * n + c];
    C[(long long)r * n + c] = acc;
  }
}

extern "C" void tall_skinny_matmul(const float* A, const float* B, float* C, int m, int n, int k, cudaStream_t stream) {
  dim3 block(32, 8);
  dim3 grid((n + 31) / 32, (m + 31) / 32);
  if (k == 32) ts_matmul<32><<<grid, block, 0, stream>>>(A, B, C, m, n);
  else generic_matmul<<<grid, block, 0, stream>>>(A, B, C, m, n, k);
}
