#include "compile_farm/prototypes.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "compile_farm/source_checks.h"
#include "compile_farm/source_scan.h"

namespace cuda_agent::compile_farm {
namespace {

const std::map<std::string, std::string>& pointee_dtypes() {
  static const std::map<std::string, std::string> m = {{"float", "float32"},
                                                       {"__half", "float16"},
                                                       {"half", "float16"},
                                                       {"__nv_bfloat16", "bfloat16"},
                                                       {"nv_bfloat16", "bfloat16"},
                                                       {"double", "float64"},
                                                       {"int", "int32"},
                                                       {"int32_t", "int32"},
                                                       {"int64_t", "int64"},
                                                       {"long long", "int64"},
                                                       {"long long int", "int64"},
                                                       {"int8_t", "int8"},
                                                       {"int16_t", "int16"},
                                                       {"short", "int16"},
                                                       {"uint8_t", "uint8"},
                                                       {"unsigned char", "uint8"},
                                                       {"bool", "bool"}};
  return m;
}

const std::set<std::string>& integer_types() {
  static const std::set<std::string> s = {"int",       "unsigned",      "unsigned int",
                                          "long",      "unsigned long", "long int",
                                          "long long", "long long int", "unsigned long long",
                                          "int32_t",   "uint32_t",      "int64_t",
                                          "uint64_t",  "size_t",        "ptrdiff_t",
                                          "bool",      "short",         "unsigned short",
                                          "int16_t",   "uint16_t",      "int8_t",
                                          "uint8_t"};
  return s;
}

const std::set<std::string>& qualifiers() {
  static const std::set<std::string> s = {"const",      "volatile", "__restrict__",
                                          "__restrict", "restrict", "std"};
  return s;
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
      cur += c;
    else {
      flush();
      if (c == '*' || c == '&' || c == '[' || c == '(' || c == '<' || c == ':')
        out.push_back(std::string(1, c));
    }
  }
  flush();
  return out;
}

std::string join(const std::vector<std::string>& w) {
  std::string out;
  for (const auto& x : w) {
    if (!out.empty() && x != "*") out += ' ';
    out += x;
  }
  return out;
}

std::string collapse_space(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)))
      space = true;
    else {
      if (space && !out.empty()) out += ' ';
      out += c;
      space = false;
    }
  }
  return out;
}

Error prototype_error(const std::string& where, const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, "compile.prototype", where + ": " + message);
}

// Classifies one parameter; fills name, c_type, kind.
Expected<LauncherParam> classify(const std::string& where, const std::string& launcher,
                                 std::size_t index, std::string_view text, bool last) {
  std::vector<std::string> w = words(text);
  LauncherParam p;
  const std::string written = collapse_space(text);
  auto fail = [&](const std::string& why) {
    return prototype_error(where, "launcher '" + launcher + "' parameter " +
                                      std::to_string(index + 1) + " ('" + written + "'): " + why);
  };
  for (const auto& x : w)
    if (x == "&" || x == "[" || x == "(" || x == "<" || x == ":")
      return fail(
          "references, arrays, templates, qualified names and function pointers are not "
          "supported; pass a pointer or a number");
  std::size_t stars = std::count(w.begin(), w.end(), std::string("*"));
  // The name: a last identifier that is not part of the type.
  static const std::set<std::string> type_words = {
      "int",     "unsigned",      "signed",      "long",    "short",     "char",         "float",
      "double",  "bool",          "void",        "size_t",  "ptrdiff_t", "cudaStream_t", "__half",
      "half",    "__nv_bfloat16", "nv_bfloat16", "int8_t",  "int16_t",   "int32_t",      "int64_t",
      "uint8_t", "uint16_t",      "uint32_t",    "uint64_t"};
  if (w.size() >= 2 && w.back() != "*" && !type_words.count(w.back()) &&
      !qualifiers().count(w.back())) {
    p.name = w.back();
    w.pop_back();
  }
  std::vector<std::string> base;
  for (const auto& x : w)
    if (x != "*" && !qualifiers().count(x)) base.push_back(x);
  std::string base_type = join(base);
  p.c_type = join(w);
  if (stars == 1) {
    if (!pointee_dtypes().count(base_type))
      return fail("pointer to '" + base_type +
                  "' has no tensor dtype; use float, __half, __nv_bfloat16, double, int, "
                  "int64_t, int8_t, int16_t, uint8_t or bool");
    p.kind = ParamKind::kPointer;
  } else if (stars > 1) {
    return fail("pointers to pointers are not supported");
  } else if (base_type == "cudaStream_t") {
    if (!last) return fail("cudaStream_t must be the last parameter");
    p.kind = ParamKind::kStream;
  } else if (integer_types().count(base_type)) {
    p.kind = ParamKind::kInteger;
  } else if (base_type == "float" || base_type == "double") {
    p.kind = ParamKind::kFloating;
  } else {
    return fail("unsupported type '" + base_type +
                "'; pass tensors as typed pointers and sizes as integers");
  }
  return p;
}

struct Found {
  LauncherPrototype proto;
  std::string where;
  bool defined = false;  // has a body here; a bare declaration may be an import (symbol check)
  std::optional<Error> error;  // an unsupported parameter or return type
};

// Parses the function declarations in code[begin, end) (the body of an extern "C" block or the
// single declaration after extern "C").
Status parse_block(const std::string& file, const ScannedSource& src, std::size_t begin,
                   std::size_t end, bool single, std::vector<Found>& out) {
  const std::string& code = src.code;
  std::size_t i = begin;
  while (i < end) {
    std::size_t paren = code.find('(', i);
    if (paren == std::string::npos || paren >= end) break;
    std::size_t stop = code.find_first_of(";{}", i);
    if (stop != std::string::npos && stop < paren) {  // a declaration without parameters
      i = stop + 1;
      if (single) break;
      continue;
    }
    std::string where = file + ":" + std::to_string(src.line_of(paren));
    std::string head = collapse_space(std::string_view(code).substr(i, paren - i));
    std::vector<std::string> hw = words(head);
    if (hw.empty()) return prototype_error(where, "cannot read the extern \"C\" declaration");
    std::string name = hw.back();
    hw.pop_back();
    std::set<std::string> attrs = {"__host__", "inline", "static", "__forceinline__"};
    std::vector<std::string> ret;
    for (const auto& x : hw)
      if (!attrs.count(x)) ret.push_back(x);
    if (std::find(hw.begin(), hw.end(), "__global__") != hw.end() ||
        std::find(hw.begin(), hw.end(), "__device__") != hw.end())
      return prototype_error(where, "extern \"C\" '" + name +
                                        "' is a __global__ or __device__ function; model_new.py "
                                        "calls host launchers, so write an extern \"C\" launcher "
                                        "that launches it");
    std::string rt = join(ret);
    std::optional<Error> problem;
    if (rt != "void" && rt != "int" && rt != "cudaError_t")
      problem = prototype_error(where, "launcher '" + name + "' returns '" + rt +
                                           "'; launchers return void, int or cudaError_t");
    std::size_t close = matching_close(code, paren);
    if (close == std::string::npos || close > end)
      return prototype_error(where, "unbalanced parentheses in '" + name + "'");
    LauncherPrototype proto{name, {}};
    std::string params = code.substr(paren + 1, close - paren - 1);
    std::vector<std::string> pieces;
    std::string cur;
    for (char c : params) {
      if (c == ',')
        pieces.push_back(cur), cur.clear();
      else
        cur += c;
    }
    pieces.push_back(cur);
    if (!(pieces.size() == 1 &&
          (collapse_space(pieces[0]).empty() || collapse_space(pieces[0]) == "void")))
      for (std::size_t k = 0; k < pieces.size() && !problem; ++k) {
        auto p = classify(where, name, k, pieces[k], k + 1 == pieces.size());
        if (p)
          proto.params.push_back(std::move(*p));
        else
          problem = p.error();
      }
    std::size_t after = code.find_first_not_of(" \t\r\n", close + 1);
    const bool defined = after != std::string::npos && code[after] == '{';
    out.push_back({std::move(proto), where, defined, std::move(problem)});
    if (defined) {
      std::size_t body_end = matching_close(code, after);
      if (body_end == std::string::npos) return prototype_error(where, "unbalanced braces");
      i = body_end + 1;
    } else {
      std::size_t semi = code.find(';', close);
      i = semi == std::string::npos ? end : semi + 1;
    }
    if (single) break;
  }
  return Status();
}

}  // namespace

std::string pointer_dtype(const std::string& c_type) {
  std::vector<std::string> base;
  for (const auto& x : words(c_type))
    if (x != "*" && !qualifiers().count(x)) base.push_back(x);
  auto it = pointee_dtypes().find(join(base));
  return it == pointee_dtypes().end() ? "" : it->second;
}

Expected<std::vector<LauncherPrototype>> parse_launchers(const std::vector<SourceFile>& files) {
  std::vector<Found> found;
  for (const SourceFile& f : files) {
    if (!is_compiled_source(f.path) && !is_header(f.path)) continue;
    ScannedSource src = scan_source(f.content);
    const std::string& ws = src.with_strings;
    for (std::size_t p = ws.find("extern"); p != std::string::npos; p = ws.find("extern", p + 6)) {
      std::size_t q = ws.find_first_not_of(" \t\r\n", p + 6);
      if (q == std::string::npos || ws.compare(q, 3, "\"C\"") != 0) continue;
      std::size_t r = ws.find_first_not_of(" \t\r\n", q + 3);
      if (r == std::string::npos) break;
      if (ws[r] == '{') {
        std::size_t e = matching_close(src.code, r);
        if (e == std::string::npos)
          return prototype_error(f.path + ":" + std::to_string(src.line_of(r)),
                                 "unbalanced extern \"C\" block");
        RETURN_IF_ERROR(parse_block(f.path, src, r + 1, e, false, found));
      } else {
        RETURN_IF_ERROR(parse_block(f.path, src, r, src.code.size(), true, found));
      }
    }
  }
  // Launchers are the extern "C" functions the solution defines; a declaration of one (in a
  // header) must agree with it. A declaration alone names something imported, which the
  // symbol check judges.
  std::set<std::string> defined;
  for (const Found& f : found)
    if (f.defined) defined.insert(f.proto.name);
  std::stable_partition(found.begin(), found.end(), [](const Found& f) { return f.defined; });
  std::vector<LauncherPrototype> out;
  std::map<std::string, std::size_t> seen;
  for (Found& f : found) {
    if (!defined.count(f.proto.name)) continue;
    if (f.error) return *f.error;
    auto it = seen.find(f.proto.name);
    if (it == seen.end()) {
      seen[f.proto.name] = out.size();
      out.push_back(std::move(f.proto));
      continue;
    }
    // A declaration and a definition must agree on the types.
    const LauncherPrototype& first = out[it->second];
    bool same = first.params.size() == f.proto.params.size();
    for (std::size_t k = 0; same && k < first.params.size(); ++k)
      same = first.params[k].c_type == f.proto.params[k].c_type;
    if (!same)
      return prototype_error(f.where, "launcher '" + f.proto.name +
                                          "' is declared twice with different parameter types");
  }
  if (out.empty())
    return make_error(ErrorCategory::kInvalidInput, "compile.no_launcher",
                      "no extern \"C\" launcher found in kernels/; model_new.py needs at least "
                      "one (DESIGN.md section 4)");
  return out;
}

}  // namespace cuda_agent::compile_farm
