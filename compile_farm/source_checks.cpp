#include "compile_farm/source_checks.h"

#include <algorithm>
#include <array>
#include <regex>
#include <set>

#include "compile_farm/source_scan.h"

namespace cuda_agent::compile_farm {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Headers a solution may not include, with the reason a person reads.
struct HeaderRule {
  std::string_view name;  // exact header, or a directory prefix ending in '/'
  std::string_view reason;
};
constexpr std::array kForbiddenHeaders = {
    HeaderRule{"torch/", "torch headers are not available to solutions (and cost ~30 s a compile)"},
    HeaderRule{"ATen/", "ATen headers are not available to solutions"},
    HeaderRule{"c10/", "c10 headers are not available to solutions"},
    HeaderRule{"caffe2/", "caffe2 headers are not available to solutions"},
    HeaderRule{"pybind11/",
               "solutions do not bind Python themselves; model_new.py calls launchers"},
    HeaderRule{"Python.h", "solutions do not bind Python themselves"},
    HeaderRule{"dlfcn.h", "loading code at run time is not allowed"},
    HeaderRule{"thread", "solutions may not start threads"},
    HeaderRule{"pthread.h", "solutions may not start threads"},
    HeaderRule{"future", "solutions may not start threads"},
    HeaderRule{"unistd.h", "process and file-descriptor calls are not allowed"},
    HeaderRule{"fcntl.h", "file access is not allowed"},
    HeaderRule{"spawn.h", "starting processes is not allowed"},
    HeaderRule{"signal.h", "signal handling is not allowed"},
    HeaderRule{"csignal", "signal handling is not allowed"},
    HeaderRule{"fstream", "file access is not allowed"},
    HeaderRule{"filesystem", "file access is not allowed"},
    HeaderRule{"sys/", "system interfaces are not allowed"},
    HeaderRule{"linux/", "system interfaces are not allowed"},
    HeaderRule{"asm/", "system interfaces are not allowed"},
    HeaderRule{"netinet/", "network access is not allowed"},
    HeaderRule{"arpa/", "network access is not allowed"},
    HeaderRule{"cuda.h", "the CUDA driver API is not allowed; use the runtime API"},
    HeaderRule{"cudaProfiler.h", "profiler control is the bench's job"},
    HeaderRule{"cuda_profiler_api.h", "profiler control is the bench's job"},
    HeaderRule{"nvrtc.h", "compiling code at run time is not allowed"},
    HeaderRule{"nvJitLink.h", "linking code at run time is not allowed"},
    HeaderRule{"cuda_runtime_api_dlopen.h", "loading code at run time is not allowed"},
};

// Calls a solution may not make (identifier tokens; some also match as prefixes).
struct CallRule {
  std::string_view name;
  bool prefix;
  std::string_view reason;
  bool any_use = false;  ///< counts wherever the identifier appears (constants, fields, attributes)
};
constexpr std::array kForbiddenCalls = {
    CallRule{"cudaStreamCreate", true, "work must run on the launcher's stream argument"},
    CallRule{"cudaStreamBeginCapture", false, "graph capture escapes the given stream"},
    CallRule{"cudaGraph", true, "CUDA graphs escape the given stream"},
    CallRule{"cudaDeviceSet", true, "device-wide settings would leak into the measurements"},
    CallRule{"cudaThreadSet", true, "device-wide settings would leak into the measurements"},
    CallRule{"cudaDeviceReset", false, "resetting the device is not allowed"},
    CallRule{"cudaSetDevice", true, "the bench chooses the device"},
    CallRule{"cudaCtxResetPersistingL2Cache", false, "L2 persistence is off during timing"},
    CallRule{"cudaStreamSetAttribute", false,
             "stream access-policy windows (L2 persistence) "
             "are not allowed"},
    CallRule{"cudaLaunchHostFunc", false, "host callbacks run on other threads"},
    CallRule{"cudaStreamAddCallback", false, "host callbacks run on other threads"},
    CallRule{"cudaGetDriverEntryPoint", true, "driver entry points bypass the policy"},
    CallRule{"cudaIpc", true, "inter-process memory is not allowed"},
    CallRule{"cudaProfilerStart", false, "profiler control is the bench's job"},
    CallRule{"cudaProfilerStop", false, "profiler control is the bench's job"},
    CallRule{"dlopen", false, "loading code at run time is not allowed"},
    CallRule{"dlsym", false, "loading code at run time is not allowed"},
    CallRule{"fork", false, "starting processes is not allowed"},
    CallRule{"vfork", false, "starting processes is not allowed"},
    CallRule{"execv", true, "starting processes is not allowed"},
    CallRule{"execl", true, "starting processes is not allowed"},
    CallRule{"posix_spawn", true, "starting processes is not allowed"},
    CallRule{"system", false, "starting processes is not allowed"},
    CallRule{"popen", false, "starting processes is not allowed"},
    CallRule{"syscall", false, "system calls are not allowed"},
    CallRule{"fopen", false, "file access is not allowed"},
    CallRule{"freopen", false, "file access is not allowed"},
    CallRule{"fdopen", false, "file access is not allowed"},
    CallRule{"tmpfile", false, "file access is not allowed"},
    CallRule{"getenv", false, "the environment is not an input"},
    CallRule{"setenv", false, "the environment is not an input"},
    CallRule{"putenv", false, "the environment is not an input"},
    CallRule{"pthread_create", false, "solutions may not start threads"},
    CallRule{"socket", false, "network access is not allowed"},
    CallRule{"fopen64", false, "file access is not allowed"},
    CallRule{"freopen64", false, "file access is not allowed"},
    CallRule{"open", false, "file access is not allowed"},
    CallRule{"open64", false, "file access is not allowed"},
    CallRule{"openat", false, "file access is not allowed"},
    CallRule{"creat", false, "file access is not allowed"},
    CallRule{"cudaLibraryLoad", true, "loading code at run time is not allowed"},
    CallRule{"cuLibraryLoad", true, "loading code at run time is not allowed"},
    CallRule{"cuModuleLoad", true, "loading code at run time is not allowed"},
    CallRule{"cudaUserObjectCreate", false, "host callbacks run on other threads"},
    // Streams other than the launcher's: the per-thread and legacy default streams.
    CallRule{"cudaStreamPerThread", false, "work must run on the launcher's stream argument", true},
    CallRule{"cudaStreamLegacy", false, "work must run on the launcher's stream argument", true},
    CallRule{"CU_STREAM_PER_THREAD", false, "work must run on the launcher's stream argument",
             true},
    CallRule{"CU_STREAM_LEGACY", false, "work must run on the launcher's stream argument", true},
    CallRule{"CUDA_API_PER_THREAD_DEFAULT_STREAM", false,
             "work must run on the launcher's stream argument", true},
    // L2 persistence through launch or stream attributes (cudaLaunchKernelEx and friends).
    CallRule{"cudaAccessProperty", true, "L2 persistence is off during timing", true},
    CallRule{"accessPolicyWindow", false, "L2 persistence is off during timing", true},
    CallRule{"cudaLaunchAttributeAccessPolicyWindow", false, "L2 persistence is off during timing",
             true},
    CallRule{"cudaStreamAttributeAccessPolicyWindow", false, "L2 persistence is off during timing",
             true},
    // Symbol aliasing hides what a function really imports.
    CallRule{"weakref", false, "symbol aliases hide imports", true},
};

constexpr std::array<std::string_view, 6> kLibraryHeaderPrefixes = {
    "cublas", "cublasLt", "cudnn", "cublas_v2", "cublas_api", "cudnn_"};

std::string normalise_header(std::string name) {
  while (starts_with(name, "./")) name.erase(0, 2);
  return name;
}

void check_header(const std::string& file, int line, const std::string& raw, bool quoted,
                  const std::set<std::string>& solution_paths, LibraryPolicy policy,
                  std::vector<Finding>& out) {
  auto add = [&](std::string rule, std::string message) {
    out.push_back({file, line, std::move(rule), std::move(message)});
  };
  if (raw.empty() || raw[0] == '/' || raw.find('\\') != std::string::npos ||
      raw.find("..") != std::string::npos) {
    add("include.path",
        "'" + raw + "': include paths must be relative and stay inside the solution");
    return;
  }
  std::string name = normalise_header(raw);
  if (quoted) {
    // A quoted include that names a file of the solution (next to the including file, or from
    // the workspace root) is fine; otherwise it is a system header like any other.
    std::string dir = file.substr(0, file.rfind('/') + 1);
    if (solution_paths.count(dir + name) || solution_paths.count(name)) return;
  }
  for (const HeaderRule& rule : kForbiddenHeaders) {
    bool dir_rule = ends_with(std::string(rule.name), "/");
    if (dir_rule ? starts_with(name, rule.name) : name == rule.name) {
      add("include.forbidden", "<" + name + ">: " + std::string(rule.reason));
      return;
    }
  }
  if (policy == LibraryPolicy::kPure)
    for (std::string_view lib : kLibraryHeaderPrefixes)
      if (starts_with(name, lib)) {
        add("include.library", "<" + name + ">: library policy 'pure' allows no cuBLAS or cuDNN");
        return;
      }
}

// The signature text before a function body starting at `brace` (back to the previous ';', '}'
// or '{' at the same level).
std::string_view head_before(const std::string& code, std::size_t brace) {
  std::size_t b = code.find_last_of(";{}", brace == 0 ? 0 : brace - 1);
  b = b == std::string::npos ? 0 : b + 1;
  return std::string_view(code).substr(b, brace - b);
}

bool is_device_function_body(const std::string& code, std::size_t pos) {
  // Walk outwards through the enclosing braces; a __device__ or __global__ head on any of them
  // makes this device code.
  int depth = 0;
  for (std::size_t i = pos; i-- > 0;) {
    if (code[i] == '}')
      ++depth;
    else if (code[i] == '{') {
      if (depth > 0) {
        --depth;
        continue;
      }
      std::string_view head = head_before(code, i);
      if (head.find("__device__") != std::string_view::npos ||
          head.find("__global__") != std::string_view::npos)
        return true;
    }
  }
  return false;
}

void check_code(const std::string& file, const ScannedSource& src, std::vector<Finding>& out) {
  const bool cu = ends_with(file, ".cu") || ends_with(file, ".cuh");
  for (const Token& t : identifiers(src.code)) {
    int line = src.line_of(t.offset);
    if (t.text == "asm" || t.text == "__asm__" || t.text == "__asm") {
      if (!cu || !is_device_function_body(src.code, t.offset))
        out.push_back({file, line, "asm.host",
                       "inline assembly is allowed only in __device__ or __global__ functions"});
      continue;
    }
    for (const CallRule& rule : kForbiddenCalls) {
      bool hit = rule.prefix ? starts_with(t.text, rule.name) : t.text == rule.name;
      if (!hit) continue;
      if (rule.any_use) {
        out.push_back(
            {file, line, "call.forbidden", std::string(t.text) + ": " + std::string(rule.reason)});
        break;
      }
      // A member or a field of the same name (s.system, p->fork) is not the call.
      std::size_t before = t.offset;
      while (before > 0 && src.code[before - 1] == ' ') --before;
      if (before > 0 && (src.code[before - 1] == '.' ||
                         (before > 1 && src.code.compare(before - 2, 2, "->") == 0)))
        break;
      // An exact name counts when called or taken by address (a field `int system;` does not).
      std::size_t after = src.code.find_first_not_of(" \t\r\n", t.offset + t.text.size());
      bool called = after != std::string::npos && src.code[after] == '(';
      bool addressed = before > 0 && src.code[before - 1] == '&';
      if (!rule.prefix && !called && !addressed) break;
      out.push_back(
          {file, line, "call.forbidden", std::string(t.text) + ": " + std::string(rule.reason)});
      break;
    }
  }
  if (!cu) return;
  // Launches: kernel<<<grid, block, smem, stream>>>(...) should name the launcher's stream.
  for (std::size_t p = src.code.find("<<<"); p != std::string::npos;
       p = src.code.find("<<<", p + 3)) {
    std::size_t e = src.code.find(">>>", p + 3);
    if (e == std::string::npos) break;
    int commas = 0, depth = 0;
    for (std::size_t k = p + 3; k < e; ++k) {
      char c = src.code[k];
      if (c == '(' || c == '[' || c == '{')
        ++depth;
      else if (c == ')' || c == ']' || c == '}')
        --depth;
      else if (c == ',' && depth == 0)
        ++commas;
    }
    if (commas < 3)
      out.push_back({file, src.line_of(p), "launch.stream",
                     "kernel launch on the default stream: pass the launcher's cudaStream_t as "
                     "the fourth launch argument",
                     false});
  }
}

}  // namespace

std::string Finding::to_string() const {
  std::string where = file + (line > 0 ? ":" + std::to_string(line) : "");
  return where + ": " + (error ? "" : "warning: ") + rule + ": " + message;
}

bool is_compiled_source(const std::string& path) {
  return ends_with(path, ".cu") || ends_with(path, ".cpp");
}
bool is_header(const std::string& path) {
  return ends_with(path, ".cuh") || ends_with(path, ".h") || ends_with(path, ".hpp");
}

std::vector<Finding> check_sources(const std::vector<SourceFile>& files, LibraryPolicy policy,
                                   const SourceLimits& limits) {
  std::vector<Finding> out;
  static const std::regex kKernelPath(R"(kernels/[A-Za-z0-9_][A-Za-z0-9_.-]*\.(cu|cpp|cuh|h|hpp))");
  if (files.size() > limits.max_files)
    out.push_back({"", 0, "file.size",
                   std::to_string(files.size()) + " files submitted; at most " +
                       std::to_string(limits.max_files) + " are allowed"});
  std::set<std::string> paths;
  std::size_t total = 0;
  for (const SourceFile& f : files) {
    if (!paths.insert(f.path).second) out.push_back({f.path, 0, "file.path", "submitted twice"});
    total += f.content.size();
    if (f.path != "model_new.py" && !std::regex_match(f.path, kKernelPath))
      out.push_back({f.path, 0, "file.path",
                     "only model_new.py and kernels/<name>.{cu,cpp,cuh,h,hpp} may be submitted"});
    if (f.content.size() > limits.max_file_bytes)
      out.push_back({f.path, 0, "file.size",
                     std::to_string(f.content.size()) + " bytes; at most " +
                         std::to_string(limits.max_file_bytes) + " per file"});
    if (f.content.find('\0') != std::string::npos)
      out.push_back({f.path, 0, "file.size", "contains NUL bytes: not a text file"});
  }
  if (total > limits.max_total_bytes)
    out.push_back({"", 0, "file.size",
                   std::to_string(total) + " bytes in all; at most " +
                       std::to_string(limits.max_total_bytes)});
  if (has_errors(out)) return out;

  for (const SourceFile& f : files) {
    if (f.path == "model_new.py") continue;  // checked by the bench (AST allow-list)
    ScannedSource src = scan_source(f.content);
    for (const Directive& d : directives(src)) {
      if (d.name == "include_next" || d.name == "import" || d.name == "embed") {
        out.push_back({f.path, d.line, "include.path", "#" + d.name + " is not allowed"});
      } else if (d.name == "include") {
        const std::string& a = d.argument;
        char open = a.empty() ? '\0' : a[0];
        char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
        std::size_t end = close ? a.find(close, 1) : std::string::npos;
        if (!close || end == std::string::npos) {
          out.push_back({f.path, d.line, "include.path",
                         "#include " + a + ": only <header> or \"file\" forms, no macros"});
          continue;
        }
        check_header(f.path, d.line, a.substr(1, end - 1), open == '"', paths, policy, out);
      }
    }
    check_code(f.path, src, out);
  }
  return out;
}

bool has_errors(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.error; });
}

std::string format_findings(const std::vector<Finding>& findings, std::size_t max_lines) {
  std::vector<const Finding*> sorted;
  for (const Finding& f : findings) sorted.push_back(&f);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Finding* a, const Finding* b) { return a->error > b->error; });
  std::string out;
  std::size_t shown = 0;
  for (const Finding* f : sorted) {
    if (shown == max_lines) {
      out += "... and " + std::to_string(sorted.size() - shown) + " more\n";
      break;
    }
    out += f->to_string() + "\n";
    ++shown;
  }
  return out;
}

}  // namespace cuda_agent::compile_farm
