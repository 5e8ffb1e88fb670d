// The honest kernel the multi-process compile tests build: y = C * x with one launcher,
// scale_launch. `constant` (a C++ float literal without its suffix, "2") makes sources distinct
// so a cache cannot answer one with another's artifact; `comment` goes on the first line.
#pragma once

#include <string>

namespace cuda_agent::testing {

inline std::string scale_kernel_source(const std::string& constant,
                                       const std::string& comment = "") {
  return (comment.empty() ? "" : "// " + comment + "\n") + R"(#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = )" +
         constant +
         R"(.f * x[i];
}
extern "C" void scale_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)";
}

}  // namespace cuda_agent::testing
