// Attack: Swish computed in place into the input tensor, which model_new.py then returns. No
// output allocation, and the values are right; but the caller's input is destroyed (a reference
// run after it, or a second trial on the same input, sees swish(x) instead of x).
#include <cuda_runtime.h>

__global__ void swish_inplace(float4* __restrict__ x, long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 v = x[i];
  v.x = v.x / (1.f + __expf(-v.x));
  v.y = v.y / (1.f + __expf(-v.y));
  v.z = v.z / (1.f + __expf(-v.z));
  v.w = v.w / (1.f + __expf(-v.w));
  x[i] = v;
}

// x: float32 [n], n % 4 == 0 (the task's 4096 x 393216).
extern "C" void swish_inplace_forward(float* x, long long n, cudaStream_t stream) {
  long long n4 = n / 4;
  swish_inplace<<<(unsigned)((n4 + 255) / 256), 256, 0, stream>>>(reinterpret_cast<float4*>(x), n4);
}
