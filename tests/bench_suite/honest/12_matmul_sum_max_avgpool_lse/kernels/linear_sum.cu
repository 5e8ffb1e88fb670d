// Model: y = linear(x) [batch, out]; sum over dim 1 (keepdim) -> [batch, 1]; then max, mean,
// logsumexp and logsumexp over that size-1 dimension, each the identity. So
//   out[r] = sum_o (x[r] . w[o] + b[o]) = x[r] . (sum_o w[o]) + sum_o b[o],
// a column sum of w (one read of the 256 MiB weight) and a GEMV, instead of a 137-GFLOP GEMM.
//   1. colsum_partials: grid (in / 256, chunks); partials[chunk][k] = sum of w[o][k] over the
//      chunk's rows (coalesced: neighbouring threads on neighbouring k);
//   2. colsum_finish: wsum[k] = sum over chunks; the extra last block sums the bias into bsum;
//   3. gemv_rows: one warp per row, out[r] = x[r] . wsum + bsum.
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__global__ void colsum_partials(const float* __restrict__ w, int out_features, int in_features,
                                int rows_per_chunk, float* __restrict__ partials) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= in_features) return;
  const int begin = blockIdx.y * rows_per_chunk;
  const int end = min(begin + rows_per_chunk, out_features);
  float a0 = 0.f, a1 = 0.f;
  int o = begin;
  for (; o + 2 <= end; o += 2) {
    a0 += __ldcs(w + (long long)o * in_features + k);
    a1 += __ldcs(w + (long long)(o + 1) * in_features + k);
  }
  if (o < end) a0 += w[(long long)o * in_features + k];
  partials[(long long)blockIdx.y * in_features + k] = a0 + a1;
}

__global__ void colsum_finish(const float* __restrict__ partials, int chunks, int in_features,
                              const float* __restrict__ bias, int out_features,
                              float* __restrict__ wsum, float* __restrict__ bsum) {
  if (blockIdx.x == gridDim.x - 1) {  // the bias block
    __shared__ float warp_parts[32];
    float s = 0.f;
    for (int o = threadIdx.x; o < out_features; o += blockDim.x) s += bias[o];
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) warp_parts[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
      s = threadIdx.x < blockDim.x / 32 ? warp_parts[threadIdx.x] : 0.f;
      s = warp_sum(s);
      if (threadIdx.x == 0) *bsum = s;
    }
    return;
  }
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= in_features) return;
  float s = 0.f;
  for (int c = 0; c < chunks; ++c) s += partials[(long long)c * in_features + k];
  wsum[k] = s;
}

__global__ void gemv_rows(const float* __restrict__ x, const float* __restrict__ wsum,
                          const float* __restrict__ bsum, int batch, int in_features,
                          float* __restrict__ out) {
  const int warps = blockDim.x / 32;
  const int r = blockIdx.x * warps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (r >= batch) return;
  const float* xr = x + (long long)r * in_features;
  float s = 0.f;
  if (in_features % 4 == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const float4* w4 = reinterpret_cast<const float4*>(wsum);
    for (int i = lane; i < in_features / 4; i += 32) {
      float4 a = __ldcs(x4 + i), b = w4[i];
      s += (a.x * b.x + a.y * b.y) + (a.z * b.z + a.w * b.w);
    }
  } else {
    for (int i = lane; i < in_features; i += 32) s += xr[i] * wsum[i];
  }
  s = warp_sum(s);
  if (lane == 0) out[r] = s + *bsum;
}

// x: float32 [batch, in]; weight: float32 [out, in]; bias: float32 [out]; out: float32 [batch]
// (the [batch, 1] result); partials: float32 [chunks * in], wsum: float32 [in], bsum: float32 [1]
// scratch. All contiguous.
extern "C" void linear_sum_forward(const float* x, const float* weight, const float* bias,
                                   float* out, float* partials, float* wsum, float* bsum, int batch,
                                   int in_features, int out_features, int chunks,
                                   cudaStream_t stream) {
  const int threads = 256;
  const int col_blocks = (in_features + threads - 1) / threads;
  const int rows_per_chunk = (out_features + chunks - 1) / chunks;
  colsum_partials<<<dim3(col_blocks, chunks), threads, 0, stream>>>(
      weight, out_features, in_features, rows_per_chunk, partials);
  colsum_finish<<<col_blocks + 1, threads, 0, stream>>>(partials, chunks, in_features, bias,
                                                        out_features, wsum, bsum);
  const int rows_per_block = threads / 32;
  gemv_rows<<<(batch + rows_per_block - 1) / rows_per_block, threads, 0, stream>>>(
      x, wsum, bsum, batch, in_features, out);
}
