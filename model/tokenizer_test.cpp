// Encoding and decoding: known answers on a hand-made BPE, round trips on the tiny tokenizer,
// added tokens, the pre-tokenizer regex, invalid UTF-8.
#include "model/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "model/pcre_regex.h"
#include "model/tiny_tokenizer.h"
#include "model/tokenizer_test_util.h"

namespace cuda_agent {
namespace {

using testing::added_token;
using ::testing::ElementsAre;
using testing::HandTokenizer;

Tokenizer load(const HandTokenizer& h) {
  Expected<Tokenizer> t = Tokenizer::from_json(h.json().dump(), "hand.json");
  EXPECT_TRUE(t) << t.error().to_string();
  return std::move(t).value();
}

std::vector<TokenId> enc(const Tokenizer& t, std::string_view s, bool specials = false) {
  Expected<std::vector<TokenId>> ids = t.encode(s, specials);
  EXPECT_TRUE(ids) << ids.error().to_string();
  return ids ? *ids : std::vector<TokenId>{};
}

HandTokenizer hello_world() {
  HandTokenizer h;
  // ids 256..262, then 263 for "  " and 264 for "\n\n".
  h.merges = {{"h", "e"}, {"l", "l"},   {"he", "ll"}, {"hell", "o"}, {" ", "w"},
              {"o", "r"}, {" w", "or"}, {" ", " "},   {"\n", "\n"}};
  return h;
}

TEST(TokenizerTest, KnownAnswersOnAHandMadeBpe) {
  Tokenizer t = load(hello_world());
  // "hello": he, ll, hell, hello by rank; " world": " w", "or", " wor", then l, d.
  EXPECT_THAT(enc(t, "hello world"), ElementsAre(259, 262, 'l', 'd'));
  EXPECT_THAT(enc(t, "oh"), ElementsAre('o', 'h'));
  // Four spaces before a word: `\s+(?!\S)` takes three, the word takes one: "  ", " ", " x".
  EXPECT_THAT(enc(t, "    x"), ElementsAre(263, ' ', ' ', 'x'));
  // "\n\n\n" is one piece (`\s*[\r\n]+`): "\n\n" merges leftmost, one "\n" stays.
  EXPECT_THAT(enc(t, "\n\n\n"), ElementsAre(264, '\n'));
  EXPECT_THAT(enc(t, ""), ElementsAre());
  EXPECT_EQ(*t.decode(std::vector<TokenId>{259, 262, 'l', 'd'}), "hello world");
}

TEST(TokenizerTest, BothMergeFormatsGiveTheSameIds) {
  HandTokenizer strings = hello_world();
  HandTokenizer pairs = hello_world();
  pairs.pair_format = true;
  EXPECT_EQ(enc(load(strings), "hello world, hello!"), enc(load(pairs), "hello world, hello!"));
  EXPECT_THAT(enc(load(pairs), "hello"), ElementsAre(259));
}

TEST(TokenizerTest, IgnoreMergesTakesWholeWordsFromTheVocab) {
  HandTokenizer h;
  h.extra_vocab = {"abc"};  // id 256, no merge reaches it
  EXPECT_THAT(enc(load(h), "abc"), ElementsAre('a', 'b', 'c'));
  h.ignore_merges = true;
  EXPECT_THAT(enc(load(h), "abc abcd"), ElementsAre(256, ' ', 'a', 'b', 'c', 'd'));
}

TEST(TokenizerTest, AddedTokensAreCutOutBeforePreTokenization) {
  HandTokenizer h = hello_world();
  h.added_tokens = {added_token(300, "<|im_start|>", true), added_token(301, "<|im_end|>", true),
                    added_token(302, "<tool_call>", false), added_token(303, "<|im", false)};
  Tokenizer t = load(h);
  // Longest match wins over the shorter "<|im" at the same place.
  EXPECT_THAT(enc(t, "<|im_start|>hello<|im_end|>\n"), ElementsAre(300, 259, 301, '\n'));
  EXPECT_THAT(enc(t, "a<|imx"), ElementsAre('a', 303, 'x'));
  EXPECT_THAT(enc(t, "x<tool_call>y"), ElementsAre('x', 302, 'y'));
  EXPECT_TRUE(t.is_special(300));
  EXPECT_THAT(t.special_ids(), ElementsAre(300, 301));
  EXPECT_FALSE(t.is_special(302));
  EXPECT_EQ(*t.decode(std::vector<TokenId>{300, 259, 301}), "<|im_start|>hello<|im_end|>");
  EXPECT_EQ(*t.decode(std::vector<TokenId>{300, 259, 301}, /*skip_special=*/true), "hello");
  EXPECT_EQ(t.token_to_id("<tool_call>"), 302u);
  EXPECT_EQ(t.id_to_token(259), "hello");
  EXPECT_EQ(t.id_to_token(' '), "Ġ");
  EXPECT_EQ(t.vocab_size(), 304u);
}

TEST(TokenizerTest, AddedTokenStripAndSingleWord) {
  HandTokenizer h;
  h.added_tokens = {added_token(300, "<mask>", true, /*lstrip=*/true, /*rstrip=*/true),
                    added_token(301, "ab", false, false, false, /*single_word=*/true)};
  Tokenizer t = load(h);
  EXPECT_THAT(enc(t, "a  <mask>  b"), ElementsAre('a', 300, 'b'));
  EXPECT_THAT(enc(t, "xab"), ElementsAre('x', 'a', 'b'));
  EXPECT_THAT(enc(t, "ab x"), ElementsAre(301, ' ', 'x'));
  EXPECT_THAT(enc(t, "é ab_"), ElementsAre(0xC3, 0xA9, ' ', 'a', 'b', '_'));
}

TEST(TokenizerTest, TemplateProcessingAddsBosOnlyWhenAsked) {
  HandTokenizer h;
  h.added_tokens = {added_token(300, "<|begin_of_text|>", true)};
  h.post_processor = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}},
        {{"type", "TemplateProcessing"},
         {"single",
          {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
         {"pair", nlohmann::json::array()},
         {"special_tokens",
          {{"<|begin_of_text|>",
            {{"id", "<|begin_of_text|>"}, {"ids", {300}}, {"tokens", {"<|begin_of_text|>"}}}}}}}}}};
  Tokenizer t = load(h);
  EXPECT_THAT(enc(t, "hi", true), ElementsAre(300, 'h', 'i'));
  EXPECT_THAT(enc(t, "hi", false), ElementsAre('h', 'i'));
}

TEST(TokenizerTest, InvalidUtf8IsRefusedWithItsOffset) {
  Tokenizer t = load(HandTokenizer{});
  for (std::string bad :
       {std::string("ok\xff"), std::string("ok\xc0\x80"), std::string("ok\xed\xa0\x80"),
        std::string("ok\xe4\xbd"), std::string("ok\xf4\x90\x80\x80")}) {
    Expected<std::vector<TokenId>> ids = t.encode(bad);
    ASSERT_FALSE(ids);
    EXPECT_EQ(ids.error().code, "tokenizer.invalid_utf8");
    EXPECT_NE(ids.error().message.find("at byte 2"), std::string::npos) << ids.error().message;
  }
  EXPECT_FALSE(t.decode(std::vector<TokenId>{99999}));
}

TEST(TokenizerTest, RegexFollowsOnigurumaWhitespace) {
  auto re = PcreRegex::compile(kQwen2SplitPattern, false, "test");
  ASSERT_TRUE(re);
  auto pieces = [&](std::string_view s) {
    std::vector<MatchSpan> spans;
    EXPECT_TRUE((*re)->find_all(s, spans));
    std::vector<std::string> out;
    for (auto [b, e] : spans) out.emplace_back(s.substr(b, e - b));
    return out;
  };
  EXPECT_THAT(pieces("DON'T stop"), ElementsAre("DON", "'T", " stop"));
  EXPECT_THAT(pieces("x=42;\n\n  y"), ElementsAre("x", "=", "4", "2", ";\n\n", " ", " y"));
  // U+0085 counts as whitespace, as in Oniguruma: "\u0085" then "\u0085b".
  EXPECT_THAT(pieces("a\u0085\u0085b"), ElementsAre("a", "\u0085", "\u0085b"));
  EXPECT_EQ(onig_compatible_pattern(R"(\s+(?!\S)|[^\s\p{Lu}])"),
            R"([\s\x{85}]+(?![^\s\x{85}])|[^\s\x{85}\p{Lu}])");
  // Letters PCRE2 10.42 (Unicode 14) does not know: CJK extension H (15.0, through utf8proc) and
  // extension I (15.1), Egyptian hieroglyphs extended-A (16.0), as Oniguruma does.
  EXPECT_THAT(pieces("\U00031350'm \U0002EBF0's \U00013460'd"),
              ElementsAre("\U00031350", "'m", " \U0002EBF0", "'s", " \U00013460", "'d"));
  EXPECT_FALSE(PcreRegex::compile("(unclosed", false, "test"));
}

Tokenizer tiny(bool nfc) {
  Expected<std::string> text = tiny_tokenizer_json({.merges = 500, .nfc = nfc});
  EXPECT_TRUE(text) << text.error().to_string();
  Expected<Tokenizer> t = Tokenizer::from_json(*text, "tiny");
  EXPECT_TRUE(t) << t.error().to_string();
  return std::move(t).value();
}

TEST(TokenizerTest, TinyTokenizerRoundTripsTrickyText) {
  Tokenizer t = tiny(/*nfc=*/false);
  EXPECT_GT(t.vocab_size(), 256u + 400u);
  const std::string cases[] = {
      "",
      "\n\n\n",
      "   x",
      "\t\t\r\n  \n",
      "emoji 🚀🔥👍🏽 and flags 🇫🇷, ZWJ 👩‍💻",
      "中文文本，日本語のテキスト、한국어 텍스트",
      "e\u0301 (decomposed) vs \u00e9",
      "__global__ void k(float* __restrict__ x) { x[threadIdx.x] *= 2.0f; }\n",
      "def f(x):\n    return x ** 2  # comment\n\n\n",
      "We'll see; they'd've DON'T it's",
      "1234567890 3.14159 1e-5 0x7fffffff",
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n</think>",
      "<tool_call>\n{\"name\": \"compile\", \"arguments\": {}}\n</tool_call>",
      "\u0085\u00a0\u2028\u3000 mixed   spaces",
      std::string(1000, ' ') + "x" + std::string(3000, 'a'),
      std::string("nul\0byte", 8),
  };
  for (const std::string& s : cases) {
    std::vector<TokenId> ids = enc(t, s);
    EXPECT_EQ(*t.decode(ids), s) << "input: " << s;
    EXPECT_EQ(enc(t, s), ids) << "cached encoding differs for: " << s;
  }
  // Special tokens come out as one id each; the pieces between are ordinary BPE.
  std::vector<TokenId> ids = enc(t, "<|im_start|>user\nhi<|im_end|>");
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), *t.token_to_id("<|im_start|>"));
  EXPECT_EQ(ids.back(), *t.token_to_id("<|im_end|>"));
}

TEST(TokenizerTest, TinyTokenizerNormalizesToNfc) {
  Tokenizer t = tiny(/*nfc=*/true);
  EXPECT_EQ(enc(t, "cafe\u0301"), enc(t, "caf\u00e9"));
  EXPECT_EQ(*t.decode(enc(t, "cafe\u0301 ok")), "caf\u00e9 ok");
  EXPECT_EQ(*t.decode(enc(t, "already NFC: 你好 🚀")), "already NFC: 你好 🚀");
}

TEST(TokenizerTest, NfcInertCodePointsAreStableUnderNfc) {
  // Every inert code point is its own NFC, alone, after a base letter and before a combining
  // mark's base (so it neither changes nor composes with what precedes it).
  int checked = 0;
  for (char32_t c = 0x80; c < 0x20000; ++c) {
    if (!nfc_inert(c)) continue;
    ++checked;
    std::string one;
    std::string s;
    // UTF-8 of c through the byte-level helper's inverse would be circular; encode by hand.
    if (c < 0x800) {
      one = {char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
    } else if (c < 0x10000) {
      one = {char(0xE0 | (c >> 12)), char(0x80 | ((c >> 6) & 0x3F)), char(0x80 | (c & 0x3F))};
    } else {
      one = {char(0xF0 | (c >> 18)), char(0x80 | ((c >> 12) & 0x3F)),
             char(0x80 | ((c >> 6) & 0x3F)), char(0x80 | (c & 0x3F))};
    }
    // A non-inert character first forces utf8proc over the whole text.
    for (std::string prefix : {"\u0301", "a\u0301", "\u1100", "\u0915"}) {
      ASSERT_TRUE(nfc_normalize(prefix + one, s));
      std::string prefix_nfc;
      ASSERT_TRUE(nfc_normalize(prefix, prefix_nfc));
      ASSERT_EQ(s, prefix_nfc + one) << "U+" << std::hex << static_cast<std::uint32_t>(c);
    }
  }
  EXPECT_GT(checked, 35000);
}

TEST(TokenizerTest, TinyTokenizerIsDeterministicAndLearntCommonWords) {
  EXPECT_EQ(*tiny_tokenizer_json(), *tiny_tokenizer_json());
  Tokenizer t = tiny(true);
  // Frequent corpus words are single tokens; a rare one is not.
  EXPECT_EQ(enc(t, " kernel").size(), 1u);
  EXPECT_EQ(enc(t, "float").size(), 1u);
  EXPECT_GT(enc(t, "xylophone").size(), 1u);
}

TEST(TokenizerTest, ConcurrentEncodesAgreeWithOneThread) {
  Tokenizer t = tiny(true);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("word" + std::to_string(i * 7919) + " kernel<<<" + std::to_string(i) + ">>> é");
  std::vector<std::vector<TokenId>> expected;
  for (const std::string& s : texts) expected.push_back(enc(t, s));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      Tokenizer copy = t;  // copies share the tables and the word cache
      for (int round = 0; round < 20; ++round) {
        for (std::size_t i = 0; i < texts.size(); ++i) {
          const Tokenizer& use = (i + k) % 2 ? copy : t;
          if (*use.encode(texts[i]) != expected[i]) ++mismatches;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(TokenizerTest, DecodeLossyReplacesPartialCharacters) {
  Tokenizer t = tiny(true);
  std::vector<TokenId> ids = enc(t, "\u00e9");  // one or two ids
  std::vector<TokenId> first_byte = {*t.token_to_id(byte_level_spelling("\xC3"))};
  EXPECT_EQ(*t.decode(first_byte), "\xC3");
  EXPECT_EQ(*t.decode_lossy(first_byte), "\uFFFD");
  EXPECT_EQ(*t.decode_lossy(ids), "\u00e9");
}

}  // namespace
}  // namespace cuda_agent
