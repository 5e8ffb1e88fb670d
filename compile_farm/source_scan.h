// A lexical view of one C++/CUDA source for the compile farm's checks: comments removed, string and
// character literal contents blanked, line numbers kept. Not a parser: enough to find directives,
// identifiers, calls, `extern "C"` declarations and function bodies reliably in code that compiles.
//
//   ScannedSource s = scan_source(text);
//   s.code          // comments -> spaces; literal contents -> spaces (quotes kept); same length
//   s.with_strings  // comments -> spaces; literals kept (for #include "..." and extern "C")
//   s.line_of(offset)
//
// Raw string literals (R"x(...)x"), escaped quotes, line continuations and both comment styles
// are handled. Threading: plain values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cuda_agent::compile_farm {

struct ScannedSource {
  std::string code;
  std::string with_strings;
  std::vector<std::size_t> line_starts;  // offset of each line's first byte; line 1 at index 0

  /// 1-based line of a byte offset.
  int line_of(std::size_t offset) const;
};

ScannedSource scan_source(std::string_view text);

/// One preprocessor directive: its name ("include", "define", ...), the rest of its text with
/// continuations joined, and the line it starts on.
struct Directive {
  std::string name;
  std::string argument;  // from with_strings, trimmed
  int line = 0;
};
std::vector<Directive> directives(const ScannedSource& source);

/// Identifier tokens of `code` with their offsets, in order (preprocessor lines included).
struct Token {
  std::string_view text;
  std::size_t offset = 0;
};
std::vector<Token> identifiers(const std::string& code);

/// Offset of the bracket matching the one at `open` ('(' '{' '[' or '<' for "<<<"), or npos.
std::size_t matching_close(const std::string& code, std::size_t open);

}  // namespace cuda_agent::compile_farm
