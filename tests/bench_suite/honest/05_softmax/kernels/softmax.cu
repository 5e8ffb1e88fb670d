// Row softmax of x [rows, cols] (dim = 1) with an online max/sum: pass 1 reads the row once and
// keeps a running maximum and a sum of exponentials rescaled whenever the maximum grows; pass 2
// reads it again and writes exp(x - max) / sum. 2 reads + 1 write per element, where the classic
// three-pass form (max, sum, write) needs 3 reads + 1 write. One 1024-thread block per row.
#include <cuda_runtime.h>
#include <math_constants.h>

struct MaxSum {
  float m;  // running maximum (-inf before any element)
  float s;  // sum of exp(x - m)
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  if (a.m == -CUDART_INF_F) return b;
  if (b.m == -CUDART_INF_F) return a;
  float m = fmaxf(a.m, b.m);
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

// The block's combined (max, sum), broadcast to every thread.
static __device__ MaxSum block_reduce(MaxSum v) {
  __shared__ MaxSum warp_parts[32];
  __shared__ MaxSum total;
  for (int off = 16; off > 0; off >>= 1) {
    MaxSum o{__shfl_xor_sync(0xffffffffu, v.m, off), __shfl_xor_sync(0xffffffffu, v.s, off)};
    v = combine(v, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_parts[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    v = lane < warps ? warp_parts[lane] : MaxSum{-CUDART_INF_F, 0.f};
    for (int off = 16; off > 0; off >>= 1) {
      MaxSum o{__shfl_xor_sync(0xffffffffu, v.m, off), __shfl_xor_sync(0xffffffffu, v.s, off)};
      v = combine(v, o);
    }
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

__device__ __forceinline__ MaxSum add4(MaxSum a, float4 v) {
  float m = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
  m = fmaxf(m, a.m);
  float s = a.m == -CUDART_INF_F ? 0.f : a.s * __expf(a.m - m);
  s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
  return {m, s};
}

// cols % 4 == 0: 16-byte loads and stores.
__global__ void __launch_bounds__(1024)
    softmax_rows_vec4(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  const long long n4 = cols / 4;
  const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * cols);
  float4* out = reinterpret_cast<float4*>(y + blockIdx.x * cols);
  MaxSum acc{-CUDART_INF_F, 0.f};
  for (long long i = threadIdx.x; i < n4; i += blockDim.x) acc = add4(acc, row[i]);
  const MaxSum t = block_reduce(acc);
  const float inv = 1.f / t.s;
  for (long long i = threadIdx.x; i < n4; i += blockDim.x) {
    float4 v = __ldcs(row + i);
    v.x = __expf(v.x - t.m) * inv;
    v.y = __expf(v.y - t.m) * inv;
    v.z = __expf(v.z - t.m) * inv;
    v.w = __expf(v.w - t.m) * inv;
    __stcs(out + i, v);
  }
}

// Any cols: one element at a time.
__global__ void __launch_bounds__(1024)
    softmax_rows_any(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  MaxSum acc{-CUDART_INF_F, 0.f};
  for (long long i = threadIdx.x; i < cols; i += blockDim.x)
    acc = combine(acc, MaxSum{row[i], 1.f});
  const MaxSum t = block_reduce(acc);
  const float inv = 1.f / t.s;
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) out[i] = __expf(row[i] - t.m) * inv;
}

// x, y: float32 [rows, cols], contiguous; softmax along cols.
extern "C" void softmax_forward(const float* x, float* y, int rows, long long cols,
                                cudaStream_t stream) {
  if (cols % 4 == 0)
    softmax_rows_vec4<<<rows, 1024, 0, stream>>>(x, y, cols);
  else
    softmax_rows_any<<<rows, 1024, 0, stream>>>(x, y, cols);
}
