// y = x @ w^T (nn.Linear layout: x [batch, in], w [out, in], y [batch, out], row-major) through
// cuBLAS in full FP32. Row-major y = x w^T is column-major y^T = w x^T.
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace {
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    return cublasCreate(&made) == CUBLAS_STATUS_SUCCESS ? made : nullptr;
  }();
  return h;
}
}  // namespace

extern "C" int linear_forward(const float* x, const float* w, float* y, int batch, int in_features,
                  int out_features, cudaStream_t stream) {
  cublasHandle_t h = handle();
  if (!h) return -1;
  if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return -2;
  const float one = 1.f, zero = 0.f;
  return (int)cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out_features, batch, in_features, &one, w,
                          in_features, x, in_features, &zero, y, out_features);
}
