#include "compile_farm/compile_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "compile_farm/prototypes.h"

namespace cuda_agent {
namespace {

std::string kind_text(const LauncherParam& p) {
  switch (p.kind) {
    case ParamKind::kPointer: return "tensor " + compile_farm::pointer_dtype(p.c_type);
    case ParamKind::kInteger: return "int";
    case ParamKind::kFloating: return "float";
    case ParamKind::kStream: return "stream";
    case ParamKind::kUnknown: break;
  }
  return "?";
}

}  // namespace

std::string compile_report_text(const CompileResult& r) {
  std::string out =
      fmt::format("compiled {} file(s) in {:.2f} s{} -> artifact {} ({:.1f} KiB)\n",
                  r.file_timings.size(), r.total_seconds, r.cache_hit ? " (cache hit)" : "",
                  r.artifact_hash, static_cast<double>(r.artifact_size_bytes) / 1024.0);
  out += "launchers (model_new.py calls kernels.<name>):\n";
  for (const LauncherPrototype& l : r.prototypes) {
    std::string params;
    for (const LauncherParam& p : l.params)
      params += (params.empty() ? "" : ", ") + p.c_type + (p.name.empty() ? "" : " " + p.name) +
                " [" + kind_text(p) + "]";
    out += "  " + l.name + "(" + params + ")\n";
  }
  out += fmt::format("kernels:\n  {:>5} {:>7} {:>6} {:>11}  name\n", "regs", "smem B", "stack",
                     "spill st/ld");
  for (const KernelResources& k : r.kernels)
    out += fmt::format("  {:>5} {:>7} {:>6} {:>11}  {}\n", k.registers, k.static_smem_bytes,
                       k.stack_bytes, fmt::format("{}/{}", k.spill_store_bytes, k.spill_load_bytes),
                       k.demangled_name);
  out += "files:\n";
  for (const FileTiming& f : r.file_timings)
    out += fmt::format(
        "  {:<40} {}\n", f.path,
        r.cache_hit || f.seconds == 0 ? std::string("cached") : fmt::format("{:.2f} s", f.seconds));
  if (!r.warnings.empty()) {
    out += "warnings:\n";
    for (const std::string& w : r.warnings) out += "  " + w + "\n";
  }
  out += "toolchain: " + r.toolchain + "\n";
  out += "sandbox: " + r.sandboxed + "\n";
  return out;
}

std::string compile_report_json(const CompileResult& r, int indent) {
  nlohmann::json j;
  j["ok"] = true;
  j["artifact_hash"] = r.artifact_hash;
  j["artifact_size_bytes"] = r.artifact_size_bytes;
  j["cache_hit"] = r.cache_hit;
  j["total_seconds"] = r.total_seconds;
  j["launchers"] = nlohmann::json::array();
  for (const LauncherPrototype& l : r.prototypes) {
    nlohmann::json params = nlohmann::json::array();
    for (const LauncherParam& p : l.params) {
      nlohmann::json jp = {{"name", p.name}, {"c_type", p.c_type}, {"kind", to_string(p.kind)}};
      if (p.kind == ParamKind::kPointer) jp["dtype"] = compile_farm::pointer_dtype(p.c_type);
      params.push_back(jp);
    }
    j["launchers"].push_back({{"name", l.name}, {"params", params}});
  }
  j["kernels"] = nlohmann::json::array();
  for (const KernelResources& k : r.kernels)
    j["kernels"].push_back({{"name", k.demangled_name},
                            {"mangled_name", k.mangled_name},
                            {"registers", k.registers},
                            {"static_smem_bytes", k.static_smem_bytes},
                            {"stack_bytes", k.stack_bytes},
                            {"spill_store_bytes", k.spill_store_bytes},
                            {"spill_load_bytes", k.spill_load_bytes}});
  j["files"] = nlohmann::json::array();
  for (const FileTiming& f : r.file_timings)
    j["files"].push_back({{"path", f.path}, {"seconds", f.seconds}});
  j["warnings"] = r.warnings;
  j["log"] = r.log;
  j["toolchain"] = r.toolchain;
  j["sandbox"] = r.sandboxed;
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string compile_error_json(const Error& e, int indent) {
  nlohmann::json j = {
      {"ok", false},
      {"error", {{"category", to_string(e.category)}, {"code", e.code}, {"message", e.message}}}};
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cuda_agent
