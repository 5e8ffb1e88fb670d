// Sum over the middle axis of x viewed as [outer, R, inner] (the task: [128, 4096, 4095], R =
// 4096): one thread per (outer, inner) column, neighbouring threads on neighbouring columns, so
// every load of the R-long walk is coalesced; four independent accumulators keep several loads
// in flight per thread.
#include <cuda_runtime.h>

__global__ void sum_middle_axis(const float* __restrict__ x, float* __restrict__ out, long long R,
                                long long inner) {
  const long long col = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (col >= inner) return;
  const float* p = x + (long long)blockIdx.y * R * inner + col;
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
  long long r = 0;
  for (; r + 4 <= R; r += 4) {
    a0 += __ldcs(p + (r + 0) * inner);
    a1 += __ldcs(p + (r + 1) * inner);
    a2 += __ldcs(p + (r + 2) * inner);
    a3 += __ldcs(p + (r + 3) * inner);
  }
  for (; r < R; ++r) a0 += p[r * inner];
  out[(long long)blockIdx.y * inner + col] = (a0 + a1) + (a2 + a3);
}

// x: float32 [outer, R, inner] contiguous; out: float32 [outer, inner].
extern "C" void sum_middle_axis_forward(const float* x, float* out, int outer, long long R,
                                        long long inner, cudaStream_t stream) {
  const int threads = 256;
  dim3 grid((unsigned)((inner + threads - 1) / threads), (unsigned)outer);
  sum_middle_axis<<<grid, threads, 0, stream>>>(x, out, R, inner);
}
