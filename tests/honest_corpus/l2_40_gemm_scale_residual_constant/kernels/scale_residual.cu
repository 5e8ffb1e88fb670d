#include <cuda_runtime.h>

constexpr int kMaxCols = 8192;
__constant__ float c_bias[kMaxCols];

__global__ void scale_residual_const(float* __restrict__ y, long long n, int cols, float factor) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = (y[i] + c_bias[i % cols]) * factor;
}

__global__ void scale_residual_global(float* __restrict__ y, const float* __restrict__ bias, long long n, int cols, float factor) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = (y[i] + bias[i % cols]) * factor;
}

// x * s + x == x * (1 + s): the clone in the reference is the same value.
extern "C" int scale_residual(float* y, const float* bias, long long rows, int cols, float scaling, cudaStream_t stream) {
  long long n = rows * cols;
  long long b = (n + 255) / 256;
  unsigned blocks = (unsigned)(b > 16384 ? 16384 : b);
  if (cols <= kMaxCols) {
    cudaError_t e = cudaMemcpyToSymbolAsync(c_bias, bias, cols * sizeof(float), 0, cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return (int)e;
    scale_residual_const<<<blocks, 256, 0, stream>>>(y, n, cols, 1.f + scaling);
  } else {
    scale_residual_global<<<blocks, 256, 0, stream>>>(y, bias, n, cols, 1.f + scaling);
  }
  return 0;
}
