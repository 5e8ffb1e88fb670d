// The GEMM's epilogue in one pass over y (eager PyTorch: addmm's bias, then mul and leaky_relu
// as separate kernels): v = (y + bias[c]) * multiplier; y = v > 0 ? v : v * negative_slope, in
// place. Grid (cols / 1024, rows) so the column index needs no division.
#include <cuda_runtime.h>

__device__ __forceinline__ float epilogue(float y, float b, float mul, float slope) {
  float v = (y + b) * mul;
  return v > 0.f ? v : v * slope;
}

__global__ void bias_scale_leaky_vec4(float4* __restrict__ y, const float4* __restrict__ bias,
                                      long long cols4, float mul, float slope) {
  const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c >= cols4) return;
  float4* row = y + blockIdx.y * cols4;
  float4 v = row[c];
  const float4 b = bias[c];
  v.x = epilogue(v.x, b.x, mul, slope);
  v.y = epilogue(v.y, b.y, mul, slope);
  v.z = epilogue(v.z, b.z, mul, slope);
  v.w = epilogue(v.w, b.w, mul, slope);
  row[c] = v;
}

__global__ void bias_scale_leaky_any(float* __restrict__ y, const float* __restrict__ bias,
                                     long long cols, float mul, float slope) {
  const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float* row = y + blockIdx.y * cols;
  row[c] = epilogue(row[c], bias[c], mul, slope);
}

// y: float32 [rows, cols] (in place); bias: float32 [cols].
extern "C" void bias_scale_leaky_relu_inplace(float* y, const float* bias, int rows, long long cols,
                                              float multiplier, float negative_slope,
                                              cudaStream_t stream) {
  const int threads = 256;
  if (cols % 4 == 0) {
    dim3 grid((unsigned)((cols / 4 + threads - 1) / threads), (unsigned)rows);
    bias_scale_leaky_vec4<<<grid, threads, 0, stream>>>(reinterpret_cast<float4*>(y),
                                                        reinterpret_cast<const float4*>(bias),
                                                        cols / 4, multiplier, negative_slope);
  } else {
    dim3 grid((unsigned)((cols + threads - 1) / threads), (unsigned)rows);
    bias_scale_leaky_any<<<grid, threads, 0, stream>>>(y, bias, cols, multiplier, negative_slope);
  }
}
