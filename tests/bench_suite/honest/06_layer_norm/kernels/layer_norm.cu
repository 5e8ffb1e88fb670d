// LayerNorm over the trailing N elements of x [M, N] with elementwise weight and bias [N].
// The task has M = 16 rows of N = 4M elements: a kernel with one block per row (the usual
// layout) leaves most of the GPU idle, so every row is split over many blocks:
//   1. layer_norm_partials: grid (parts, M); each block sums x - shift and (x - shift)^2 over its
//      slice of the row (float per thread, double per block) into partials[M][parts][2]; the
//      shift (the row's first element) keeps the variance from cancelling when the mean is large;
//   2. layer_norm_stats: one warp per row adds the parts in double, stats[M][2] = (mean, rstd);
//   3. layer_norm_apply: y = (x - mean) * rstd * w + b, 16-byte accesses, grid (N / 1024, M).
#include <cuda_runtime.h>

__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__global__ void layer_norm_partials(const float* __restrict__ x, long long N, int parts,
                                    double* __restrict__ partials) {
  const int row = blockIdx.y, part = blockIdx.x;
  const float* xr = x + row * N;
  const float shift = xr[0];
  const long long chunk = (N + parts - 1) / parts;
  const long long begin = part * chunk;
  const long long end = begin + chunk < N ? begin + chunk : N;
  float s = 0.f, ss = 0.f;
  if (N % 4 == 0 && chunk % 4 == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    for (long long i = begin / 4 + threadIdx.x; i < end / 4; i += blockDim.x) {
      float4 v = x4[i];
      float a = v.x - shift, b = v.y - shift, c = v.z - shift, d = v.w - shift;
      s += (a + b) + (c + d);
      ss += (a * a + b * b) + (c * c + d * d);
    }
  } else {
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float a = xr[i] - shift;
      s += a;
      ss += a * a;
    }
  }
  __shared__ double sh[2][32];
  double ds = warp_sum((double)s), dss = warp_sum((double)ss);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sh[0][warp] = ds;
    sh[1][warp] = dss;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    ds = warp_sum(lane < warps ? sh[0][lane] : 0.0);
    dss = warp_sum(lane < warps ? sh[1][lane] : 0.0);
    if (lane == 0) {
      partials[((long long)row * parts + part) * 2 + 0] = ds;
      partials[((long long)row * parts + part) * 2 + 1] = dss;
    }
  }
}

__global__ void layer_norm_stats(const float* __restrict__ x, long long N, int parts,
                                 const double* __restrict__ partials, float eps,
                                 float* __restrict__ stats) {
  const int row = blockIdx.x, lane = threadIdx.x;
  double s = 0.0, ss = 0.0;
  for (int p = lane; p < parts; p += 32) {
    s += partials[((long long)row * parts + p) * 2 + 0];
    ss += partials[((long long)row * parts + p) * 2 + 1];
  }
  s = warp_sum(s);
  ss = warp_sum(ss);
  if (lane == 0) {
    const double mean_shifted = s / N;
    double var = ss / N - mean_shifted * mean_shifted;
    if (var < 0) var = 0;
    stats[2 * row + 0] = (float)(mean_shifted + x[row * N]);
    stats[2 * row + 1] = (float)(1.0 / sqrt(var + eps));
  }
}

__global__ void layer_norm_apply_vec4(const float4* __restrict__ x, const float4* __restrict__ w,
                                      const float4* __restrict__ b, const float* __restrict__ stats,
                                      float4* __restrict__ y, long long n4) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const int row = blockIdx.y;
  const float mean = stats[2 * row], rstd = stats[2 * row + 1];
  const float4 v = __ldcs(x + row * n4 + i);
  const float4 wv = w[i], bv = b[i];
  float4 o;
  o.x = (v.x - mean) * rstd * wv.x + bv.x;
  o.y = (v.y - mean) * rstd * wv.y + bv.y;
  o.z = (v.z - mean) * rstd * wv.z + bv.z;
  o.w = (v.w - mean) * rstd * wv.w + bv.w;
  __stcs(y + row * n4 + i, o);
}

__global__ void layer_norm_apply_any(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ b, const float* __restrict__ stats,
                                     float* __restrict__ y, long long N) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= N) return;
  const int row = blockIdx.y;
  y[row * N + i] = (x[row * N + i] - stats[2 * row]) * stats[2 * row + 1] * w[i] + b[i];
}

// x, y: float32 [rows, cols]; weight, bias: float32 [cols]; partials: float64 [rows * parts * 2]
// scratch; stats: float32 [rows * 2] scratch (mean, rstd per row). All contiguous.
extern "C" void layer_norm_forward(const float* x, const float* weight, const float* bias, float* y,
                                   double* partials, float* stats, int rows, long long cols,
                                   int parts, float eps, cudaStream_t stream) {
  layer_norm_partials<<<dim3((unsigned)parts, (unsigned)rows), 256, 0, stream>>>(x, cols, parts,
                                                                                 partials);
  layer_norm_stats<<<rows, 32, 0, stream>>>(x, cols, parts, partials, eps, stats);
  const int threads = 256;
  if (cols % 4 == 0) {
    const long long n4 = cols / 4;
    dim3 grid((unsigned)((n4 + threads - 1) / threads), (unsigned)rows);
    layer_norm_apply_vec4<<<grid, threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(weight),
        reinterpret_cast<const float4*>(bias), stats, reinterpret_cast<float4*>(y), n4);
  } else {
    dim3 grid((unsigned)((cols + threads - 1) / threads), (unsigned)rows);
    layer_norm_apply_any<<<grid, threads, 0, stream>>>(x, weight, bias, stats, y, cols);
  }
}
