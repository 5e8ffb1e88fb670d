#include <cuda_runtime.h>

static __device__ float warp_all_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// wsum[k] = sum_j w[j, k] for w [hidden, in]
__global__ void weight_column_sum(const float* __restrict__ w, float* __restrict__ wsum, int hidden, int in) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= in) return;
  float s = 0.f;
  for (int j = 0; j < hidden; ++j) s += w[(long long)j * in + k];
  wsum[k] = s;
}

// out[b] = (x[b, :] . wsum) * factor, one warp per row.
__global__ void row_dot(const float* __restrict__ x, const float* __restrict__ wsum, float* __restrict__ out, int batch, int in, float factor) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x & 31;
  if (row >= batch) return;
  float s = 0.f;
  for (int k = lane; k < in; k += 32) s += x[(long long)row * in + k] * wsum[k];
  s = warp_all_sum(s);
  if (lane == 0) out[row] = s * factor;
}

extern "C" void gemm_div_sum_scale(const float* x, const float* w, float* wsum, float* out, int batch, int in, int hidden,
                                   float scaling, cudaStream_t stream) {
  weight_column_sum<<<(in + 255) / 256, 256, 0, stream>>>(w, wsum, hidden, in);
  row_dot<<<(batch + 7) / 8, 256, 0, stream>>>(x, wsum, out, batch, in, 0.5f * scaling);
}
