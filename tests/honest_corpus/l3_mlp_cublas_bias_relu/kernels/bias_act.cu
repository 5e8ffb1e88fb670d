#include <cuda_runtime.h>

template <bool RELU>
__global__ void bias_act(float* __restrict__ y, const float* __restrict__ bias, long long n, int cols) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = y[i] + bias[i % cols];
    y[i] = RELU ? fmaxf(v, 0.f) : v;
  }
}

extern "C" void add_bias(float* y, const float* bias, long long rows, int cols, int relu, cudaStream_t stream) {
  long long n = rows * cols;
  long long b = (n + 255) / 256;
  unsigned blocks = (unsigned)(b > 4096 ? 4096 : (b < 1 ? 1 : b));
  if (relu) bias_act<true><<<blocks, 256, 0, stream>>>(y, bias, n, cols);
  else bias_act<false><<<blocks, 256, 0, stream>>>(y, bias, n, cols);
}
