#include <cuda_runtime.h>

// p [rows, cols], t [cols] (broadcast over rows, as torch broadcasts a (N,) against (M, N)).
__global__ void hinge_sum(const float* __restrict__ p, const float* __restrict__ t, double* __restrict__ acc, long long rows, int cols) {
  __shared__ double sh[256];
  double s = 0.0;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    float row = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) row += fmaxf(1.f - p[r * cols + c] * t[c], 0.f);
    s += row;
  }
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, sh[0]);
}

__global__ void finish(const double* acc, float* out, double n) { *out = (float)(*acc / n); }

extern "C" int hinge_loss(const float* p, const float* t, double* acc, float* out, long long rows, int cols, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(double), stream);
  if (e != cudaSuccess) return (int)e;
  hinge_sum<<<2048, 256, 0, stream>>>(p, t, acc, rows, cols);
  finish<<<1, 1, 0, stream>>>(acc, out, (double)rows * cols);
  return 0;
}
