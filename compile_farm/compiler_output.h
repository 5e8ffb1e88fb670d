// What the compiler printed, turned into what people and the agent need: the per-kernel resource
// report from `-Xptxas -v`, the warnings, and a log trimmed to the first errors with their
// context (not hundreds of lines of template instantiation notes).
//
//   std::vector<KernelResources> k = parse_ptxas(output);      // demangled with
//   abi::__cxa_demangle std::string log = trim_compiler_log(output, {.max_errors = 10});
//
// ptxas lines it reads (STACK_NOTES.md): "Compiling entry function '<mangled>' for 'sm_90'",
// "Function properties for <mangled>" followed by "N bytes stack frame, N bytes spill stores, N
// bytes spill loads", and "Used N registers[, used N barriers][, N bytes smem][, ...]".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "messages/compile_codec.h"

namespace cuda_agent::compile_farm {

std::vector<KernelResources> parse_ptxas(std::string_view output);

/// `mangled` demangled, or itself when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);

struct LogLimits {
  std::size_t max_errors = 10;        ///< error diagnostics kept, each with its context
  std::size_t max_context_lines = 6;  ///< lines kept after each diagnostic (source, caret, notes)
  std::size_t max_bytes = 16 << 10;   ///< the trimmed log never exceeds this
};

/// The diagnostics of `output` (errors first, then warnings), each with a few lines of context;
/// ptxas info lines dropped; a closing line says how many errors or lines were left out.
std::string trim_compiler_log(std::string_view output, const LogLimits& limits = {});

/// The warning diagnostics of `output`, one line each (first line only), at most `max`.
std::vector<std::string> compiler_warnings(std::string_view output, std::size_t max = 20);

}  // namespace cuda_agent::compile_farm
