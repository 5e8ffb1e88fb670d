// y = x @ w^T for nn.Linear's layout (x [batch, in], w [out, in], y [batch, out], all row-major
// float32) through cuBLAS, in full FP32 (the default math mode: no TF32, the same precision as
// eager PyTorch with torch.backends.cuda.matmul.allow_tf32 = False).
//
// Row-major y = x w^T is column-major y^T = w x^T: with w seen column-major as [in, out] (lda =
// in), op(A) = A^T; x seen column-major as [in, batch] (ldb = in); y^T column-major [out, batch]
// (ldc = out).
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace {

// One handle for the process, made on first use (cublasCreate costs milliseconds).
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    if (cublasCreate(&created) != CUBLAS_STATUS_SUCCESS) return (cublasHandle_t) nullptr;
    return created;
  }();
  return h;
}

}  // namespace

// Returns 0 on success, else the cublasStatus_t (or -1 when no handle could be made).
extern "C" int linear_no_bias(const float* x, const float* w, float* y, int batch, int in_features,
                              int out_features, cudaStream_t stream) {
  cublasHandle_t h = handle();
  if (!h) return -1;
  cublasStatus_t s = cublasSetStream(h, stream);
  if (s != CUBLAS_STATUS_SUCCESS) return (int)s;
  const float alpha = 1.f, beta = 0.f;
  s = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out_features, batch, in_features, &alpha, w,
                  in_features, x, in_features, &beta, y, out_features);
  return (int)s;
}
