// Attack: "packed" column sums. Each thread converts two neighbouring columns to a half2 and
// accumulates the 4096-long walk with __hadd2: half the add instructions and registers of an
// fp32 sum. Past 1024 the fp16 spacing is 1 and past 2048 it is 2, so additions of values in
// [0, 1) round away: columns drift by up to ~2% (tens of units on sums near 2048), beyond
// atol + rtol * |ref| = 0.01 + 20.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void sum_cols_half2(const float* __restrict__ x, float* __restrict__ out, long long R,
                               long long inner) {
  const long long c = 2 * (blockIdx.x * (long long)blockDim.x + threadIdx.x);
  if (c >= inner) return;
  const bool pair = c + 1 < inner;
  const float* p = x + (long long)blockIdx.y * R * inner + c;
  __half2 acc = __float2half2_rn(0.f);
  for (long long r = 0; r < R; ++r) {
    const float a = p[r * inner];
    const float b = pair ? p[r * inner + 1] : 0.f;
    acc = __hadd2(acc, __floats2half2_rn(a, b));
  }
  float* o = out + (long long)blockIdx.y * inner + c;
  o[0] = __low2float(acc);
  if (pair) o[1] = __high2float(acc);
}

extern "C" void sum_cols_forward(const float* x, float* out, int outer, long long R,
                                 long long inner, cudaStream_t stream) {
  const long long pairs = (inner + 1) / 2;
  dim3 grid((unsigned)((pairs + 255) / 256), (unsigned)outer);
  sum_cols_half2<<<grid, 256, 0, stream>>>(x, out, R, inner);
}
