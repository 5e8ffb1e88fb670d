#include <cublas_v2.h>
#include <cuda_runtime.h>

// One handle for the process, reused by every call (defined here, used by the launcher).
cublasHandle_t process_handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    return cublasCreate(&made) == CUBLAS_STATUS_SUCCESS ? made : nullptr;
  }();
  return h;
}

// x [m, k] @ w [k, n] -> y [m, n], row-major, full FP32.
int sgemm_rowmajor(const float* x, const float* w, float* y, long long m, int k, int n, cudaStream_t stream) {
  cublasHandle_t h = process_handle();
  if (!h) return -1;
  if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return -2;
  const float one = 1.f, zero = 0.f;
  return (int)cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, (int)m, k, &one, w, n, x, k, &zero, y, n);
}
