#include "compile_farm/source_scan.h"

#include <algorithm>
#include <cctype>

namespace cuda_agent::compile_farm {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

int ScannedSource::line_of(std::size_t offset) const {
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  return static_cast<int>(it - line_starts.begin());
}

ScannedSource scan_source(std::string_view text) {
  ScannedSource out;
  out.code.assign(text);
  out.with_strings.assign(text);
  out.line_starts.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') out.line_starts.push_back(i + 1);

  auto blank = [&](std::string& s, std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < s.size(); ++k)
      if (s[k] != '\n') s[k] = ' ';
  };
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      std::size_t e = i;
      while (e < n && text[e] != '\n') {
        if (text[e] == '\\' && e + 1 < n && text[e + 1] == '\n') ++e;  // continued comment
        ++e;
      }
      blank(out.code, i, e);
      blank(out.with_strings, i, e);
      i = e;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      std::size_t e = text.find("*/", i + 2);
      e = e == std::string_view::npos ? n : e + 2;
      blank(out.code, i, e);
      blank(out.with_strings, i, e);
      i = e;
    } else if (c == 'R' && i + 1 < n && text[i + 1] == '"' &&
               (i == 0 || !ident_char(text[i - 1]))) {
      std::size_t paren = text.find('(', i + 2);
      if (paren == std::string_view::npos) break;
      std::string close = ")" + std::string(text.substr(i + 2, paren - i - 2)) + "\"";
      std::size_t e = text.find(close, paren + 1);
      e = e == std::string_view::npos ? n : e + close.size();
      blank(out.code, i + 2, e - 1);
      i = e;
    } else if (c == '"' ||
               (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
      // A ' after a hex digit is a digit separator (1'000), not a character literal.
      std::size_t e = i + 1;
      while (e < n && text[e] != c && text[e] != '\n') e += text[e] == '\\' ? 2 : 1;
      e = std::min(e, n);
      blank(out.code, i + 1, e);
      i = e + 1;
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<Directive> directives(const ScannedSource& source) {
  std::vector<Directive> out;
  const std::string& s = source.with_strings;
  for (std::size_t li = 0; li < source.line_starts.size(); ++li) {
    std::size_t p = source.line_starts[li];
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
    if (p >= s.size() || s[p] != '#') continue;
    ++p;
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
    std::size_t name_end = p;
    while (name_end < s.size() && ident_char(s[name_end])) ++name_end;
    std::string arg;
    std::size_t e = name_end;
    while (e < s.size() && s[e] != '\n') {
      if (s[e] == '\\' && e + 1 < s.size() && s[e + 1] == '\n') {
        arg += ' ';
        e += 2;
        continue;
      }
      arg += s[e++];
    }
    out.push_back({s.substr(p, name_end - p), trim(arg), static_cast<int>(li + 1)});
  }
  return out;
}

std::vector<Token> identifiers(const std::string& code) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < code.size()) {
    if (std::isdigit(static_cast<unsigned char>(code[i]))) {  // a number, suffix included
      while (i < code.size() && (ident_char(code[i]) || code[i] == '.')) ++i;
    } else if (ident_char(code[i])) {
      std::size_t b = i;
      while (i < code.size() && ident_char(code[i])) ++i;
      out.push_back({std::string_view(code).substr(b, i - b), b});
    } else {
      ++i;
    }
  }
  return out;
}

std::size_t matching_close(const std::string& code, std::size_t open) {
  char o = code[open];
  char c = o == '(' ? ')' : o == '{' ? '}' : o == '[' ? ']' : '>';
  if (o == '<') {  // "<<<" ... ">>>"
    std::size_t e = code.find(">>>", open + 3);
    return e == std::string::npos ? e : e + 2;
  }
  int depth = 0;
  for (std::size_t i = open; i < code.size(); ++i) {
    if (code[i] == o)
      ++depth;
    else if (code[i] == c && --depth == 0)
      return i;
  }
  return std::string::npos;
}

}  // namespace cuda_agent::compile_farm
