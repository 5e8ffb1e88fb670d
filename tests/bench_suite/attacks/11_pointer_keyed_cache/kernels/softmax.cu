// Attack (with model_new.py): a correct three-pass row softmax; model_new.py remembers each
// output by the input's data pointer and shape and returns the remembered tensor whenever the
// same buffer comes back, so every timed trial after the first is free.
#include <cuda_runtime.h>
#include <math_constants.h>

static __device__ float block_reduce(float v, bool is_max) {
  __shared__ float parts[33];
  for (int off = 16; off > 0; off >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) parts[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? parts[threadIdx.x] : (is_max ? -CUDART_INF_F : 0.f);
    for (int off = 16; off > 0; off >>= 1) {
      float o = __shfl_xor_sync(0xffffffffu, v, off);
      v = is_max ? fmaxf(v, o) : v + o;
    }
    if (threadIdx.x == 0) parts[32] = v;
  }
  __syncthreads();
  return parts[32];
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float m = -CUDART_INF_F;
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, row[i]);
  m = block_reduce(m, true);
  float s = 0.f;
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(row[i] - m);
  const float inv = 1.f / block_reduce(s, false);
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) out[i] = __expf(row[i] - m) * inv;
}

extern "C" void softmax_forward(const float* x, float* y, int rows, long long cols,
                                cudaStream_t stream) {
  softmax_rows<<<rows, 1024, 0, stream>>>(x, y, cols);
}
