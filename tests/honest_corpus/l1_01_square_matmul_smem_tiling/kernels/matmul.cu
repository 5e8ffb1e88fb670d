#include <cuda_runtime.h>

constexpr int TILE = 32;

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE + 1];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < n; t += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? A[(long long)row * n + t + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < n && col < n) ? B[(long long)(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) C[(long long)row * n + col] = acc;
}

extern "C" void square_matmul(const float* A, const float* B, float* C, int n, cudaStream_t stream) {
  dim3 block(TILE, TILE);
  dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
  matmul_tiled<<<grid, block, 0, stream>>>(A, B, C, n);
}
