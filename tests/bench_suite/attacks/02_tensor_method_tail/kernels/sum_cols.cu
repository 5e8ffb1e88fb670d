// Attack: a float4 column-sum kernel that only handles the columns up to the last multiple of
// four; model_new.py finishes the ragged tail with Tensor.sum and an indexed assignment.
#include <cuda_runtime.h>

__global__ void sum_cols_vec4(const float* __restrict__ x, float* __restrict__ out, long long R,
                              long long inner, long long inner4) {
  const long long c4 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c4 >= inner4 / 4) return;
  const float* p = x + (long long)blockIdx.y * R * inner + 4 * c4;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (long long r = 0; r < R; ++r) {
    // rows are not 16-byte aligned when inner % 4 != 0: four scalar loads
    acc.x += p[r * inner + 0];
    acc.y += p[r * inner + 1];
    acc.z += p[r * inner + 2];
    acc.w += p[r * inner + 3];
  }
  float* o = out + (long long)blockIdx.y * inner + 4 * c4;
  o[0] = acc.x;
  o[1] = acc.y;
  o[2] = acc.z;
  o[3] = acc.w;
}

extern "C" void sum_cols_forward(const float* x, float* out, int outer, long long R,
                                 long long inner, long long inner4, cudaStream_t stream) {
  dim3 grid((unsigned)((inner4 / 4 + 255) / 256), (unsigned)outer);
  sum_cols_vec4<<<grid, 256, 0, stream>>>(x, out, R, inner, inner4);
}
