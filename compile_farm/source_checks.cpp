#include "compile_farm/source_checks.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <regex>
#include <set>

#include "compile_farm/source_scan.h"
#include "core/unique_fd.h"

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

// An include path that is absolute, parent-relative or uses backslashes.
bool escapes_solution(const std::string& raw) {
  return raw.empty() || raw[0] == '/' || raw.find('\\') != std::string::npos ||
         raw.find("..") != std::string::npos;
}

void check_header(const std::string& file, int line, const std::string& raw, bool quoted,
                  const std::set<std::string>& solution_paths, LibraryPolicy policy,
                  std::vector<Finding>& out) {
  auto add = [&](std::string rule, std::string message) {
    out.push_back({file, line, std::move(rule), std::move(message)});
  };
  if (escapes_solution(raw)) {
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

// Whether `head` marks host code: __host__, or a macro defined (in this file) to contain it.
bool names_host(std::string_view head, const std::set<std::string, std::less<>>& host_macros) {
  for (const Token& t : identifiers(std::string(head)))
    if (t.text == "__host__" || host_macros.count(t.text)) return true;
  return false;
}

// Macros whose definition names __host__ (or another such macro): `#define HD __host__ __device__`.
std::set<std::string, std::less<>> host_macros_of(const ScannedSource& src) {
  std::set<std::string, std::less<>> out;
  std::vector<std::pair<std::string, std::string>> defines;
  for (const Directive& d : directives(src)) {
    if (d.name != "define") continue;
    std::size_t e = 0;
    while (e < d.argument.size() &&
           (std::isalnum(static_cast<unsigned char>(d.argument[e])) || d.argument[e] == '_'))
      ++e;
    defines.emplace_back(d.argument.substr(0, e), d.argument.substr(e));
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [name, body] : defines)
      if (!out.count(name) && names_host(body, out)) grew = out.insert(name).second;
  }
  return out;
}

bool is_device_function_body(const std::string& code, std::size_t pos,
                             const std::set<std::string, std::less<>>& host_macros) {
  // Walk outwards through the enclosing braces; a __device__ or __global__ head on any of them
  // makes this device code, unless it is also __host__: the host compiler gets that copy, and
  // the host assembler's .incbin reads any file the compiler can.
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
      if (names_host(head, host_macros)) return false;
      if (head.find("__device__") != std::string_view::npos ||
          head.find("__global__") != std::string_view::npos)
        return true;
    }
  }
  return false;
}

// The preprocessor's file operators outside #include: __has_include("/abs") answers whether any
// file exists (an oracle), `#pragma GCC dependency "f"` stats a file and names it in an error.
void check_file_operators(const std::string& file, const ScannedSource& src,
                          std::vector<Finding>& out) {
  const std::string& code = src.code;
  const std::string& text = src.with_strings;
  auto add = [&](std::size_t offset, std::string message) {
    out.push_back({file, src.line_of(offset), "include.path", std::move(message)});
  };
  auto next_char = [&](std::size_t p) {
    while (p < code.size() && std::isspace(static_cast<unsigned char>(code[p]))) ++p;
    return p;
  };
  const std::vector<Token> tokens = identifiers(code);
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    const std::size_t after = next_char(t.offset + t.text.size());
    if (t.text == "__has_include_next" || t.text == "__has_embed") {
      add(t.offset, std::string(t.text) + " is not allowed");
    } else if (t.text == "__has_include") {
      if (after >= code.size() || code[after] != '(') {
        // Bare: only `defined(__has_include)`, `#ifdef __has_include` and `#ifndef`.
        const std::string_view prev = k > 0 ? tokens[k - 1].text : std::string_view();
        if (prev != "defined" && prev != "ifdef" && prev != "ifndef")
          add(t.offset,
              "__has_include is allowed only as __has_include(\"file\") or "
              "__has_include(<header>), or in defined()/#ifdef");
        continue;
      }
      const std::size_t a = next_char(after + 1);
      const char open = a < text.size() ? text[a] : '\0';
      const char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
      const std::size_t end = close ? text.find(close, a + 1) : std::string::npos;
      const std::size_t eol = text.find('\n', a);
      if (!close || end == std::string::npos || end > eol || next_char(end + 1) >= code.size() ||
          code[next_char(end + 1)] != ')') {
        add(t.offset, "__has_include takes only a \"file\" or <header> argument, no macros");
        continue;
      }
      const std::string raw = text.substr(a + 1, end - a - 1);
      if (escapes_solution(raw))
        add(t.offset, "__has_include(" + std::string(1, open) + raw + std::string(1, close) +
                          "): paths must be relative and stay inside the solution (an "
                          "absolute or parent path asks whether a host file exists)");
    } else if (t.text == "dependency" && k > 0 && tokens[k - 1].text == "GCC") {
      add(t.offset, "#pragma GCC dependency reads another file: not allowed");
    } else if (t.text == "_Pragma" && after < code.size() && code[after] == '(') {
      const std::size_t close = matching_close(code, after);
      const std::string arg =
          text.substr(after, close == std::string::npos ? std::string::npos : close - after);
      static const std::regex kDependency(R"(GCC\s+dependency)");
      if (std::regex_search(arg, kDependency))
        add(t.offset, "_Pragma(\"GCC dependency ...\") reads another file: not allowed");
    }
  }
}

// Assembler directives that read files (.incbin, .include) in any string literal or as a word.
void check_assembler_files(const std::string& file, const ScannedSource& src,
                           std::vector<Finding>& out) {
  // .incbin anywhere; .include only before its quoted file name (prose says "e.g. include").
  static const std::regex kFileDirective(R"(\.\s*(incbin)\b|\.\s*(include)\s*\\?")");
  const std::string& code = src.code;
  const std::string& text = src.with_strings;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"' || code[i] != '"') continue;  // a literal's opening quote
    std::size_t e = i + 1;
    while (e < text.size() && !(code[e] == '"' && text[e] == '"')) ++e;
    std::smatch m;
    const std::string literal = text.substr(i + 1, e - i - 1);
    if (std::regex_search(literal, m, kFileDirective))
      out.push_back({file, src.line_of(i), "asm.host",
                     "assembler directive '." + (m[1].matched ? m[1] : m[2]).str() +
                         "' reads files: not allowed"});
    i = e;
  }
  for (const Token& t : identifiers(code))
    if (t.text == "incbin")
      out.push_back({file, src.line_of(t.offset), "asm.host",
                     "assembler directive '.incbin' reads files: not allowed"});
}

void check_code(const std::string& file, const ScannedSource& src, std::vector<Finding>& out) {
  const bool cu = ends_with(file, ".cu") || ends_with(file, ".cuh");
  const auto host_macros = host_macros_of(src);
  check_file_operators(file, src, out);
  check_assembler_files(file, src, out);
  for (const Token& t : identifiers(src.code)) {
    int line = src.line_of(t.offset);
    if (t.text == "asm" || t.text == "__asm__" || t.text == "__asm") {
      if (!cu || !is_device_function_body(src.code, t.offset, host_macros))
        out.push_back({file, line, "asm.host",
                       "inline assembly is allowed only in __device__ or __global__ functions "
                       "(not __host__ __device__: the host assembler gets that copy)"});
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

// Reading a solution from disk: regular files inside the directory, nothing else opened.
namespace {

Error solution_error(ErrorCategory category, const std::string& code, std::string message) {
  return make_error(category, "solution." + code, std::move(message));
}

const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// " to 'TARGET'": the link's own text (never what it points to), printable and cut short.
std::string link_text(int dir_fd, const std::string& name) {
  char buf[200];
  const ssize_t n = ::readlinkat(dir_fd, name.c_str(), buf, sizeof buf);
  if (n < 0) return "";
  std::string text(buf, static_cast<std::size_t>(n));
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return " to '" + text + (n == static_cast<ssize_t>(sizeof buf) ? "...'" : "'");
}

constexpr const char* kTreeRule =
    "a solution is a tree of regular files inside its directory (no links, devices, fifos or "
    "sockets; copy a file in instead of linking it)";

// Opens the entry `name` (one path component) of `dir_fd` as a directory or a regular file. It is
// classified with lstat first, so a link, device or fifo is never opened; then opened with
// O_NOFOLLOW | O_NONBLOCK and checked again with fstat (the same inode, still the right kind), so
// an entry swapped between the two steps is refused too. `shown` names it in errors.
Expected<UniqueFd> open_entry(int dir_fd, const std::string& name, const std::string& shown,
                              bool directory, struct stat* st) {
  struct stat before {};
  if (::fstatat(dir_fd, name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
    const int e = errno;
    if (e == ENOENT)
      return solution_error(ErrorCategory::kNotFound, "not_found", "'" + shown + "' is missing");
    return solution_error(ErrorCategory::kIo, "read",
                          "cannot stat '" + shown + "': " + std::strerror(e));
  }
  auto refuse = [&](const struct stat& s) -> Error {
    std::string what = kind_of(s.st_mode);
    if (S_ISLNK(s.st_mode)) what += link_text(dir_fd, name);
    if (directory && !S_ISLNK(s.st_mode))
      return solution_error(ErrorCategory::kInvalidInput, "not_regular_file",
                            "'" + shown + "' is " + what + ", not a directory");
    return solution_error(ErrorCategory::kInvalidInput, "not_regular_file",
                          "'" + shown + "' is " + what + ": " + kTreeRule);
  };
  auto hard_linked = [&](const struct stat& s) {
    return solution_error(ErrorCategory::kInvalidInput, "hard_link",
                          "'" + shown + "' has " + std::to_string(s.st_nlink) +
                              " hard links: it may be a file outside the solution; " + kTreeRule);
  };
  const auto right_kind = [&](mode_t m) { return directory ? S_ISDIR(m) : S_ISREG(m); };
  if (!right_kind(before.st_mode)) return refuse(before);
  if (!directory && before.st_nlink > 1) return hard_linked(before);

  const int flags =
      O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (directory ? O_DIRECTORY : 0);
  UniqueFd fd(::openat(dir_fd, name.c_str(), flags));
  if (fd.fd < 0) {
    const int e = errno;
    if (e == ELOOP || e == ENOTDIR)
      return solution_error(ErrorCategory::kInvalidInput, "not_regular_file",
                            "'" + shown +
                                "' changed while it was read (now a link or another "
                                "kind of file): " +
                                kTreeRule);
    return solution_error(ErrorCategory::kIo, "read",
                          "cannot open '" + shown + "': " + std::strerror(e));
  }
  if (::fstat(fd.fd, st) != 0)
    return solution_error(ErrorCategory::kIo, "read",
                          "cannot stat '" + shown + "': " + std::strerror(errno));
  if (st->st_dev != before.st_dev || st->st_ino != before.st_ino)
    return solution_error(ErrorCategory::kInvalidInput, "not_regular_file",
                          "'" + shown + "' changed while it was read: " + kTreeRule);
  if (!right_kind(st->st_mode)) return refuse(*st);
  if (!directory && st->st_nlink > 1) return hard_linked(*st);
  return fd;
}

Error too_large(const std::string& shown, std::size_t limit) {
  return solution_error(
      ErrorCategory::kInvalidInput, "too_large",
      "'" + shown + "' is larger than " + std::to_string(limit) + " bytes, the limit per file");
}

// The bytes of an opened regular file, at most `max_bytes` (it may grow while read).
Expected<std::string> read_opened(int fd, const struct stat& st, const std::string& shown,
                                  std::size_t max_bytes) {
  if (st.st_size < 0 || static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    return too_large(shown, max_bytes);
  std::string out;
  char buf[64 << 10];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return solution_error(ErrorCategory::kIo, "read",
                            "cannot read '" + shown + "': " + std::strerror(errno));
    }
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) return too_large(shown, max_bytes);
  }
  return out;
}

Expected<std::string> read_entry(int dir_fd, const std::string& name, const std::string& shown,
                                 std::size_t max_bytes) {
  struct stat st {};
  ASSIGN_OR_RETURN(UniqueFd fd, open_entry(dir_fd, name, shown, false, &st));
  return read_opened(fd.fd, st, shown, max_bytes);
}

// The names in an opened directory, "." and ".." left out, sorted; at most `max_entries`.
Expected<std::vector<std::string>> list_entries(int dir_fd, const std::string& shown,
                                                std::size_t max_entries) {
  const int own = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  DIR* d = own < 0 ? nullptr : ::fdopendir(own);
  if (!d) {
    const int e = errno;
    if (own >= 0) ::close(own);
    return solution_error(ErrorCategory::kIo, "read",
                          "cannot list '" + shown + "': " + std::strerror(e));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
    if (names.size() > max_entries) {
      ::closedir(d);
      return solution_error(ErrorCategory::kInvalidInput, "too_large",
                            "'" + shown + "' holds more than " + std::to_string(max_entries) +
                                " entries, the most a solution may submit");
    }
  }
  const int e = errno;
  ::closedir(d);
  if (e != 0)
    return solution_error(ErrorCategory::kIo, "read",
                          "cannot list '" + shown + "': " + std::strerror(e));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Expected<std::vector<SourceFile>> read_solution_directory(const std::string& dir,
                                                          const SourceLimits& limits) {
  auto no_kernels = [&](const std::string& why) {
    return solution_error(ErrorCategory::kInvalidInput, "no_kernels",
                          "'" + dir + "' has no kernels/ directory (DESIGN.md section 4)" +
                              (why.empty() ? "" : ": " + why));
  };
  UniqueFd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC));
  if (root.fd < 0) return no_kernels(std::strerror(errno));
  struct stat st {};
  auto kernels = open_entry(root.fd, "kernels", "kernels", true, &st);
  if (!kernels) {
    if (kernels.error().category == ErrorCategory::kNotFound) return no_kernels("");
    return kernels.error();
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   list_entries(kernels->fd, "kernels/", limits.max_files));
  std::vector<SourceFile> files;
  std::size_t total = 0;
  auto add = [&](std::string path, std::string content) -> Status {
    total += content.size();
    if (total > limits.max_total_bytes)
      return solution_error(ErrorCategory::kInvalidInput, "too_large",
                            "the solution's files pass " + std::to_string(limits.max_total_bytes) +
                                " bytes in all (at '" + path + "')");
    files.push_back({std::move(path), std::move(content)});
    return Status();
  };
  for (const std::string& name : names) {
    const std::string path = "kernels/" + name;
    ASSIGN_OR_RETURN(std::string content,
                     read_entry(kernels->fd, name, path, limits.max_file_bytes));
    RETURN_IF_ERROR(add(path, std::move(content)));
  }
  auto model_new = read_entry(root.fd, "model_new.py", "model_new.py", limits.max_file_bytes);
  if (model_new) {
    RETURN_IF_ERROR(add("model_new.py", std::move(*model_new)));
  } else if (model_new.error().category != ErrorCategory::kNotFound) {
    return model_new.error();
  }
  return files;
}

Expected<std::string> read_solution_file(const std::string& dir, const std::string& relative_path,
                                         std::size_t max_bytes) {
  std::vector<std::string> parts;
  bool plain = !relative_path.empty() && relative_path[0] != '/';
  for (std::size_t b = 0; plain && b <= relative_path.size();) {
    std::size_t e = relative_path.find('/', b);
    if (e == std::string::npos) e = relative_path.size();
    std::string part = relative_path.substr(b, e - b);
    plain = !part.empty() && part != "." && part != "..";
    parts.push_back(std::move(part));
    b = e + 1;
  }
  if (!plain)
    return solution_error(ErrorCategory::kInvalidInput, "escapes_directory",
                          "'" + relative_path +
                              "' is not a plain path inside the solution (relative, no '.', '..' "
                              "or empty components)");
  UniqueFd at(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC));
  if (at.fd < 0)
    return solution_error(
        ErrorCategory::kNotFound, "not_found",
        "cannot open the solution directory '" + dir + "': " + std::strerror(errno));
  std::string shown;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    shown += parts[i];
    struct stat st {};
    ASSIGN_OR_RETURN(UniqueFd next, open_entry(at.fd, parts[i], shown, true, &st));
    at = std::move(next);
    shown += "/";
  }
  return read_entry(at.fd, parts.back(), relative_path, max_bytes);
}

}  // namespace cuda_agent::compile_farm
