#include <cuda_runtime.h>

__device__ double warp_sum_d(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Block sum of v, valid in thread 0 (blockDim.x a multiple of 32).
__device__ double block_sum_d(double v) {
  __shared__ double parts[32];
  v = warp_sum_d(v);
  if ((threadIdx.x & 31) == 0) parts[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? parts[threadIdx.x] : 0.0;
  if (threadIdx.x < 32) v = warp_sum_d(v);
  return v;
}

__global__ void sq_diff_partials(const float* __restrict__ p, const float* __restrict__ t, double* __restrict__ partial, long long n) {
  float acc = 0.f;
  double total = 0.0;
  long long stride = (long long)gridDim.x * blockDim.x;
  int k = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    float d = p[i] - t[i];
    acc += d * d;
    if (++k == 64) { total += acc; acc = 0.f; k = 0; }
  }
  total = block_sum_d(total + acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void finish_mean(const double* __restrict__ partial, int parts, float* __restrict__ out, double n) {
  double v = 0.0;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) v += partial[i];
  v = block_sum_d(v);
  if (threadIdx.x == 0) *out = (float)(v / n);
}

extern "C" void mse_loss(const float* p, const float* t, double* partial, float* out, long long n, cudaStream_t stream) {
  sq_diff_partials<<<1024, 512, 0, stream>>>(p, t, partial, n);
  finish_mean<<<1, 1024, 0, stream>>>(partial, 1024, out, (double)n);
}
