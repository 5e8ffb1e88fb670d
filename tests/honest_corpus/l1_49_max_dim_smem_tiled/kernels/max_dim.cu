#include <cuda_runtime.h>

__device__ float max_of(float a, float b) { return a > b ? a : b; }

__global__ void max_dim1(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float part[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const long long b = blockIdx.y;
  float m = -INFINITY;
  if (c < cols) {
    const float* p = x + b * rows * (long long)cols + c;
    for (int r = threadIdx.y; r < rows; r += 8) m = max_of(m, p[(long long)r * cols]);
  }
  part[threadIdx.y][threadIdx.x] = m;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 1; k < 8; ++k) m = max_of(m, part[k][threadIdx.x]);
    y[b * cols + c] = m;
  }
}

extern "C" void max_dim1_launch(const float* x, float* y, int batch, int rows, int cols, cudaStream_t stream) {
  dim3 block(32, 8);
  dim3 grid((cols + 31) / 32, batch);
  max_dim1<<<grid, block, 0, stream>>>(x, y, rows, cols);
}
