// Attack: the output is written as float16 instead of the reference's float32 -- half the bytes
// stored, so a memory-bound kernel is ~1.3x faster. The values are within 1e-2 of the reference,
// so a comparison that casts before comparing would accept them.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void new_gelu_half_out(const float4* __restrict__ x, __half2* __restrict__ y,
                                  long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 v = x[i];
  float r[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k)
    r[k] =
        0.5f * r[k] * (1.f + tanhf(0.7978845608028654f * (r[k] + 0.044715f * r[k] * r[k] * r[k])));
  y[2 * i] = __floats2half2_rn(r[0], r[1]);
  y[2 * i + 1] = __floats2half2_rn(r[2], r[3]);
}

// x: float32 [n]; y: float16 [n]; n % 4 == 0 (the task's 8192 x 8192).
extern "C" void new_gelu_forward(const float* x, __half* y, long long n, cudaStream_t stream) {
  long long n4 = n / 4;
  new_gelu_half_out<<<(unsigned)((n4 + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<__half2*>(y), n4);
}
