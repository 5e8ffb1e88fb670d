// Safetensors (round trip, sharded sets, bad files) and config.json parsing. Torch-free.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "model/model_config.h"
#include "model/safetensors.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("ca_model_io_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str(const std::string& name = "") const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string raw_file(const std::string& header) {
  std::string out(8, '\0');
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + header;
}

TEST(Safetensors, RoundTripKeepsBytesShapesAndMetadata) {
  TempDir d;
  std::vector<float> a = {1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
  std::vector<std::uint16_t> b = {0x3f80, 0x4000, 0xbf80};  // bf16 1, 2, -1
  ASSERT_TRUE(write_safetensors(d.str("m.safetensors"),
                                {{.name = "z.a",
                                  .dtype = StDtype::kF32,
                                  .shape = {2, 3},
                                  .data = a.data(),
                                  .bytes = a.size() * 4},
                                 {.name = "b",
                                  .dtype = StDtype::kBF16,
                                  .shape = {3},
                                  .data = b.data(),
                                  .bytes = b.size() * 2}},
                                {{"format", "pt"}}));
  auto f = SafetensorsFile::open(d.str("m.safetensors"));
  ASSERT_TRUE(f) << f.error().to_string();
  ASSERT_EQ(f->tensors().size(), 2u);
  const auto& ta = f->tensors().at("z.a");
  EXPECT_EQ(ta.dtype, StDtype::kF32);
  EXPECT_EQ(ta.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(ta.data, a.data(), 24), 0);
  const auto& tb = f->tensors().at("b");
  EXPECT_EQ(tb.dtype, StDtype::kBF16);
  EXPECT_EQ(std::memcmp(tb.data, b.data(), 6), 0);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  // Data starts 8-byte aligned, as the reference writer guarantees.
  std::ifstream in(d.str("m.safetensors"), std::ios::binary);
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, ShardedSetFollowsTheIndex) {
  TempDir d;
  float x = 1, y = 2;
  ASSERT_TRUE(write_safetensors(d.str("model-00001-of-00002.safetensors"),
                                {{.name = "x", .shape = {1}, .data = &x, .bytes = 4}}));
  ASSERT_TRUE(write_safetensors(d.str("model-00002-of-00002.safetensors"),
                                {{.name = "y", .shape = {1}, .data = &y, .bytes = 4}}));
  write_file(d.str("model.safetensors.index.json"),
             R"({"metadata":{},"weight_map":{"x":"model-00001-of-00002.safetensors",)"
             R"("y":"model-00002-of-00002.safetensors"}})");
  auto set = SafetensorsSet::open(d.str());
  ASSERT_TRUE(set) << set.error().to_string();
  EXPECT_EQ(set->names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(*reinterpret_cast<const float*>(set->find("y")->data), 2.f);
  auto missing = set->get("z");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "safetensors.missing_tensor");
  EXPECT_NE(missing.error().message.find("'z'"), std::string::npos);
}

TEST(Safetensors, IndexNamingATensorItsShardLacksIsAnError) {
  TempDir d;
  float x = 1;
  ASSERT_TRUE(write_safetensors(d.str("a.safetensors"),
                                {{.name = "x", .shape = {1}, .data = &x, .bytes = 4}}));
  write_file(d.str("model.safetensors.index.json"),
             R"({"weight_map":{"x":"a.safetensors","w":"a.safetensors"}})");
  auto set = SafetensorsSet::open(d.str());
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().code, "safetensors.missing_tensor");
  EXPECT_NE(set.error().message.find("a.safetensors: tensor 'w'"), std::string::npos)
      << set.error().message;
}

TEST(Safetensors, BadFilesNameTheFileAndTensor) {
  TempDir d;
  struct Case {
    std::string name, bytes, expect;
  };
  const std::string hdr = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  std::vector<Case> cases = {
      {"short", "abc", "shorter than the 8-byte header length"},
      {"header_past_end", raw_file(hdr).substr(0, 20), "runs past the end of the file"},
      {"truncated_data", raw_file(hdr) + std::string(8, '\0'), "tensor 'w': truncated"},
      {"not_json", raw_file("{not json"), "header is not a JSON object"},
      {"size_mismatch",
       raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})") + std::string(8, '\0'),
       "tensor 'w': 8 bytes but F32 [3] needs 12"},
      {"bad_dtype", raw_file(R"({"w":{"dtype":"F8_E9","shape":[1],"data_offsets":[0,1]}})") + "x",
       "tensor 'w': unsupported dtype"},
      {"no_offsets", raw_file(R"({"w":{"dtype":"F32","shape":[1]}})"), "tensor 'w': entry needs"},
  };
  for (const auto& c : cases) {
    const std::string path = d.str(c.name + ".safetensors");
    write_file(path, c.bytes);
    auto f = SafetensorsFile::open(path);
    ASSERT_FALSE(f) << c.name;
    EXPECT_EQ(f.error().code, "safetensors.bad_file") << c.name;
    EXPECT_NE(f.error().message.find(path), std::string::npos) << f.error().message;
    EXPECT_NE(f.error().message.find(c.expect), std::string::npos)
        << c.name << ": " << f.error().message;
  }
  auto none = SafetensorsFile::open(d.str("absent.safetensors"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().category, ErrorCategory::kNotFound);
  auto empty_dir = SafetensorsSet::open(d.str());
  ASSERT_FALSE(empty_dir);
  EXPECT_EQ(empty_dir.error().code, "safetensors.no_checkpoint");
}

const char* kQwen2 = R"({"model_type":"qwen2","vocab_size":100,"hidden_size":64,
  "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
  "rms_norm_eps":1e-6,"rope_theta":1000000.0,"max_position_embeddings":512,
  "tie_word_embeddings":true,"torch_dtype":"bfloat16","eos_token_id":[7,8]})";

TEST(ModelConfig, ParsesQwen2WithDefaults) {
  auto c = parse_model_config(kQwen2, "config.json");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_TRUE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->torch_dtype, "bfloat16");
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(*c->eos_token_id, 7);
  EXPECT_EQ(c->rope_scaling.type, RopeType::kDefault);
  EXPECT_EQ(c->kv_bytes_per_token(2), 2 * 2 * 2 * 16 * 2);
  // model_config_json writes what parse reads back.
  auto again = parse_model_config(model_config_json(*c), "again");
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->head_dim, 16);
  EXPECT_TRUE(again->tie_word_embeddings);
}

TEST(ModelConfig, RopeVariantsFromBothSpellings) {
  auto c = parse_model_config(
      R"({"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":8,
      "num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8192,
      "rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,
      "high_freq_factor":4.0,"original_max_position_embeddings":1024}})",
      "l.json");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->rope_scaling.type, RopeType::kLlama3);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 1024);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_FALSE(c->qk_norm);
  // transformers 5.x: rope_parameters, with rope_theta inside; "dtype" instead of torch_dtype.
  auto c5 = parse_model_config(
      R"({"model_type":"qwen3","vocab_size":10,"hidden_size":8,"intermediate_size":8,
      "num_hidden_layers":1,"num_attention_heads":2,"head_dim":4,"dtype":"float32",
      "rope_parameters":{"rope_type":"linear","factor":2.0,"rope_theta":5000.0}})",
      "q.json");
  ASSERT_TRUE(c5) << c5.error().to_string();
  EXPECT_EQ(c5->rope_scaling.type, RopeType::kLinear);
  EXPECT_EQ(c5->rope_theta, 5000.0);
  EXPECT_TRUE(c5->qk_norm);
  EXPECT_FALSE(c5->attention_bias);
  EXPECT_EQ(c5->head_dim, 4);
}

TEST(ModelConfig, ErrorsNameTheKey) {
  struct Case {
    std::string patch_from, patch_to, code, key;
  };
  std::vector<Case> cases = {
      {R"("hidden_size":64,)", "", "model.bad_config", "hidden_size: missing"},
      {R"("hidden_size":64)", R"("hidden_size":"big")", "model.bad_config",
       "hidden_size: expected"},
      {R"("num_key_value_heads":2)", R"("num_key_value_heads":3)", "model.bad_config",
       "num_key_value_heads: 3 does not divide"},
      {R"("model_type":"qwen2")", R"("model_type":"gpt2")", "model.unsupported_config",
       "model_type"},
      {R"("rope_theta":1000000.0)", R"("rope_scaling":{"rope_type":"longrope","factor":2})",
       "model.unsupported_config", "rope_scaling.rope_type: RoPE type 'longrope'"},
      {R"("rope_theta":1000000.0)", R"("rope_scaling":{"type":"linear"})", "model.bad_config",
       "rope_scaling.factor: missing"},
      {R"("rope_theta":1000000.0)", R"("rope_scaling":{"rope_type":"llama3","factor":8})",
       "model.bad_config", "rope_scaling.original_max_position_embeddings: missing"},
      {R"("torch_dtype":"bfloat16")", R"("torch_dtype":"int8")", "model.unsupported_config",
       "torch_dtype"},
      {R"("rms_norm_eps":1e-6)", R"("use_sliding_window":true)", "model.unsupported_config",
       "use_sliding_window"},
  };
  for (const auto& c : cases) {
    std::string text = kQwen2;
    auto at = text.find(c.patch_from);
    ASSERT_NE(at, std::string::npos) << c.patch_from;
    text.replace(at, c.patch_from.size(), c.patch_to);
    auto r = parse_model_config(text, "/m/config.json");
    ASSERT_FALSE(r) << c.key;
    EXPECT_EQ(r.error().code, c.code) << r.error().message;
    EXPECT_NE(r.error().message.find("/m/config.json: " + c.key), std::string::npos)
        << r.error().message;
  }
  EXPECT_FALSE(parse_model_config("[1]", "x"));
}

}  // namespace
}  // namespace cuda_agent
