#include "compile_farm/compiler_output.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

namespace cuda_agent::compile_farm {
namespace {

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t b = 0;
  while (b < s.size()) {
    std::size_t e = s.find('\n', b);
    if (e == std::string_view::npos) e = s.size();
    out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

std::uint32_t number_before(std::string_view line, std::string_view what) {
  std::size_t p = line.find(what);
  if (p == std::string_view::npos) return 0;
  std::size_t e = p;
  while (e > 0 && line[e - 1] == ' ') --e;
  std::size_t b = e;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
  if (b == e) return 0;
  return static_cast<std::uint32_t>(
      std::strtoul(std::string(line.substr(b, e - b)).c_str(), nullptr, 10));
}

// "<file>(12): error: ..." (nvcc front end), "<file>:12:5: error: ..." (g++), "ptxas error",
// "nvlink error", "fatal error", "/usr/bin/ld: ...".
enum class Kind { kNone, kError, kWarning };
Kind diagnostic_kind(std::string_view line) {
  static const std::regex kDiag(
      R"(^(\S.*?(\(\d+\)|:\d+(:\d+)?)\s*:\s*|ptxas |nvlink |nvcc |/usr/bin/ld: |collect2: )(catastrophic error|fatal error|error|warning)\b)");
  if (line.find("error") == std::string_view::npos &&
      line.find("warning") == std::string_view::npos)
    return Kind::kNone;
  std::cmatch m;
  std::string s(line);
  if (!std::regex_search(s.c_str(), m, kDiag)) {
    if (s.rfind("ptxas fatal", 0) == 0 || s.find(": undefined reference to") != std::string::npos)
      return Kind::kError;
    return Kind::kNone;
  }
  return m[4].str() == "warning" ? Kind::kWarning : Kind::kError;
}

bool is_info(std::string_view line) {
  return line.rfind("ptxas info", 0) == 0 ||
         line.find("bytes stack frame") != std::string_view::npos;
}

}  // namespace

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

std::vector<KernelResources> parse_ptxas(std::string_view output) {
  std::vector<KernelResources> kernels;
  std::map<std::string, std::size_t> index;
  std::string current, properties_of;
  for (std::string_view line : split_lines(output)) {
    static const std::string kEntry = "Compiling entry function '";
    if (std::size_t p = line.find(kEntry); p != std::string_view::npos) {
      std::size_t b = p + kEntry.size();
      std::size_t e = line.find('\'', b);
      current = std::string(line.substr(b, e - b));
      if (!index.count(current)) {
        index[current] = kernels.size();
        KernelResources k;
        k.mangled_name = current;
        k.demangled_name = demangle(current);
        kernels.push_back(k);
      }
      continue;
    }
    static const std::string kProps = "Function properties for ";
    if (std::size_t p = line.find(kProps); p != std::string_view::npos) {
      properties_of = std::string(line.substr(p + kProps.size()));
      while (!properties_of.empty() &&
             std::isspace(static_cast<unsigned char>(properties_of.back())))
        properties_of.pop_back();
      continue;
    }
    if (line.find("bytes stack frame") != std::string_view::npos) {
      auto it = index.find(properties_of);
      if (it != index.end()) {
        KernelResources& k = kernels[it->second];
        k.stack_bytes = number_before(line, "bytes stack frame");
        k.spill_store_bytes = number_before(line, "bytes spill stores");
        k.spill_load_bytes = number_before(line, "bytes spill loads");
      }
      continue;
    }
    if (line.find("Used ") != std::string_view::npos &&
        line.find(" registers") != std::string_view::npos) {
      auto it = index.find(current);
      if (it != index.end()) {
        KernelResources& k = kernels[it->second];
        k.registers = number_before(line, "registers");
        k.static_smem_bytes = number_before(line, "bytes smem");
      }
    }
  }
  return kernels;
}

std::vector<std::string> compiler_warnings(std::string_view output, std::size_t max) {
  std::vector<std::string> out;
  for (std::string_view line : split_lines(output))
    if (diagnostic_kind(line) == Kind::kWarning && out.size() < max) out.emplace_back(line);
  return out;
}

std::string trim_compiler_log(std::string_view output, const LogLimits& limits) {
  struct Diag {
    Kind kind;
    std::vector<std::string_view> lines;
  };
  std::vector<Diag> diags;
  std::size_t dropped_context = 0;
  for (std::string_view line : split_lines(output)) {
    if (is_info(line)) continue;
    Kind k = diagnostic_kind(line);
    if (k != Kind::kNone) {
      diags.push_back({k, {line}});
    } else if (!diags.empty() && !line.empty()) {
      // Instantiation chains ("detected during ...", "required from ...") are the noise; keep a
      // few lines of context.
      if (diags.back().lines.size() <= limits.max_context_lines)
        diags.back().lines.push_back(line);
      else
        ++dropped_context;
    }
  }
  std::string out;
  std::size_t errors = 0, errors_shown = 0, warnings = 0;
  for (const Diag& d : diags) (d.kind == Kind::kError ? errors : warnings)++;
  auto emit = [&](Kind kind, std::size_t max) {
    std::size_t shown = 0;
    for (const Diag& d : diags) {
      if (d.kind != kind || shown == max) continue;
      std::string block;
      for (std::string_view l : d.lines) block.append(l).push_back('\n');
      if (out.size() + block.size() > limits.max_bytes) break;
      out += block;
      ++shown;
    }
    return shown;
  };
  errors_shown = emit(Kind::kError, limits.max_errors);
  std::size_t warnings_shown = emit(Kind::kWarning, limits.max_errors);
  if (errors > errors_shown || warnings > warnings_shown || dropped_context > 0) {
    std::ostringstream note;
    note << "[log trimmed: " << errors_shown << " of " << errors << " errors and " << warnings_shown
         << " of " << warnings << " warnings shown; " << dropped_context
         << " lines of instantiation context left out]\n";
    out += note.str();
  }
  if (diags.empty() && !output.empty()) {
    // No recognisable diagnostic (a crash, a killed process): keep the tail.
    std::string_view tail = output.size() > limits.max_bytes / 2
                                ? output.substr(output.size() - limits.max_bytes / 2)
                                : output;
    std::string filtered;
    for (std::string_view l : split_lines(tail))
      if (!is_info(l)) filtered.append(l).push_back('\n');
    out = filtered;
  }
  return out;
}

}  // namespace cuda_agent::compile_farm
