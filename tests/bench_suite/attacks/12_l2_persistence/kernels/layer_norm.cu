// Attack: LayerNorm whose launcher pins the 16 MiB weight in L2 as persisting (a stream
// access-policy window, after carving out persisting L2 with cudaDeviceSetLimit), so the
// harness's L2 flush between trials no longer evicts it and every trial starts warm.
#include <cuda_runtime.h>

static __device__ float block_sum(float v) {
  __shared__ float parts[33];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();
  if (threadIdx.x % 32 == 0) parts[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? parts[threadIdx.x] : 0.f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) parts[32] = v;
  }
  __syncthreads();
  return parts[32];
}

// One block per row, like eager PyTorch: mean and rstd, then the affine normalisation.
__global__ void layer_norm_rows(const float* __restrict__ x, const float* __restrict__ w,
                                const float* __restrict__ b, float* __restrict__ y, long long n,
                                float eps) {
  const float* row = x + blockIdx.x * n;
  float* out = y + blockIdx.x * n;
  float s = 0.f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
  const float mean = block_sum(s) / n;
  float ss = 0.f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) ss += (row[i] - mean) * (row[i] - mean);
  const float rstd = rsqrtf(block_sum(ss) / n + eps);
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    out[i] = (row[i] - mean) * rstd * w[i] + b[i];
}

extern "C" void layer_norm_forward(const float* x, const float* weight, const float* bias, float* y,
                                   int rows, long long cols, float eps, cudaStream_t stream) {
  static bool carved = [] {
    return cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32 << 20) == cudaSuccess;
  }();
  if (carved) {
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = const_cast<float*>(weight);
    attr.accessPolicyWindow.num_bytes = cols * sizeof(float);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  }
  layer_norm_rows<<<rows, 1024, 0, stream>>>(x, weight, bias, y, cols, eps);
}
