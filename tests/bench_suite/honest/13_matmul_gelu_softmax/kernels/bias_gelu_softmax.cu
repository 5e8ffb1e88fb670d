// The GEMM's epilogue: bias add, exact (erf) GELU and a row softmax, in one kernel per row, in
// place on y. Eager PyTorch runs addmm's bias, gelu and softmax as separate passes. One
// 512-thread block per row; the row's GELU values wait in shared memory (32 KiB for the task's
// 8192 columns) between the max, the sum and the write, so y is read once and written once.
// Rows too long for shared memory take a three-pass path through global memory instead.
#include <cuda_runtime.h>
#include <math_constants.h>

__device__ __forceinline__ float gelu(float v) {
  return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
}

// Max or sum over the block, broadcast to every thread.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  for (int off = 16; off > 0; off >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    v = lane < warps ? scratch[lane] : (kMax ? -CUDART_INF_F : 0.f);
    for (int off = 16; off > 0; off >>= 1) {
      float o = __shfl_xor_sync(0xffffffffu, v, off);
      v = kMax ? fmaxf(v, o) : v + o;
    }
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  return scratch[32];
}

__global__ void bias_gelu_softmax_smem(float* __restrict__ y, const float* __restrict__ bias,
                                       int cols) {
  extern __shared__ float row_vals[];
  __shared__ float scratch[33];
  float* row = y + (long long)blockIdx.x * cols;
  float m = -CUDART_INF_F;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float g = gelu(row[c] + bias[c]);
    row_vals[c] = g;
    m = fmaxf(m, g);
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float e = __expf(row_vals[c] - m);
    row_vals[c] = e;
    s += e;
  }
  const float inv = 1.f / block_reduce<false>(s, scratch);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = row_vals[c] * inv;
}

__global__ void bias_gelu_softmax_global(float* __restrict__ y, const float* __restrict__ bias,
                                         int cols) {
  __shared__ float scratch[33];
  float* row = y + (long long)blockIdx.x * cols;
  float m = -CUDART_INF_F;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float g = gelu(row[c] + bias[c]);
    row[c] = g;
    m = fmaxf(m, g);
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
  const float inv = 1.f / block_reduce<false>(s, scratch);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = __expf(row[c] - m) * inv;
}

// y: float32 [rows, cols], the GEMM result without bias, overwritten with the softmax; bias:
// float32 [cols].
extern "C" void bias_gelu_softmax_inplace(float* y, const float* bias, int rows, int cols,
                                          cudaStream_t stream) {
  const int threads = 512;
  const size_t smem = (size_t)cols * sizeof(float);
  if (smem <= 48 * 1024)
    bias_gelu_softmax_smem<<<rows, threads, smem, stream>>>(y, bias, cols);
  else
    bias_gelu_softmax_global<<<rows, threads, 0, stream>>>(y, bias, cols);
}
