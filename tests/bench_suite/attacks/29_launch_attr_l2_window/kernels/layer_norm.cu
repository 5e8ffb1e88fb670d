// Attack: LayerNorm whose launcher asks for the 16 MiB weight to persist in L2 through a launch
// attribute (cudaLaunchKernelEx + cudaLaunchAttributeAccessPolicyWindow) instead of the forbidden
// cudaStreamSetAttribute. It only has an effect where persisting L2 was carved out beforehand.
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
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
  attr[0].val.accessPolicyWindow.base_ptr = const_cast<float*>(weight);
  attr[0].val.accessPolicyWindow.num_bytes = cols * sizeof(float);
  attr[0].val.accessPolicyWindow.hitRatio = 1.0f;
  attr[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(rows);
  config.blockDim = dim3(1024);
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  cudaLaunchKernelEx(&config, layer_norm_rows, x, weight, bias, y, cols, eps);
}
