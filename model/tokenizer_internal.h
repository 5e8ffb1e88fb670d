// The loaded tables behind model/tokenizer.h, shared by tokenizer_load.cpp (which fills them from
// tokenizer.json) and tokenizer.cpp (encode/decode). Not for use outside model/.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/pcre_regex.h"
#include "model/tokenizer.h"

namespace cuda_agent {

/// GPT-2's bytes_to_unicode: byte b is spelled as this code point in byte-level tokens.
const std::array<char32_t, 256>& byte_to_unicode();
/// Spelling of raw bytes in byte-level form (UTF-8 of the mapped code points).
std::string byte_level_spelling(std::string_view bytes);
/// Raw bytes of a byte-level spelling; false if a character is not one of the 256 byte symbols.
bool byte_level_bytes(std::string_view spelling, std::string& out);

/// One step of the pre-tokenizer, applied to every piece the previous steps left.
struct PreTokenizeStep {
  enum class Kind : std::uint8_t { kSplit, kByteLevel } kind = Kind::kSplit;
  std::shared_ptr<const PcreRegex> regex;  // kSplit: the pattern; kByteLevel: GPT-2's or null
  bool remove_matches = false;             // kSplit: behavior Removed (else Isolated)
  bool invert = false;                     // kSplit: the gaps are the matches
  bool add_prefix_space = false;           // kByteLevel
};

struct TokenizerData {
  std::string origin;
  bool nfc = false;
  std::vector<PreTokenizeStep> pre_tokenize;

  // BPE over raw bytes (vocab spellings decoded from byte-level form).
  std::unordered_map<std::string, TokenId> vocab_by_bytes;
  std::array<TokenId, 256> byte_ids{};
  struct Merge {
    std::uint32_t rank;
    TokenId result;
  };
  std::unordered_map<std::uint64_t, Merge> merges;  // (left << 32 | right)
  bool ignore_merges = false;

  // Every id: its spelling (for token_to_id / id_to_token) and its bytes (for decode).
  std::unordered_map<std::string, TokenId> id_by_spelling;
  std::vector<std::string> spelling;  // "" for unused ids
  std::vector<std::string> bytes;
  std::vector<std::uint8_t> flags;  // kUsed | kSpecial | kAdded
  static constexpr std::uint8_t kUsed = 1, kSpecial = 2, kAdded = 4;

  std::vector<AddedToken> added;
  std::vector<std::uint32_t> raw_added;         // indices into `added`, normalized == false
  std::vector<std::uint32_t> normalized_added;  // normalized == true
  std::vector<std::string> normalized_content;  // per `added` entry, after the normalizer

  std::vector<TokenId> template_prefix;  // post-processor, with add_special_tokens
  std::vector<TokenId> template_suffix;

  // Word cache: BPE result per pre-tokenized word (raw bytes). Bounded; cleared when full.
  static constexpr std::size_t kCacheEntries = 1 << 16;
  static constexpr std::size_t kCacheMaxWordBytes = 64;
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<TokenId>> cache;
};

/// Appends code point `c` to `out` in UTF-8 (1 to 4 bytes; `c` must be a valid code point).
void append_utf8(std::string& out, char32_t c);

/// Normalizes `text` to NFC (utf8proc). Errors only when utf8proc fails.
/// Texts made only of `nfc_inert` code points are returned as they are, without utf8proc.
Status nfc_normalize(std::string_view text, std::string& out);
/// Code points that NFC leaves alone and that never combine with a neighbour (no canonical
/// decomposition NFC changes, combining class 0, not the second half of a composition): a text
/// of these alone is already NFC. Conservative ranges (Latin to U+02FF, Cyrillic, general
/// punctuation, kana, CJK, Hangul syllables, fullwidth forms, emoji); tested against utf8proc.
bool nfc_inert(char32_t c);

/// Whether `text`'s last (first) character is a word character (Unicode \w), for `single_word`.
bool ends_with_word_char(std::string_view text);
bool starts_with_word_char(std::string_view text);
/// Byte length of the whitespace (Unicode White_Space) at the end (start) of `text`.
std::size_t trailing_whitespace_bytes(std::string_view text);
std::size_t leading_whitespace_bytes(std::string_view text);

}  // namespace cuda_agent
