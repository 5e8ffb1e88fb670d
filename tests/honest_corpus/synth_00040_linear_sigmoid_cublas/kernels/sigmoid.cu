#include <cuda_runtime.h>

__device__ float sigmoid_f(float v) { return 1.f / (1.f + expf(-v)); }

__global__ void bias_sigmoid(float* __restrict__ y, const float* __restrict__ bias, long long n, int cols) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = sigmoid_f(y[i] + bias[i % cols]);
}

extern "C" void bias_sigmoid_launch(float* y, const float* bias, long long rows, int cols, cudaStream_t stream) {
  long long n = rows * cols;
  long long b = (n + 255) / 256;
  bias_sigmoid<<<(unsigned)(b > 16384 ? 16384 : b), 256, 0, stream>>>(y, bias, n, cols);
}
