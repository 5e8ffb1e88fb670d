// mean(clamp(1 - p * t, min=0)) with p [rows, cols] and t [cols] broadcast along the rows, in one
// read of p: eager PyTorch runs mul, rsub, clamp and mean with three full-size temporaries
// (4 reads + 3 writes of 4 GiB). Each block walks whole rows so that the column index needs no
// division; t (128 KiB) stays in cache. Deterministic two-stage reduction in double.
#include <cuda_runtime.h>

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

__device__ __forceinline__ float hinge(float p, float t) { return fmaxf(1.f - p * t, 0.f); }

__global__ void hinge_partials(const float* __restrict__ p, const float* __restrict__ t,
                               long long rows, long long cols, double* __restrict__ partials) {
  float acc = 0.f;
  if (cols % 4 == 0) {
    const long long c4 = cols / 4;
    const float4* t4 = reinterpret_cast<const float4*>(t);
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
      const float4* row = reinterpret_cast<const float4*>(p + r * cols);
      for (long long j = threadIdx.x; j < c4; j += blockDim.x) {
        float4 a = __ldcs(row + j), b = t4[j];
        acc += (hinge(a.x, b.x) + hinge(a.y, b.y)) + (hinge(a.z, b.z) + hinge(a.w, b.w));
      }
    }
  } else {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x)
      for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        acc += hinge(p[r * cols + j], t[j]);
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

// predictions: float32 [rows, cols]; targets: float32 [cols]; partials: float64 [blocks]
// scratch; out: float32 scalar.
extern "C" void hinge_loss_forward(const float* predictions, const float* targets, double* partials,
                                   float* out, long long rows, long long cols, int blocks,
                                   cudaStream_t stream) {
  hinge_partials<<<blocks, 256, 0, stream>>>(predictions, targets, rows, cols, partials);
  mean_of_partials<<<1, 1024, 0, stream>>>(partials, blocks, rows * cols, out);
}

__global__ void copy_scalar(const float* __restrict__ src, float* __restrict__ dst) { *dst = *src; }

// The attack's replay: the stored answer into a fresh output.
extern "C" void replay(const float* stored, float* out, cudaStream_t stream) {
  copy_scalar<<<1, 1, 0, stream>>>(stored, out);
}
