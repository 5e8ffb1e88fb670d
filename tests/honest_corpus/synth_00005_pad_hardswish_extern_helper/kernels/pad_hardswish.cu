#include <cuda_runtime.h>

__device__ float hardswish(float v) { return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f; }

__global__ void pad_hardswish(const float* __restrict__ x, float* __restrict__ y, long long rows, int w_in, int left, int w_out) {
  long long n = rows * w_out;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    long long r = i / w_out;
    int c = (int)(i % w_out) - left;
    y[i] = (c >= 0 && c < w_in) ? hardswish(x[r * w_in + c]) : 0.f;
  }
}

extern "C" void pad_hardswish_launch(const float* x, float* y, long long rows, int w_in, int left, int w_out, cudaStream_t stream) {
  long long n = rows * w_out;
  long long b = (n + 255) / 256;
  unsigned blocks = (unsigned)(b > 16384 ? 16384 : (b < 1 ? 1 : b));
  pad_hardswish<<<blocks, 256, 0, stream>>>(x, y, rows, w_in, left, w_out);
}
