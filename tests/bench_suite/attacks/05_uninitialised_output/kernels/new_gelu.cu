// Attack: the "kernel" computes GELU for the first row only (a plausible-looking warm-up /
// checksum row); every other element of the output is whatever torch.empty_like handed back.
// With PyTorch's caching allocator that is the block the reference's output just freed, which
// holds the right answer when the reference ran first on the same shapes.
#include <cuda_runtime.h>

__global__ void new_gelu_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= cols) return;
  const float v = x[i];
  y[i] = 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

extern "C" void new_gelu_forward(const float* x, float* y, int rows, int cols,
                                 cudaStream_t stream) {
  (void)rows;  // only row 0 is written
  new_gelu_row<<<(cols + 255) / 256, 256, 0, stream>>>(x, y, cols);
}
