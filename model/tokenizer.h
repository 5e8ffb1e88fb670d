// The policy model's tokenizer: a byte-level BPE read from a Hugging Face `tokenizer.json`, torch
// free, giving the same ids as the `tokenizers` library for the Qwen2, Qwen2.5, Qwen3, Llama-3
// and GPT-2 layouts (scripts/gpu/check_tokenizer.py compares the two on >= 10,000 strings each;
// results in docs/GPU_VALIDATION.md).
//
//   ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::load("/models/qwen/tokenizer.json"));
//   ASSIGN_OR_RETURN(std::vector<TokenId> ids, tok.encode("int main() {}"));
//   ASSIGN_OR_RETURN(std::string text, tok.decode(ids));  // == the input (after NFC, see below)
//
// What `load` accepts (anything else is an Error naming the file and the JSON path):
//  - model: {"type": "BPE"} with `vocab` and `merges` ("a b" strings or ["a", "b"] pairs),
//    `ignore_merges` (Llama-3), `byte_fallback` false, no dropout, no continuing-subword prefix
//    or end-of-word suffix (`unk_token` is ignored: every byte has a token);
//  - normalizer: null, NFC (through utf8proc), or a Sequence of NFC;
//  - pre_tokenizer: ByteLevel (GPT-2's regex when `use_regex`), or a Sequence of Split
//    (Regex or String pattern, behavior Isolated or Removed, `invert`) and one ByteLevel;
//  - decoder: ByteLevel; post_processor: null, ByteLevel, TemplateProcessing (its `single`
//    template: special tokens around $A, e.g. Llama-3's <|begin_of_text|>), or a Sequence of those;
//  - added_tokens: matched in the text before pre-tokenization, leftmost and then longest
//    first, as `tokenizers` does: tokens with `normalized: false` on the raw text, the others on
//    the normalized pieces; `single_word` (not next to a letter, digit or '_'), `lstrip` and
//    `rstrip` (swallow the whitespace on that side) are honoured.
// Every byte must have a vocab entry (so every valid UTF-8 string encodes and decodes back).
//
// Regex patterns run on PCRE2 (UTF + UCP, JIT). `tokenizers` runs them on Oniguruma, whose `\s`
// also matches U+0085 and whose Unicode tables are newer; patterns are rewritten so that `\s`,
// `\p{L}` and `\p{N}` agree (model/pcre_regex.h). Most scripts new in Unicode 16 (Garay,
// Sunuwar, ...) are still unknown here: text next to them can split differently.
//
// Loading a 150k-token file takes about 1.7 s on the CPU machine (0.65 s of it JSON parsing).
//
// Round trip: decode(encode(s)) == s for every valid UTF-8 s when the normalizer is null; with
// NFC it is NFC(s) (what the model sees). Invalid UTF-8 is refused with an Error giving the
// offset of the first bad byte.
//
// Threading: a loaded Tokenizer is immutable apart from its word cache, which a mutex guards;
// every method may be called from any number of threads. Copies share the loaded tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// A token id, as in the model's embedding table and on the wire (messages/trajectory_codec.h).
using TokenId = std::uint32_t;

/// A token of `added_tokens` in tokenizer.json.
struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;  ///< control token (<|im_start|>); `decode(skip_special)` drops it
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  ///< matched after the normalizer rather than on the raw text
};

struct TokenizerData;  // the loaded tables (tokenizer_internal.h)

class Tokenizer {
 public:
  /// Reads `path`: a tokenizer.json file, or a directory holding one. Errors: kNotFound when the
  /// file is missing, kInvalidInput ("tokenizer.unsupported" / "tokenizer.malformed") with the
  /// file and JSON path for anything this class does not implement or that is inconsistent.
  static Expected<Tokenizer> load(const std::string& path);
  /// Parses tokenizer.json text; `origin` names it in errors.
  static Expected<Tokenizer> from_json(std::string_view json_text, std::string_view origin);

  /// Token ids of `text` (valid UTF-8, else kInvalidInput "tokenizer.invalid_utf8" with the
  /// byte offset). With `add_special_tokens` the post-processor's template applies (Llama-3's
  /// BOS in front), as `tokenizers`' `encode(text, add_special_tokens=True)`.
  Expected<std::vector<TokenId>> encode(std::string_view text,
                                        bool add_special_tokens = false) const;

  /// The bytes the ids stand for, exactly: pieces of a multi-byte character split across calls
  /// join back when the results are concatenated. Added tokens give their content; with
  /// `skip_special` special ones give nothing. An id out of range is an Error.
  Expected<std::string> decode(std::span<const TokenId> ids, bool skip_special = false) const;
  /// As `decode`, then invalid UTF-8 replaced by U+FFFD (what `tokenizers` returns).
  Expected<std::string> decode_lossy(std::span<const TokenId> ids, bool skip_special = false) const;

  /// The id of a vocab entry or added token, by its tokenizer.json spelling.
  std::optional<TokenId> token_to_id(std::string_view token) const;
  /// The tokenizer.json spelling of an id (byte-level form for vocab entries); nullopt if unused.
  std::optional<std::string> id_to_token(TokenId id) const;

  /// One more than the largest id in the vocab or the added tokens (the embedding rows needed).
  std::size_t vocab_size() const;
  /// The added tokens, in tokenizer.json order.
  const std::vector<AddedToken>& added_tokens() const;
  bool is_special(TokenId id) const;
  /// Ids of the special added tokens (<|im_start|>, <|endoftext|>, ...), in tokenizer.json order.
  std::vector<TokenId> special_ids() const;
  /// The file or origin it was loaded from.
  const std::string& origin() const;

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerData> data) : data_(std::move(data)) {}
  std::shared_ptr<const TokenizerData> data_;
};

/// Offset of the first byte of `text` that is not part of a well-formed UTF-8 sequence
/// (overlong forms, surrogates and code points above U+10FFFF included), or nullopt.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

}  // namespace cuda_agent
