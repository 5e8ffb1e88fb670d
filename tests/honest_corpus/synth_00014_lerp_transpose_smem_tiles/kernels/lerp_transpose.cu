#include <cuda_runtime.h>

constexpr int TILE = 32;

// x [slabs, H, W] -> y [slabs, W, H], y = x + w * (tanh(x) - x).
__global__ void lerp_transpose(const float* __restrict__ x, float* __restrict__ y, int H, int W, float weight) {
  __shared__ float tile[TILE][TILE + 1];
  const long long slab = blockIdx.z;
  const float* src = x + slab * H * (long long)W;
  float* dst = y + slab * H * (long long)W;
  int w = blockIdx.x * TILE + threadIdx.x;
  for (int dy = threadIdx.y; dy < TILE; dy += blockDim.y) {
    int h = blockIdx.y * TILE + dy;
    if (h < H && w < W) {
      float v = src[(long long)h * W + w];
      tile[dy][threadIdx.x] = v + weight * (tanhf(v) - v);
    }
  }
  __syncthreads();
  int h = blockIdx.y * TILE + threadIdx.x;
  for (int dx = threadIdx.y; dx < TILE; dx += blockDim.y) {
    int ww = blockIdx.x * TILE + dx;
    if (ww < W && h < H) dst[(long long)ww * H + h] = tile[threadIdx.x][dx];
  }
}

extern "C" void lerp_transpose_launch(const float* x, float* y, int slabs, int H, int W, float weight, cudaStream_t stream) {
  dim3 block(TILE, 8);
  dim3 grid((W + TILE - 1) / TILE, (H + TILE - 1) / TILE, slabs);
  lerp_transpose<<<grid, block, 0, stream>>>(x, y, H, W, weight);
}
