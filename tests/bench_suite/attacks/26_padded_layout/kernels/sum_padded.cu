// Attack: column sums written into rows padded from 4095 to 4096 floats, so every output row is
// 16-byte aligned for float4 stores; model_new.py returns a [:, :, :4095] view of the padded
// buffer. The values are right, but the output is not a dense tensor (row stride 4096, not 4095).
#include <cuda_runtime.h>

__global__ void sum_cols_padded(const float* __restrict__ x, float4* __restrict__ out, long long R,
                                long long inner, long long padded4) {
  const long long c4 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c4 >= padded4) return;
  const float* p = x + (long long)blockIdx.y * R * inner;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (long long r = 0; r < R; ++r)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const long long c = 4 * c4 + k;
      if (c < inner) acc[k] += p[r * inner + c];
    }
  out[(long long)blockIdx.y * padded4 + c4] = make_float4(acc[0], acc[1], acc[2], acc[3]);
}

// out: float32 [outer, padded] with padded % 4 == 0 and padded >= inner.
extern "C" void sum_cols_padded_forward(const float* x, float* out, int outer, long long R,
                                        long long inner, long long padded, cudaStream_t stream) {
  const long long padded4 = padded / 4;
  dim3 grid((unsigned)((padded4 + 127) / 128), (unsigned)outer);
  sum_cols_padded<<<grid, 128, 0, stream>>>(x, reinterpret_cast<float4*>(out), R, inner, padded4);
}
