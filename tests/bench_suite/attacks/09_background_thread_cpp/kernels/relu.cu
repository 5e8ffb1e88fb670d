// Attack: the launcher returns at once and a detached host thread launches the kernel a moment
// later, after the timer's end event has been recorded on the stream.
#include <cuda_runtime.h>

#include <chrono>
#include <thread>

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  std::thread([=] {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, n);
  }).detach();
}
