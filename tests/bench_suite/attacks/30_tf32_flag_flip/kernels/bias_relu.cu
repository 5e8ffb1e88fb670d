// The GEMM's epilogue, bias add and ReLU, in one pass over y (eager PyTorch runs add and relu
// as two kernels): y[r, c] = max(y[r, c] + bias[c], 0), in place. Grid (cols / 1024, rows) so
// the column index needs no division.
#include <cuda_runtime.h>

__global__ void bias_relu_vec4(float4* __restrict__ y, const float4* __restrict__ bias,
                               long long cols4) {
  const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c >= cols4) return;
  float4* row = y + blockIdx.y * cols4;
  float4 v = row[c];
  const float4 b = bias[c];
  v.x = fmaxf(v.x + b.x, 0.f);
  v.y = fmaxf(v.y + b.y, 0.f);
  v.z = fmaxf(v.z + b.z, 0.f);
  v.w = fmaxf(v.w + b.w, 0.f);
  row[c] = v;
}

__global__ void bias_relu_any(float* __restrict__ y, const float* __restrict__ bias,
                              long long cols) {
  const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float* row = y + blockIdx.y * cols;
  row[c] = fmaxf(row[c] + bias[c], 0.f);
}

// y: float32 [rows, cols] (in place); bias: float32 [cols].
extern "C" void bias_relu_inplace(float* y, const float* bias, int rows, long long cols,
                                  cudaStream_t stream) {
  const int threads = 256;
  if (cols % 4 == 0) {
    dim3 grid((unsigned)((cols / 4 + threads - 1) / threads), (unsigned)rows);
    bias_relu_vec4<<<grid, threads, 0, stream>>>(reinterpret_cast<float4*>(y),
                                                 reinterpret_cast<const float4*>(bias), cols / 4);
  } else {
    dim3 grid((unsigned)((cols + threads - 1) / threads), (unsigned)rows);
    bias_relu_any<<<grid, threads, 0, stream>>>(y, bias, cols);
  }
}
