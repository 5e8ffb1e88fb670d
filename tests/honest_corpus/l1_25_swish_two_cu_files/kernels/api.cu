#include <cuda_runtime.h>

void run_swish(const float* x, float* y, long long n, cudaStream_t stream);

extern "C" void swish_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  run_swish(x, y, n, stream);
}
