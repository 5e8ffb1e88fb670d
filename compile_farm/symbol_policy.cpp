#include "compile_farm/symbol_policy.h"

#include <array>
#include <regex>
#include <set>

namespace cuda_agent::compile_farm {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// CUDA runtime calls that are refused even though they live in libcudart (source_checks.h lists
// the same families with their reasons).
bool forbidden_cuda(std::string_view name) {
  static const std::array<std::string_view, 16> prefixes = {"cudaStreamCreate",
                                                            "cudaStreamBeginCapture",
                                                            "cudaGraph",
                                                            "cudaDeviceSet",
                                                            "cudaThreadSet",
                                                            "cudaDeviceReset",
                                                            "cudaSetDevice",
                                                            "cudaCtxResetPersistingL2Cache",
                                                            "cudaStreamSetAttribute",
                                                            "cudaLaunchHostFunc",
                                                            "cudaStreamAddCallback",
                                                            "cudaGetDriverEntryPoint",
                                                            "cudaIpc",
                                                            "cudaProfilerStart",
                                                            "cudaProfilerStop",
                                                            "cudaGetFuncBySymbol"};
  for (std::string_view p : prefixes)
    if (starts_with(name, p)) return true;
  return false;
}

bool allowed_import(std::string_view name, LibraryPolicy policy) {
  if (starts_with(name, "__cuda")) return true;
  if (starts_with(name, "cuda")) return !forbidden_cuda(name);
  if (policy == LibraryPolicy::kDefault &&
      (starts_with(name, "cublas") || starts_with(name, "cudnn")))
    return true;
  static const std::set<std::string_view> exact = {
      // C++ runtime
      "__cxa_atexit", "__cxa_finalize", "__cxa_guard_acquire", "__cxa_guard_release",
      "__cxa_guard_abort", "__cxa_allocate_exception", "__cxa_free_exception", "__cxa_throw",
      "__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow", "__cxa_pure_virtual",
      "__cxa_call_unexpected", "__gxx_personality_v0", "_Unwind_Resume", "__dso_handle",
      "__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
      "__stack_chk_fail", "_ZSt9terminatev", "__assert_fail", "abort",
      // memory and strings
      "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memcpy", "memmove",
      "memset", "memcmp", "strlen", "strcmp", "strncmp", "strcpy", "strncpy", "__memcpy_chk",
      "__memmove_chk", "__memset_chk", "__strcpy_chk",
      // formatted output to stdout/stderr and into buffers
      "printf", "puts", "putchar", "fprintf", "fputs", "fputc", "fwrite", "fflush", "stdout",
      "stderr", "snprintf", "sprintf", "vsnprintf", "__printf_chk", "__fprintf_chk",
      "__sprintf_chk", "__snprintf_chk", "__vsnprintf_chk", "__vfprintf_chk",
      // numbers
      "strtol", "strtoll", "strtoul", "strtoull", "strtod", "strtof", "abs", "labs", "llabs"};
  if (exact.count(name)) return true;
  // operator new/delete, std::__throw_* helpers
  if (starts_with(name, "_Znw") || starts_with(name, "_Zna") || starts_with(name, "_Zdl") ||
      starts_with(name, "_Zda") || starts_with(name, "_ZSt17__throw_") ||
      starts_with(name, "_ZSt18__throw_") || starts_with(name, "_ZSt19__throw_") ||
      starts_with(name, "_ZSt20__throw_") || starts_with(name, "_ZSt24__throw_") ||
      starts_with(name, "_ZSt16__throw_") || starts_with(name, "_ZSt21__throw_"))
    return true;
  static const std::regex kMath(
      R"((a?(sin|cos|tan)h?|atan2|exp|exp2|expm1|log|log2|log10|log1p|pow|sqrt|cbrt|fabs|floor|ceil|round|trunc|fmod|fmin|fmax|fma|erf|erfc|tgamma|lgamma|hypot|nearbyint|rint|lrint|llrint|lround|llround|frexp|ldexp|modf|copysign|remainder)[fl]?)");
  return std::regex_match(std::string(name), kMath);
}

bool allowed_library(std::string_view lib, LibraryPolicy policy) {
  static const std::array<std::string_view, 6> base = {
      "libcudart.so", "libstdc++.so", "libgcc_s.so", "libm.so", "libc.so", "ld-linux"};
  for (std::string_view p : base)
    if (starts_with(lib, p)) return true;
  return policy == LibraryPolicy::kDefault &&
         (starts_with(lib, "libcublas.so") || starts_with(lib, "libcublasLt.so") ||
          starts_with(lib, "libcudnn"));
}

}  // namespace

DynamicSymbols parse_dynamic_symbols(std::string_view nm_posix, std::string_view readelf_dynamic) {
  DynamicSymbols out;
  std::size_t b = 0;
  while (b < nm_posix.size()) {
    std::size_t e = nm_posix.find('\n', b);
    if (e == std::string_view::npos) e = nm_posix.size();
    std::string_view line = nm_posix.substr(b, e - b);
    b = e + 1;
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp + 1 >= line.size()) continue;
    std::string name(line.substr(0, sp));
    if (std::size_t at = name.find('@'); at != std::string::npos) name.resize(at);
    out.symbols.push_back({name, line[sp + 1]});
  }
  static const std::string kNeeded = "Shared library: [";
  for (std::size_t p = readelf_dynamic.find(kNeeded); p != std::string_view::npos;
       p = readelf_dynamic.find(kNeeded, p + 1)) {
    std::size_t s = p + kNeeded.size();
    std::size_t e = readelf_dynamic.find(']', s);
    if (e == std::string_view::npos) break;
    out.needed.emplace_back(readelf_dynamic.substr(s, e - s));
  }
  return out;
}

std::vector<Finding> check_symbols(const DynamicSymbols& symbols,
                                   const std::vector<LauncherPrototype>& launchers,
                                   LibraryPolicy policy, const std::string& file) {
  std::vector<Finding> out;
  std::set<std::string> launcher_names;
  for (const auto& l : launchers) launcher_names.insert(l.name);
  std::set<std::string> exported;
  for (const DynamicSymbol& s : symbols.symbols) {
    const bool undefined = s.type == 'U' || s.type == 'w' || s.type == 'v';
    if (undefined) {
      if (!allowed_import(s.name, policy))
        out.push_back(
            {file, 0, "symbol.import",
             "imports '" + s.name + "', which solutions may not call" +
                 (starts_with(s.name, "cublas") || starts_with(s.name, "cudnn")
                      ? " under library policy 'pure'"
                      : " (processes, files, threads, dynamic loading, device settings "
                        "and libraries outside the policy are refused)") +
                 (s.name == "exit" ? "; host code that a launcher or a static initialiser reaches "
                                     "calls exit (a __device__ function called or taken by address "
                                     "from host code counts: nvcc's host stub of it calls exit)"
                                   : "")});
      continue;
    }
    exported.insert(s.name);
    static const std::set<std::string> markers = {"_init", "_fini", "_edata", "_end",
                                                  "__bss_start"};
    const bool weak_cxx =
        (s.type == 'W' || s.type == 'V' || s.type == 'u') && starts_with(s.name, "_Z");
    if (!launcher_names.count(s.name) && !markers.count(s.name) && !weak_cxx)
      out.push_back({file, 0, "symbol.export",
                     "exports '" + s.name +
                         "', which is not an extern \"C\" launcher (the link exports only the "
                         "launchers, so something in the sources forced this export)"});
  }
  for (const std::string& name : launcher_names)
    if (!exported.count(name))
      out.push_back({file, 0, "symbol.launcher",
                     "launcher '" + name + "' is declared but not defined in any source"});
  for (const std::string& lib : symbols.needed)
    if (!allowed_library(lib, policy))
      out.push_back({file, 0, "symbol.library",
                     "links '" + lib + "', which library policy '" +
                         std::string(to_string(policy)) + "' does not allow"});
  return out;
}

}  // namespace cuda_agent::compile_farm
