// The tiny tokenizer's trainer: the built-in tokenizers stay byte-identical to the ones earlier
// builds wrote (tests and runs made with them keep their ids), and extra training text gives merges
// that fit it while the chat tokens stay single added tokens.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/chat_format.h"
#include "model/tiny_tokenizer.h"
#include "model/tokenizer.h"

namespace cuda_agent {
namespace {

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Tokenizer load(const TinyTokenizerOptions& options) {
  Expected<std::string> text = tiny_tokenizer_json(options);
  EXPECT_TRUE(text) << text.error().to_string();
  Expected<Tokenizer> t = Tokenizer::from_json(*text, "tiny");
  EXPECT_TRUE(t) << t.error().to_string();
  return std::move(t).value();
}

std::size_t count_tokens(const Tokenizer& t, const std::string& text) {
  Expected<std::vector<TokenId>> ids = t.encode(text);
  EXPECT_TRUE(ids) << ids.error().to_string();
  return ids ? ids->size() : 0;
}

// Text shaped like the transcripts a small model is warmed up on: the same kernels and tool
// calls many times over, with words the built-in corpus does not have.
std::string transcript_text() {
  std::string one =
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": "
      "\"kernels/fused_gelu_bias.cu\", \"content\": \"__global__ void fused_gelu_bias_kernel("
      "const float4* __restrict__ x, const float4* __restrict__ bias, float4* __restrict__ y, "
      "int64_t n4) {\\n  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;\\n}\\n\"}}"
      "\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nwrote kernels/"
      "fused_gelu_bias.cu (212 bytes)\n</tool_response><|im_end|>\n";
  std::string out;
  for (int i = 0; i < 40; ++i) out += one;
  return out;
}

TEST(TinyTokenizerTest, BuiltInTokenizersAreUnchanged) {
  // FNV-1a and sizes of the tokenizer.json files the trainer wrote before extra_text existed.
  struct Case {
    TinyTokenizerOptions options;
    std::uint64_t hash;
    std::size_t bytes;
  };
  const Case cases[] = {{{.merges = 500}, 0xbae7394b7d8ddc71ULL, 38730},
                        {{.merges = 64}, 0x5875c9763c3ee507ULL, 10886},
                        {{.merges = 500, .nfc = false}, 0x3fe30ffe349186f3ULL, 38711}};
  for (const Case& c : cases) {
    Expected<std::string> json = tiny_tokenizer_json(c.options);
    ASSERT_TRUE(json) << json.error().to_string();
    EXPECT_EQ(json->size(), c.bytes) << "merges " << c.options.merges;
    EXPECT_EQ(fnv1a(*json), c.hash) << "merges " << c.options.merges;
  }
}

TEST(TinyTokenizerTest, ExtraTextGivesMergesThatFitIt) {
  const std::string text = transcript_text();
  Tokenizer builtin = load({.merges = 400});
  Tokenizer fitted = load({.merges = 400, .extra_text = {text}});
  EXPECT_EQ(builtin.vocab_size(), fitted.vocab_size());
  EXPECT_LT(count_tokens(fitted, text), count_tokens(builtin, text) * 3 / 4);
  Expected<std::vector<TokenId>> ids = fitted.encode(text);
  ASSERT_TRUE(ids);
  Expected<std::string> back = fitted.decode(*ids);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, text);
  // Deterministic.
  EXPECT_EQ(*tiny_tokenizer_json({.merges = 400, .extra_text = {text}}),
            *tiny_tokenizer_json({.merges = 400, .extra_text = {text}}));
}

TEST(TinyTokenizerTest, ChatTokensStayAddedTokensAfterTheMerges) {
  const std::string text = transcript_text();
  Tokenizer builtin = load({.merges = 300});
  Tokenizer fitted = load({.merges = 300, .extra_text = {text}});
  const char* added[] = {"<|endoftext|>",    "<|im_start|>", "<|im_end|>",
                         "<tool_call>",      "</tool_call>", "<tool_response>",
                         "</tool_response>", "<think>",      "</think>"};
  for (const char* a : added) {
    ASSERT_TRUE(fitted.token_to_id(a)) << a;
    EXPECT_EQ(*fitted.token_to_id(a), *builtin.token_to_id(a)) << a;
    Expected<std::vector<TokenId>> ids = fitted.encode(a);
    ASSERT_TRUE(ids);
    EXPECT_EQ(ids->size(), 1u) << a;
  }
  // The chat tokens were cut out of the extra text before counting: their pieces (40 times each
  // in it) got no merge the built-in corpus alone would not give.
  for (const char* piece : {"<tool", "</tool", "_call", "_response", "_call>", "_response>"}) {
    if (!builtin.token_to_id(piece)) {
      EXPECT_FALSE(fitted.token_to_id(piece)) << piece;
    }
  }
  auto shared = std::make_shared<const Tokenizer>(std::move(fitted));
  Expected<ChatFormat> format = ChatFormat::create(shared);
  ASSERT_TRUE(format) << format.error().to_string();
}

TEST(TinyTokenizerTest, FewerMergesWhenTheTextRunsOut) {
  Tokenizer t = load({.merges = 100'000, .extra_text = {"abab abab"}});
  EXPECT_LT(t.vocab_size(), 256u + 100'000u);
}

}  // namespace
}  // namespace cuda_agent
