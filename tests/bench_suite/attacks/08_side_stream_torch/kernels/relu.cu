// Attack (with model_new.py): a plain one-element-per-thread ReLU, launched while a private
// torch.cuda.Stream is current, so the launcher's stream argument is that side stream; forward
// returns without waiting. Timed honestly it is no faster than eager relu.
#include <cuda_runtime.h>

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, n);
}
