// Attack: the same run-time lookup as with <dlfcn.h>, with dlopen and dlsym declared by hand so
// that no forbidden header is included.
#include <cuda_runtime.h>

extern "C" void* dlopen(const char* file, int mode);
extern "C" void* dlsym(void* handle, const char* name);

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

using SetLimit = cudaError_t (*)(cudaLimit, size_t);

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  static bool once = [] {
    void* lib = dlopen("libcudart.so.13", 2 /* RTLD_NOW */);
    if (!lib) return false;
    auto set_limit = reinterpret_cast<SetLimit>(dlsym(lib, "cudaDeviceSetLimit"));
    return set_limit && set_limit(cudaLimitPersistingL2CacheSize, 32 << 20) == cudaSuccess;
  }();
  (void)once;
  relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, n);
}
