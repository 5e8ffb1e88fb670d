// The extern "C" launchers of a solution (DESIGN.md section 4): found in the sources, parsed and
// checked so that model_new.py can call each one through the injected `kernels` module.
//
//   Expected<std::vector<LauncherPrototype>> p = parse_launchers(files);
//
// Supported parameters: a pointer to float, __half/half, __nv_bfloat16, double, int/int32_t,
// int64_t/long long, int8_t, int16_t, uint8_t/unsigned char or bool (const and __restrict__
// allowed), an integer scalar (int, unsigned, long, long long, the <cstdint> types, size_t, bool),
// a floating scalar (float, double), and a trailing cudaStream_t. Return type: void, int or
// cudaError_t. Anything else is an Error (category invalid_input, code compile.prototype) naming
// the file, line, launcher, parameter and type. extern "C" __global__ kernels are refused (they
// cannot be called from Python; write a launcher).
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "messages/compile_codec.h"

namespace cuda_agent::compile_farm {

/// Every extern "C" function declared or defined in the solution's .cu/.cpp/.h files; a
/// launcher declared in a header and defined in a .cu counts once. Fails when there is none.
Expected<std::vector<LauncherPrototype>> parse_launchers(const std::vector<SourceFile>& files);

/// The pointee's torch dtype name ("float32", ...) of a supported pointer type, or "".
std::string pointer_dtype(const std::string& c_type);

}  // namespace cuda_agent::compile_farm
