// tokenizer.json that this tokenizer must refuse, each with an error naming the file and the
// JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "model/tiny_tokenizer.h"
#include "model/tokenizer.h"
#include "model/tokenizer_test_util.h"

namespace cuda_agent {
namespace {

using testing::HandTokenizer;

// Loads `j` and expects an Error with `code` whose message has `origin: path`.
void expect_refused(const nlohmann::json& j, const std::string& code, const std::string& path) {
  Expected<Tokenizer> t = Tokenizer::from_json(j.dump(), "bad.json");
  ASSERT_FALSE(t) << "loaded: " << j.dump().substr(0, 200);
  EXPECT_EQ(t.error().code, code) << t.error().to_string();
  EXPECT_EQ(t.error().category, ErrorCategory::kInvalidInput);
  EXPECT_NE(t.error().message.find("bad.json: " + path), std::string::npos) << t.error().message;
}

TEST(TokenizerLoadTest, RefusesMalformedFiles) {
  nlohmann::json good = HandTokenizer{}.json();
  ASSERT_TRUE(Tokenizer::from_json(good.dump(), "good.json"));

  EXPECT_FALSE(Tokenizer::from_json("{not json", "bad.json"));
  EXPECT_EQ(Tokenizer::from_json("{not json", "bad.json").error().message,
            "bad.json: not valid JSON");

  nlohmann::json j = good;
  j.erase("model");
  expect_refused(j, "tokenizer.malformed", "model");

  j = good;
  j["model"]["type"] = "WordPiece";
  expect_refused(j, "tokenizer.unsupported", "model.type");

  j = good;
  j["model"].erase("type");
  expect_refused(j, "tokenizer.malformed", "model.type");

  j = good;
  j["model"]["merges"] = {"Ġ w"};  // "Ġw" is not in the vocab
  expect_refused(j, "tokenizer.malformed", "model.merges[0]");

  j = good;
  j["model"]["merges"] = {"a b c"};
  expect_refused(j, "tokenizer.malformed", "model.merges[0]");

  j = good;
  j["model"]["merges"] = {{"a"}};
  expect_refused(j, "tokenizer.malformed", "model.merges[0]");

  j = good;
  j["model"]["vocab"].erase("Ā");  // byte 0
  expect_refused(j, "tokenizer.unsupported", "model.vocab");

  j = good;
  j["model"]["vocab"]["x"] = -1;
  expect_refused(j, "tokenizer.malformed", "model.vocab[\"x\"]");

  j = good;
  j["model"]["byte_fallback"] = true;
  expect_refused(j, "tokenizer.unsupported", "model.byte_fallback");

  j = good;
  j["normalizer"] = {{"type", "NFKC"}};
  expect_refused(j, "tokenizer.unsupported", "normalizer.type");

  j = good;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "([a-z";
  expect_refused(j, "tokenizer.bad_regex", "pre_tokenizer.pretokenizers[0].pattern");

  j = good;
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Contiguous";
  expect_refused(j, "tokenizer.unsupported", "pre_tokenizer.pretokenizers[0].behavior");

  j = good;
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_refused(j, "tokenizer.unsupported", "pre_tokenizer.type");

  j = good;
  j["decoder"] = {{"type", "WordPiece"}};
  expect_refused(j, "tokenizer.unsupported", "decoder.type");

  j = good;
  j["post_processor"] = {{"type", "BertProcessing"}};
  expect_refused(j, "tokenizer.unsupported", "post_processor.type");

  j = good;
  j["added_tokens"] = {{{"id", 300}}};
  expect_refused(j, "tokenizer.malformed", "added_tokens[0].content");

  j = good;
  j["truncation"] = {{"max_length", 10}};
  expect_refused(j, "tokenizer.unsupported", "truncation");
}

TEST(TokenizerLoadTest, LoadsFromADirectoryAndReportsAMissingFile) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("tokenizer_load_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Expected<Tokenizer> missing = Tokenizer::load(dir.string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().category, ErrorCategory::kNotFound);

  ASSERT_TRUE(write_tiny_tokenizer(dir.string()));
  Expected<Tokenizer> t = Tokenizer::load(dir.string());
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ(t->origin(), (dir / "tokenizer.json").string());
  EXPECT_TRUE(t->token_to_id("<|im_end|>").has_value());
  EXPECT_TRUE(Tokenizer::load((dir / "tokenizer.json").string()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
