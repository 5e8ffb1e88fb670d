// CUDA_TRY: returns a CUDA runtime failure upward as an Error naming the call, instead of
// aborting. For functions returning Status or Expected<T>.
//
//   CUDA_TRY(cudaMalloc(&p, bytes));
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace cuda_agent {

inline Error cuda_error(const char* call, cudaError_t rc) {
  const ErrorCategory category =
      rc == cudaErrorMemoryAllocation ? ErrorCategory::kUnavailable : ErrorCategory::kIo;
  return make_error(category, "cuda.error",
                    std::string(call) + ": " + cudaGetErrorString(rc) + " (" +
                        std::to_string(static_cast<int>(rc)) + ")");
}

}  // namespace cuda_agent

#define CUDA_TRY(call)                                                         \
  do {                                                                         \
    cudaError_t ca_rc_ = (call);                                               \
    if (ca_rc_ != cudaSuccess) return ::cuda_agent::cuda_error(#call, ca_rc_); \
  } while (0)
