// The post-link check (DESIGN.md section 5): the built shared object's dynamic symbols and needed
// libraries against an allow-list. A source trick that slips past source_checks.h (a function
// declared by hand instead of through a forbidden header, a macro-built name) still has to import
// what it calls, and shows up here by name.
//
//   DynamicSymbols s = parse_dynamic_symbols(nm_posix_output, readelf_dynamic_output);
//   std::vector<Finding> f = check_symbols(s, launchers, LibraryPolicy::kDefault, "artifact.so");
//
// The object judged is linked by build_steps.h's link_artifact: only the launchers are exported
// and only code reachable from them or from static initialisers is kept, so a finding is about
// code that can run, never about how nvcc lowered the sources or how the solution split them
// (nvcc's host stubs of __device__ functions, which call exit, are not in the object).
//
// Imports allowed: CUDA runtime registration and launch (__cuda*), the CUDA runtime API except
// the calls source_checks.h forbids, the C++ runtime (exceptions, new/delete, guards), libc
// memory/string/printf/math functions, and cuBLAS/cuDNN under library policy `default`. Exports
// allowed: the extern "C" launchers, weak C++ instantiations, and the linker's own markers.
// Libraries allowed in NEEDED: libcudart, libstdc++, libgcc_s, libm, libc (and libcublas,
// libcublasLt, libcudnn* under `default`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compile_farm/source_checks.h"
#include "messages/compile_codec.h"

namespace cuda_agent::compile_farm {

struct DynamicSymbol {
  std::string name;  ///< without its @version
  char type = '?';   ///< nm's letter: U undefined, w/v weak undefined, T/D/B/R/W/V/u/i defined
};

struct DynamicSymbols {
  std::vector<DynamicSymbol> symbols;
  std::vector<std::string> needed;  ///< DT_NEEDED entries, e.g. "libcudart.so.13"
};

/// From `nm -D --format=posix FILE` and `readelf -d FILE`.
DynamicSymbols parse_dynamic_symbols(std::string_view nm_posix, std::string_view readelf_dynamic);

/// Policy findings (rule symbol.import, symbol.export, symbol.library, symbol.launcher), each
/// naming the symbol or library. `file` names the artifact in the findings.
std::vector<Finding> check_symbols(const DynamicSymbols& symbols,
                                   const std::vector<LauncherPrototype>& launchers,
                                   LibraryPolicy policy, const std::string& file);

}  // namespace cuda_agent::compile_farm
