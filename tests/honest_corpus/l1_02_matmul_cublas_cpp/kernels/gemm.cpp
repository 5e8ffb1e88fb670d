#include <cublas_v2.h>
#include <cuda_runtime.h>

static cublasHandle_t shared_handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    return cublasCreate(&made) == CUBLAS_STATUS_SUCCESS ? made : nullptr;
  }();
  return h;
}

// A [m, k], B [k, n], C [m, n], row-major. Returns a cublasStatus_t (or -1: no handle).
extern "C" int matmul_cublas(const float* A, const float* B, float* C, int m, int k, int n, cudaStream_t stream) {
  cublasHandle_t h = shared_handle();
  if (!h) return -1;
  if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return -2;
  const float one = 1.f, zero = 0.f;
  return (int)cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, n, A, k, &zero, C, n);
}
