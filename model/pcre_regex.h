// A compiled PCRE2 pattern (UTF + UCP, JIT) that finds every non-overlapping match in a text, as
// the `tokenizers` library's Split pre-tokenizer does with Oniguruma. Used by the tokenizer
// (model/tokenizer.h) and the tiny-tokenizer trainer (model/tiny_tokenizer.h).
//
// Threading: a PcreRegex is immutable once compiled; `find_all` may run on any number of threads
// at once (match data and the JIT stack are per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// Byte range [first, second) of one match.
using MatchSpan = std::pair<std::uint32_t, std::uint32_t>;

class PcreRegex {
 public:
  /// Compiles `pattern` (a literal string when `literal`). Oniguruma's `\s` (what `tokenizers`
  /// uses) matches U+0085 and PCRE2's does not, so `\s` and `\S` are rewritten to agree; `\p{L}`
  /// and `\p{N}` gain the letters and numbers PCRE2's Unicode 14 tables lack (those of utf8proc,
  /// and CJK extension I and Egyptian hieroglyphs extended-A). The first compile builds those sets
  /// (about 0.1 s).
  /// Errors: kInvalidInput "tokenizer.bad_regex" naming `where` and PCRE2's message and offset.
  static Expected<std::shared_ptr<const PcreRegex>> compile(std::string_view pattern, bool literal,
                                                            std::string_view where);
  ~PcreRegex();
  PcreRegex(const PcreRegex&) = delete;
  PcreRegex& operator=(const PcreRegex&) = delete;

  /// Appends the span of every non-overlapping match in `text` (valid UTF-8: not checked here)
  /// to `out`, leftmost first; empty matches are skipped. Errors: kInternal when PCRE2 fails
  /// (e.g. its JIT stack limit), naming `where`.
  Status find_all(std::string_view text, std::vector<MatchSpan>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  PcreRegex() = default;
  void* code_ = nullptr;  // pcre2_code_8*; void keeps pcre2.h out of this header
  std::string pattern_;   // after the \s rewrite
  std::string where_;
};

/// The pattern with Oniguruma's `\s` meaning: `\s` -> `[\s\x{85}]`, `\S` -> `[^\s\x{85}]`, and
/// `\s` inside a class gains `\x{85}`; `\p{L}` / `\p{N}` gain the newer code points. Exposed for
/// tests.
std::string onig_compatible_pattern(std::string_view pattern);

}  // namespace cuda_agent
