// Test helper: a hand-made byte-level BPE tokenizer.json whose encodings can be worked out by
// hand. Ids: byte b is id b; merges in `merges` get ids 256.. in order; `extra_vocab` entries
// follow; added tokens carry their own ids.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "model/tiny_tokenizer.h"
#include "model/tokenizer_internal.h"

namespace cuda_agent::testing {

struct HandTokenizer {
  std::vector<std::pair<std::string, std::string>> merges;  // raw bytes, e.g. {" ", "w"}
  std::vector<std::string> extra_vocab;                     // raw bytes
  bool pair_format = false;                                 // ["a","b"] instead of "a b"
  bool ignore_merges = false;
  std::string pattern = std::string(kQwen2SplitPattern);
  nlohmann::json added_tokens = nlohmann::json::array();
  nlohmann::json post_processor = nullptr;
  nlohmann::json normalizer = nullptr;

  nlohmann::json json() const {
    nlohmann::json vocab = nlohmann::json::object();
    int next = 0;
    for (int b = 0; b < 256; ++b) vocab[byte_level_spelling(std::string(1, char(b)))] = next++;
    nlohmann::json merge_list = nlohmann::json::array();
    for (const auto& [l, r] : merges) {
      std::string ls = byte_level_spelling(l), rs = byte_level_spelling(r);
      if (!vocab.contains(ls + rs)) vocab[ls + rs] = next++;
      if (pair_format) {
        merge_list.push_back({ls, rs});
      } else {
        merge_list.push_back(ls + " " + rs);
      }
    }
    for (const std::string& v : extra_vocab) vocab[byte_level_spelling(v)] = next++;
    nlohmann::json byte_level = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
    return {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", added_tokens},
            {"normalizer", normalizer},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Split"},
                 {"pattern", {{"Regex", pattern}}},
                 {"behavior", "Isolated"},
                 {"invert", false}},
                byte_level}}}},
            {"post_processor", post_processor},
            {"decoder", byte_level},
            {"model",
             {{"type", "BPE"},
              {"ignore_merges", ignore_merges},
              {"vocab", vocab},
              {"merges", merge_list}}}};
  }
};

inline nlohmann::json added_token(int id, const std::string& content, bool special,
                                  bool lstrip = false, bool rstrip = false,
                                  bool single_word = false) {
  return {{"id", id},          {"content", content}, {"single_word", single_word},
          {"lstrip", lstrip},  {"rstrip", rstrip},   {"normalized", false},
          {"special", special}};
}

}  // namespace cuda_agent::testing
