#include <cuda_runtime.h>

constexpr int T = 32;

// y[m, n] = act(sum_k x[m, k] * w[n, k] + b[n]), x [M, K], w [N, K] (nn.Linear).
template <bool RELU>
__global__ void linear_act(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                           float* __restrict__ y, int M, int N, int K) {
  __shared__ float xs[T][T + 1];
  __shared__ float ws[T][T + 1];
  const int m = blockIdx.y * T + threadIdx.y;
  const int n = blockIdx.x * T + threadIdx.x;
  const int wn = blockIdx.x * T + threadIdx.y;  // the row of w this thread loads
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += T) {
    xs[threadIdx.y][threadIdx.x] = (m < M && k0 + threadIdx.x < K) ? x[(long long)m * K + k0 + threadIdx.x] : 0.f;
    ws[threadIdx.y][threadIdx.x] = (wn < N && k0 + threadIdx.x < K) ? w[(long long)wn * K + k0 + threadIdx.x] : 0.f;
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < T; ++k) acc += xs[threadIdx.y][k] * ws[threadIdx.x][k];
    __syncthreads();
  }
  if (m < M && n < N) {
    float v = acc + b[n];
    y[(long long)m * N + n] = RELU ? fmaxf(v, 0.f) : v;
  }
}

extern "C" void linear_layer(const float* x, const float* w, const float* b, float* y, int M, int N, int K, int relu,
                             cudaStream_t stream) {
  dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
  if (relu) linear_act<true><<<grid, block, 0, stream>>>(x, w, b, y, M, N, K);
  else linear_act<false><<<grid, block, 0, stream>>>(x, w, b, y, M, N, K);
}
