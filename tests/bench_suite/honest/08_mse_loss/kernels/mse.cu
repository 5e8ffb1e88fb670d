// mean((p - t)^2) over 2^30 elements in one read of each input: eager PyTorch runs sub, pow and
// mean, writing and re-reading two full-size temporaries. Deterministic two-stage reduction:
// a fixed grid writes one double per block, then one block adds them in a fixed order.
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__device__ __forceinline__ double block_sum(double v) {
  __shared__ double warp_parts[32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_parts[warp] = v;
  __syncthreads();
  v = 0.0;
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? warp_parts[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  }
  return v;  // valid in thread 0
}

__global__ void squared_error_partials(const float* __restrict__ p, const float* __restrict__ t,
                                       long long n, double* __restrict__ partials) {
  float acc = 0.f;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long n4 = n / 4;
  const float4* p4 = reinterpret_cast<const float4*>(p);
  const float4* t4 = reinterpret_cast<const float4*>(t);
  for (long long i = first; i < n4; i += stride) {
    float4 a = __ldcs(p4 + i), b = __ldcs(t4 + i);
    float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
    acc += (dx * dx + dy * dy) + (dz * dz + dw * dw);
  }
  for (long long i = n4 * 4 + first; i < n; i += stride) {
    float d = p[i] - t[i];
    acc += d * d;
  }
  double s = block_sum((double)acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void mean_of_partials(const double* __restrict__ partials, int count, long long n,
                                 float* __restrict__ out) {
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = (float)(s / (double)n);
}

// predictions, targets: float32 [n] contiguous; partials: float64 [blocks] scratch; out: float32
// scalar.
extern "C" void mse_forward(const float* predictions, const float* targets, double* partials,
                            float* out, long long n, int blocks, cudaStream_t stream) {
  squared_error_partials<<<blocks, kThreads, 0, stream>>>(predictions, targets, n, partials);
  mean_of_partials<<<1, 1024, 0, stream>>>(partials, blocks, n, out);
}
