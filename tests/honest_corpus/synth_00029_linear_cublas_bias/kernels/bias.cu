#include <cuda_runtime.h>

// One block per group of rows; the bias row (cols <= 4096) read once into shared memory.
__global__ void add_bias_rows(float* __restrict__ y, const float* __restrict__ bias, long long rows, int cols, int rows_per_block) {
  extern __shared__ float b[];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) b[c] = bias[c];
  __syncthreads();
  long long r0 = (long long)blockIdx.x * rows_per_block;
  for (int r = 0; r < rows_per_block && r0 + r < rows; ++r) {
    float* row = y + (r0 + r) * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] += b[c];
  }
}

__global__ void add_bias_flat(float* __restrict__ y, const float* __restrict__ bias, long long n, int cols) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) y[i] += bias[i % cols];
}

extern "C" void add_bias(float* y, const float* bias, long long rows, int cols, cudaStream_t stream) {
  if (cols <= 4096) {
    const int rpb = 16;
    add_bias_rows<<<(unsigned)((rows + rpb - 1) / rpb), 256, cols * sizeof(float), stream>>>(y, bias, rows, cols, rpb);
  } else {
    long long n = rows * cols;
    long long b = (n + 255) / 256;
    add_bias_flat<<<(unsigned)(b > 16384 ? 16384 : b), 256, 0, stream>>>(y, bias, n, cols);
  }
}
