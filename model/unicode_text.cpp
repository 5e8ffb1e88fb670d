// Unicode helpers of the tokenizer: UTF-8 validation, GPT-2's byte-level alphabet, NFC through
// ICU, and the character classes `tokenizers` uses for added-token matching.
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "model/tokenizer_internal.h"

namespace cuda_agent {
namespace {

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

// Unicode \w as the Rust regex crate defines it (what `tokenizers` checks for `single_word`).
// Letters from Unicode versions newer than ICU's are added as model/pcre_regex.cpp adds them.
bool is_word_char(UChar32 c) {
  if (c == '_') return true;
  if ((c >= 0x2EBF0 && c <= 0x2EE5D) || (c >= 0x13460 && c <= 0x143FA)) return true;
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
    return true;
  int8_t type = u_charType(c);
  return type == U_NON_SPACING_MARK || type == U_ENCLOSING_MARK ||
         type == U_COMBINING_SPACING_MARK || type == U_DECIMAL_DIGIT_NUMBER ||
         type == U_CONNECTOR_PUNCTUATION;
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
    std::int32_t offset = static_cast<std::int32_t>(i);
    UChar32 c;
    U8_NEXT(s, offset, static_cast<std::int32_t>(n), c);
    if (c < 0) return i;
    i = static_cast<std::size_t>(offset);
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
  std::int32_t n = static_cast<std::int32_t>(spelling.size());
  std::int32_t i = 0;
  while (i < n) {
    UChar32 c;
    U8_NEXT(s, i, n, c);
    if (c < 0) return false;
    auto it = t.to_byte.find(static_cast<char32_t>(c));
    if (it == t.to_byte.end()) return false;
    out += static_cast<char>(it->second);
  }
  return true;
}

Status nfc_normalize(std::string_view text, std::string& out) {
  bool ascii = true;
  for (unsigned char c : text) ascii &= c < 0x80;
  if (ascii) {
    out.assign(text);
    return Status::ok();
  }
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&status);
  std::vector<UChar> utf16(text.size() + 1);
  std::int32_t len16 = 0;
  if (U_SUCCESS(status)) {
    u_strFromUTF8(utf16.data(), static_cast<std::int32_t>(utf16.size()), &len16, text.data(),
                  static_cast<std::int32_t>(text.size()), &status);
  }
  if (U_SUCCESS(status) && unorm2_spanQuickCheckYes(nfc, utf16.data(), len16, &status) == len16 &&
      U_SUCCESS(status)) {
    out.assign(text);
    return Status::ok();
  }
  // NFC of a UTF-16 string is at most three times longer.
  std::vector<UChar> normalized(static_cast<std::size_t>(len16) * 3 + 1);
  std::int32_t len_norm = 0;
  if (U_SUCCESS(status)) {
    len_norm = unorm2_normalize(nfc, utf16.data(), len16, normalized.data(),
                                static_cast<std::int32_t>(normalized.size()), &status);
  }
  std::int32_t len8 = 0;
  if (U_SUCCESS(status)) {
    out.resize(static_cast<std::size_t>(len_norm) * 3 + 1);
    u_strToUTF8(out.data(), static_cast<std::int32_t>(out.size()), &len8, normalized.data(),
                len_norm, &status);
  }
  if (U_FAILURE(status)) {
    return make_error(ErrorCategory::kInternal, "tokenizer.nfc_failed",
                      std::string("ICU NFC normalization failed: ") + u_errorName(status));
  }
  out.resize(static_cast<std::size_t>(len8));
  return Status::ok();
}

bool ends_with_word_char(std::string_view text) {
  if (text.empty()) return false;
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::int32_t i = static_cast<std::int32_t>(text.size());
  UChar32 c;
  U8_PREV(s, 0, i, c);
  return c >= 0 && is_word_char(c);
}

bool starts_with_word_char(std::string_view text) {
  if (text.empty()) return false;
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::int32_t i = 0;
  UChar32 c;
  U8_NEXT(s, i, static_cast<std::int32_t>(text.size()), c);
  return c >= 0 && is_word_char(c);
}

std::size_t trailing_whitespace_bytes(std::string_view text) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::int32_t i = static_cast<std::int32_t>(text.size());
  while (i > 0) {
    std::int32_t before = i;
    UChar32 c;
    U8_PREV(s, 0, i, c);
    if (c < 0 || !u_isUWhiteSpace(c)) return text.size() - static_cast<std::size_t>(before);
  }
  return text.size();
}

std::size_t leading_whitespace_bytes(std::string_view text) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  std::int32_t n = static_cast<std::int32_t>(text.size());
  std::int32_t i = 0;
  while (i < n) {
    std::int32_t before = i;
    UChar32 c;
    U8_NEXT(s, i, n, c);
    if (c < 0 || !u_isUWhiteSpace(c)) return static_cast<std::size_t>(before);
  }
  return text.size();
}

}  // namespace cuda_agent
