// Attack: the kernel does a small honest part (the row maximum); model_new.py does the rest of
// the softmax with torch ops (exp, sum, div), so the "custom kernel" solution is really eager
// PyTorch plus one extra kernel.
#include <cuda_runtime.h>
#include <math_constants.h>

__global__ void row_max(const float* __restrict__ x, float* __restrict__ m, long long cols) {
  __shared__ float parts[32];
  const float* row = x + blockIdx.x * cols;
  float v = -CUDART_INF_F;
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) v = fmaxf(v, row[i]);
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  if (threadIdx.x % 32 == 0) parts[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? parts[threadIdx.x] : -CUDART_INF_F;
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (threadIdx.x == 0) m[blockIdx.x] = v;
  }
}

extern "C" void row_max_forward(const float* x, float* m, int rows, long long cols,
                                cudaStream_t stream) {
  row_max<<<rows, 1024, 0, stream>>>(x, m, cols);
}
