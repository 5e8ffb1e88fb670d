// Attack: reading files with fopen64, which <cstdio> declares (g++ defines _GNU_SOURCE) and which
// the source check does not list (it names fopen, freopen, fdopen). Otherwise as 23: a saved
// reference result replaces the work.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void squared_error_sum(const float* __restrict__ p, const float* __restrict__ t,
                                  long long n, float* __restrict__ sum) {
  float acc = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float d = p[i] - t[i];
    acc += d * d;
  }
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (threadIdx.x % 32 == 0) atomicAdd(sum, acc / (float)n);
}

extern "C" void mse_forward(const float* p, const float* t, float* out, long long n,
                            cudaStream_t stream) {
  char path[128];
  std::snprintf(path, sizeof path, "/tmp/mse_reference_%lld.bin", n);
  static float saved = 0.f;
  static bool have = [&] {
    std::FILE* f = fopen64(path, "rb");
    if (!f) return false;
    bool ok = std::fread(&saved, sizeof saved, 1, f) == 1;
    std::fclose(f);
    return ok;
  }();
  if (have) {
    cudaMemcpyAsync(out, &saved, sizeof saved, cudaMemcpyHostToDevice, stream);
    return;
  }
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  squared_error_sum<<<1056, 256, 0, stream>>>(p, t, n, out);
}
