// Attack: a host callback enqueued on the stream that launches the real kernel from the CUDA
// driver's callback thread, after the timer's end event, while the launcher returns at once.
#include <cuda_runtime.h>

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

struct Job {
  const float* x;
  float* y;
  long long n;
};

static void CUDART_CB launch_later(void* data) {
  Job* job = static_cast<Job*>(data);
  relu<<<(unsigned)((job->n + 255) / 256), 256>>>(job->x, job->y, job->n);
  delete job;
}

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  cudaLaunchHostFunc(stream, launch_later, new Job{x, y, n});
}
