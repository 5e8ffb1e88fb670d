// A small but realistic tokenizer.json: a byte-level BPE in the Qwen2 layout (NFC normalizer,
// Qwen2's pre-tokenizer regex, ByteLevel, ChatML special tokens and the Qwen2.5/Qwen3 tool and
// think tags as added tokens), with merges learnt from a built-in corpus of prose, C++/CUDA,
// Python and JSON by a plain BPE trainer. Used by the tests and by `cuda-agent model
// init-tokenizer` and `model init --tiny` so that everything above the tokenizer can run without
// downloading a model. `extra_text` adds training text (`model init --tokenizer-corpus`: the
// transcripts a small model will be trained on), so that the merges fit that text: fewer tokens
// per transcript for the same vocabulary size.
//
// The output is deterministic: the same options give byte-identical JSON; without extra_text it
// is the same JSON whatever the version of the trainer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// Qwen2's (and Qwen2.5's, Qwen3's) pre-tokenizer regex, as in their tokenizer.json.
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// Llama-3's: digits in runs of up to three.
inline constexpr std::string_view kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct TinyTokenizerOptions {
  /// Merges to learn (fewer when the corpus runs out of pairs seen at least twice). Ids: bytes
  /// are 0..255 by byte value, merges 256.., then the added tokens.
  int merges = 500;
  /// Qwen2's NFC normalizer; off gives an exact round trip for any UTF-8 text.
  bool nfc = true;
  /// Training text besides the built-in corpus, each normalized as `encode` will normalize it
  /// and cut at the added tokens (<|im_start|>, <tool_call>, ...), which stay single tokens.
  /// Default: none (the built-in corpus alone).
  std::vector<std::string> extra_text;
};

/// The tokenizer.json text. Errors only if the built-in regex failed to compile (a bug).
Expected<std::string> tiny_tokenizer_json(const TinyTokenizerOptions& options = {});

/// Writes `dir`/tokenizer.json (creating `dir`). Errors: kIo naming the path.
Status write_tiny_tokenizer(const std::string& dir, const TinyTokenizerOptions& options = {});

}  // namespace cuda_agent
