#include <cuda_runtime.h>

struct MinOp {
  __device__ static float init() { return INFINITY; }
  __device__ static float apply(float a, float b) { return fminf(a, b); }
};

template <typename Op>
__global__ void reduce_dim1(const float* __restrict__ x, float* __restrict__ y, int batch, int rows, int cols) {
  long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= (long long)batch * cols) return;
  long long b = t / cols, c = t % cols;
  const float* p = x + b * rows * (long long)cols + c;
  float acc = Op::init();
  for (int r = 0; r < rows; ++r) acc = Op::apply(acc, p[(long long)r * cols]);
  y[t] = acc;
}

extern "C" void min_dim1_launch(const float* x, float* y, int batch, int rows, int cols, cudaStream_t stream) {
  long long outputs = (long long)batch * cols;
  reduce_dim1<MinOp><<<(unsigned)((outputs + 255) / 256), 256, 0, stream>>>(x, y, batch, rows, cols);
}
