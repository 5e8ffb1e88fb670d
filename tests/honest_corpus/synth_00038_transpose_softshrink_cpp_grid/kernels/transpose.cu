#include <cuda_runtime.h>

dim3 tile_grid(int slabs, int H, int W);

__device__ float softshrink(float v, float l) { return v > l ? v - l : (v < -l ? v + l : 0.f); }

__global__ void transpose_softshrink(const float* __restrict__ x, float* __restrict__ y, int H, int W, float lambd) {
  __shared__ float tile[32][33];
  const long long off = (long long)blockIdx.z * H * W;
  const int w = blockIdx.x * 32 + threadIdx.x;
  for (int dy = threadIdx.y; dy < 32; dy += blockDim.y) {
    const int h = blockIdx.y * 32 + dy;
    if (h < H && w < W) tile[dy][threadIdx.x] = softshrink(x[off + (long long)h * W + w], lambd);
  }
  __syncthreads();
  const int h = blockIdx.y * 32 + threadIdx.x;
  for (int dx = threadIdx.y; dx < 32; dx += blockDim.y) {
    const int ww = blockIdx.x * 32 + dx;
    if (ww < W && h < H) y[off + (long long)ww * H + h] = tile[threadIdx.x][dx];
  }
}

extern "C" void transpose_softshrink_launch(const float* x, float* y, int slabs, int H, int W, float lambd, cudaStream_t stream) {
  transpose_softshrink<<<tile_grid(slabs, H, W), dim3(32, 8), 0, stream>>>(x, y, H, W, lambd);
}
