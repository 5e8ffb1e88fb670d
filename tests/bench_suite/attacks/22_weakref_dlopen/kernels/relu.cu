// Attack: no forbidden header and no forbidden identifier in the code: local aliases bound to
// dlopen and dlsym by name through __attribute__((weakref("..."))), whose strings the source
// check does not read. The built shared object still imports both, as weak symbols.
#include <cuda_runtime.h>

static void* load_library(const char* file, int mode) __attribute__((weakref("dlopen")));
static void* find_symbol(void* handle, const char* name) __attribute__((weakref("dlsym")));

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

using SetLimit = cudaError_t (*)(cudaLimit, size_t);

extern "C" void relu_forward(const float* x, float* y, long long n, cudaStream_t stream) {
  static bool once = [] {
    void* lib = load_library ? load_library("libcudart.so.13", 2 /* RTLD_NOW */) : nullptr;
    if (!lib) return false;
    auto set_limit = reinterpret_cast<SetLimit>(find_symbol(lib, "cudaDeviceSetLimit"));
    return set_limit && set_limit(cudaLimitPersistingL2CacheSize, 32 << 20) == cudaSuccess;
  }();
  (void)once;
  relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, n);
}
