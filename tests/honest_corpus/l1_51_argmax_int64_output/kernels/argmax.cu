#include <cuda_runtime.h>

__device__ void keep_max(float v, int i, float& best, int& at) {
  if (v > best) { best = v; at = i; }
}

__global__ void argmax_dim1(const float* __restrict__ x, long long* __restrict__ y, int batch, int rows, int cols) {
  long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= (long long)batch * cols) return;
  long long b = t / cols, c = t % cols;
  const float* p = x + b * rows * (long long)cols + c;
  float best = p[0];
  int at = 0;
  for (int r = 1; r < rows; ++r) keep_max(p[(long long)r * cols], r, best, at);
  y[t] = at;
}

extern "C" void argmax_dim1_launch(const float* x, long long* y, int batch, int rows, int cols, cudaStream_t stream) {
  long long outputs = (long long)batch * cols;
  argmax_dim1<<<(unsigned)((outputs + 255) / 256), 256, 0, stream>>>(x, y, batch, rows, cols);
}
