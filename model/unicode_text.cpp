// Unicode helpers of the tokenizer: UTF-8 validation, GPT-2's byte-level alphabet, NFC and
// general categories through utf8proc (Debian 12: 2.8, Unicode 15.0), and the character
// classes `tokenizers` uses for added-token matching.
#include <utf8proc.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "model/tokenizer_internal.h"

namespace cuda_agent {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

namespace {

struct ByteTables {
  std::array<char32_t, 256> to_unicode{};
  std::array<std::string, 256> spelling;  // UTF-8 of to_unicode[b]
  std::unordered_map<char32_t, std::uint8_t> to_byte;
  ByteTables() {
    // GPT-2: printable Latin-1 bytes stand for themselves, the rest map to U+0100 onwards.
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_unicode[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      append_utf8(spelling[b], to_unicode[b]);
      to_byte[to_unicode[b]] = static_cast<std::uint8_t>(b);
    }
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

// Length of the well-formed UTF-8 sequence at s[i..n), or 0 (overlong forms, surrogates and
// code points above U+10FFFF are ill-formed). `cp` gets the code point.
std::size_t utf8_sequence(const std::uint8_t* s, std::size_t i, std::size_t n, char32_t& cp) {
  std::uint8_t b0 = s[i];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t len;
  std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > n) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    std::uint8_t b = s[i + k];
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return len;
}

// Start of the character that ends at s[end) (s is valid UTF-8).
std::size_t previous_start(const std::uint8_t* s, std::size_t end) {
  std::size_t i = end - 1;
  while (i > 0 && (s[i] & 0xC0) == 0x80) --i;
  return i;
}

// Unicode White_Space (what Rust's `char::is_whitespace` and regex `\s` use).
bool is_white_space(char32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Unicode \w as the Rust regex crate defines it (what `tokenizers` checks for `single_word`):
// Alphabetic (letters, letter numbers, marks, the circled and squared letters), marks,
// decimal digits, connector punctuation, join controls. Letters from Unicode versions newer
// than utf8proc's are added as model/pcre_regex.cpp adds them.
bool is_word_char(char32_t c) {
  if (c == '_' || c == 0x200C || c == 0x200D) return true;
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
      (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189))
    return true;
  if ((c >= 0x2EBF0 && c <= 0x2EE5D) || (c >= 0x13460 && c <= 0x143FA) ||
      (c >= 0x1E5D0 && c <= 0x1E5FA) || (c >= 0x16D70 && c <= 0x16D79))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC: return true;
    default: return false;
  }
}

}  // namespace

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII fast path, eight bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t word;
      std::memcpy(&word, s + i, 8);
      if (word & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    char32_t cp;
    std::size_t len = utf8_sequence(s, i, n, cp);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

const std::array<char32_t, 256>& byte_to_unicode() { return byte_tables().to_unicode; }

std::string byte_level_spelling(std::string_view bytes) {
  const ByteTables& t = byte_tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += t.spelling[b];
  return out;
}

bool byte_level_bytes(std::string_view spelling, std::string& out) {
  const ByteTables& t = byte_tables();
  out.clear();
  const auto* s = reinterpret_cast<const std::uint8_t*>(spelling.data());
  std::size_t n = spelling.size();
  for (std::size_t i = 0; i < n;) {
    char32_t c;
    std::size_t len = utf8_sequence(s, i, n, c);
    if (len == 0) return false;
    auto it = t.to_byte.find(c);
    if (it == t.to_byte.end()) return false;
    out += static_cast<char>(it->second);
    i += len;
  }
  return true;
}

bool nfc_inert(char32_t c) {
  return c < 0x300 || (c >= 0x400 && c < 0x483) || (c >= 0x48A && c < 0x530) ||
         (c >= 0x2010 && c < 0x2070) || (c >= 0x3040 && c < 0x3099) ||
         (c >= 0x309B && c < 0x3100) || (c >= 0x4E00 && c < 0xA000) ||
         (c >= 0xAC00 && c < 0xD7A4) || (c >= 0xFF01 && c < 0xFF9E) ||
         (c >= 0x1F300 && c < 0x1FB00);
}

Status nfc_normalize(std::string_view text, std::string& out) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  bool inert = true;
  for (std::size_t i = 0; i < text.size() && inert;) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    char32_t c;
    std::size_t len = utf8_sequence(s, i, text.size(), c);
    inert = len != 0 && nfc_inert(c);
    i += len;
  }
  if (inert) {
    out.assign(text);
    return Status::ok();
  }
  utf8proc_uint8_t* result = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &result,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    std::free(result);
    return make_error(ErrorCategory::kInternal, "tokenizer.nfc_failed",
                      std::string("utf8proc NFC normalization failed: ") + utf8proc_errmsg(n));
  }
  out.assign(reinterpret_cast<const char*>(result), static_cast<std::size_t>(n));
  std::free(result);
  return Status::ok();
}

bool ends_with_word_char(std::string_view text) {
  if (text.empty()) return false;
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::size_t start = previous_start(s, text.size());
  char32_t c;
  return utf8_sequence(s, start, text.size(), c) != 0 && is_word_char(c);
}

bool starts_with_word_char(std::string_view text) {
  if (text.empty()) return false;
  char32_t c;
  return utf8_sequence(reinterpret_cast<const std::uint8_t*>(text.data()), 0, text.size(), c) !=
             0 &&
         is_word_char(c);
}

std::size_t trailing_whitespace_bytes(std::string_view text) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = previous_start(s, end);
    char32_t c;
    if (utf8_sequence(s, start, end, c) == 0 || !is_white_space(c)) break;
    end = start;
  }
  return text.size() - end;
}

std::size_t leading_whitespace_bytes(std::string_view text) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t c;
    std::size_t len = utf8_sequence(s, i, text.size(), c);
    if (len == 0 || !is_white_space(c)) break;
    i += len;
  }
  return i;
}

}  // namespace cuda_agent
