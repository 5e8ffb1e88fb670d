#include <cuda_runtime.h>

struct LeakyRelu {
  float slope;
  __device__ float operator()(float v) const { return v >= 0.f ? v : v * slope; }
};

template <typename Op>
__global__ void map_kernel(const float* __restrict__ x, float* __restrict__ y, long long n, Op op) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = op(x[i]);
}

template <typename Op>
void launch_map(const float* x, float* y, long long n, Op op, cudaStream_t stream) {
  long long blocks = (n + 511) / 512;
  map_kernel<Op><<<(unsigned)(blocks > 32768 ? 32768 : (blocks < 1 ? 1 : blocks)), 512, 0, stream>>>(x, y, n, op);
}

extern "C" void leaky_relu_launch(const float* x, float* y, long long n, float slope,
                                  cudaStream_t stream) {
  launch_map(x, y, n, LeakyRelu{slope}, stream);
}
