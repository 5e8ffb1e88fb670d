#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace cuda_agent {
namespace {

using nlohmann::json;

struct Reader {
  const json& j;
  const std::string& origin;
  std::string prefix;  // "rope_scaling." for nested keys

  Error bad(const std::string& key, const std::string& what) const {
    return make_error(ErrorCategory::kInvalidInput, "model.bad_config",
                      origin + ": " + prefix + key + ": " + what);
  }
  bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }

  Status int_key(const std::string& key, std::int64_t* out, bool required) const {
    if (!has(key))
      return required ? Status(bad(key, "missing (a positive integer)")) : Status::ok();
    if (!j[key].is_number_integer() || j[key].get<std::int64_t>() <= 0) {
      return bad(key, "expected a positive integer, got " + j[key].dump());
    }
    *out = j[key].get<std::int64_t>();
    return Status::ok();
  }
  Status num_key(const std::string& key, double* out) const {
    if (!has(key)) return Status::ok();
    if (!j[key].is_number()) return bad(key, "expected a number, got " + j[key].dump());
    *out = j[key].get<double>();
    return Status::ok();
  }
  Status opt_num_key(const std::string& key, std::optional<double>* out) const {
    if (!has(key)) return Status::ok();
    double v = 0;
    RETURN_IF_ERROR(num_key(key, &v));
    *out = v;
    return Status::ok();
  }
  Status bool_key(const std::string& key, bool* out) const {
    if (!has(key)) return Status::ok();
    if (!j[key].is_boolean()) return bad(key, "expected true or false, got " + j[key].dump());
    *out = j[key].get<bool>();
    return Status::ok();
  }
};

Error unsupported(const std::string& origin, const std::string& key, const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "model.unsupported_config",
                    origin + ": " + key + ": " + what);
}

Status parse_rope(const json& rs, const std::string& key_name, const std::string& origin,
                  ModelConfig* c) {
  if (!rs.is_object()) {
    return make_error(ErrorCategory::kInvalidInput, "model.bad_config",
                      origin + ": " + key_name + ": expected an object, got " + rs.dump());
  }
  Reader r{rs, origin, key_name + "."};
  std::string type = "default";
  const char* type_key = rs.contains("rope_type") ? "rope_type" : "type";
  if (r.has(type_key)) {
    if (!rs[type_key].is_string()) return r.bad(type_key, "expected a string");
    type = rs[type_key].get<std::string>();
  }
  RopeScaling& s = c->rope_scaling;
  if (type == "default") {
    s.type = RopeType::kDefault;
  } else if (type == "linear") {
    s.type = RopeType::kLinear;
  } else if (type == "dynamic") {
    s.type = RopeType::kDynamic;
  } else if (type == "yarn") {
    s.type = RopeType::kYarn;
  } else if (type == "llama3") {
    s.type = RopeType::kLlama3;
  } else {
    return unsupported(
        origin, key_name + "." + type_key,
        "RoPE type '" + type + "' is not implemented (default, linear, dynamic, yarn, llama3 are)");
  }
  RETURN_IF_ERROR(r.num_key("rope_theta", &c->rope_theta));  // transformers 5.x puts it here
  if (s.type != RopeType::kDefault) {
    if (!r.has("factor")) return r.bad("factor", "missing (a number) for RoPE type '" + type + "'");
    RETURN_IF_ERROR(r.num_key("factor", &s.factor));
    if (s.factor <= 0) return r.bad("factor", "must be positive");
  }
  if (r.has("original_max_position_embeddings")) {
    RETURN_IF_ERROR(
        r.int_key("original_max_position_embeddings", &s.original_max_position_embeddings, false));
  } else if (s.type == RopeType::kLlama3) {
    return r.bad("original_max_position_embeddings", "missing (an integer) for RoPE type llama3");
  }
  RETURN_IF_ERROR(r.num_key("low_freq_factor", &s.low_freq_factor));
  RETURN_IF_ERROR(r.num_key("high_freq_factor", &s.high_freq_factor));
  if (s.type == RopeType::kLlama3 && s.high_freq_factor == s.low_freq_factor) {
    return r.bad("high_freq_factor", "must differ from low_freq_factor");
  }
  RETURN_IF_ERROR(r.num_key("beta_fast", &s.beta_fast));
  RETURN_IF_ERROR(r.num_key("beta_slow", &s.beta_slow));
  RETURN_IF_ERROR(r.opt_num_key("attention_factor", &s.attention_factor));
  RETURN_IF_ERROR(r.opt_num_key("mscale", &s.mscale));
  RETURN_IF_ERROR(r.opt_num_key("mscale_all_dim", &s.mscale_all_dim));
  RETURN_IF_ERROR(r.bool_key("truncate", &s.truncate));
  return Status::ok();
}

}  // namespace

Expected<ModelConfig> parse_model_config(const std::string& json_text, const std::string& origin) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return make_error(ErrorCategory::kInvalidInput, "model.bad_config",
                      origin + ": not a JSON object");
  }
  Reader r{j, origin, ""};
  ModelConfig c;
  if (!r.has("model_type") || !j["model_type"].is_string()) {
    return r.bad("model_type", "missing (\"llama\", \"qwen2\" or \"qwen3\")");
  }
  c.model_type = j["model_type"].get<std::string>();
  if (c.model_type != "llama" && c.model_type != "qwen2" && c.model_type != "qwen3" &&
      c.model_type != "mistral") {
    return unsupported(origin, "model_type",
                       "'" + c.model_type + "' is not implemented (llama, qwen2, qwen3 are)");
  }
  RETURN_IF_ERROR(r.int_key("vocab_size", &c.vocab_size, true));
  RETURN_IF_ERROR(r.int_key("hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(r.int_key("intermediate_size", &c.intermediate_size, true));
  RETURN_IF_ERROR(r.int_key("num_hidden_layers", &c.num_hidden_layers, true));
  RETURN_IF_ERROR(r.int_key("num_attention_heads", &c.num_attention_heads, true));
  c.num_key_value_heads = c.num_attention_heads;
  RETURN_IF_ERROR(r.int_key("num_key_value_heads", &c.num_key_value_heads, false));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return r.bad("num_key_value_heads", std::to_string(c.num_key_value_heads) +
                                            " does not divide num_attention_heads " +
                                            std::to_string(c.num_attention_heads));
  }
  if (r.has("head_dim")) {
    RETURN_IF_ERROR(r.int_key("head_dim", &c.head_dim, true));
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return r.bad("hidden_size", "not divisible by num_attention_heads and no head_dim given");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) return r.bad("head_dim", "must be even for RoPE");
  RETURN_IF_ERROR(r.num_key("rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(r.num_key("rope_theta", &c.rope_theta));
  RETURN_IF_ERROR(r.int_key("max_position_embeddings", &c.max_position_embeddings, false));
  if (r.has("rope_scaling")) {
    RETURN_IF_ERROR(parse_rope(j["rope_scaling"], "rope_scaling", origin, &c));
  } else if (r.has("rope_parameters")) {
    RETURN_IF_ERROR(parse_rope(j["rope_parameters"], "rope_parameters", origin, &c));
  }
  if (c.rope_scaling.original_max_position_embeddings == 0) {
    c.rope_scaling.original_max_position_embeddings = c.max_position_embeddings;
  }
  if (r.has("partial_rotary_factor") && j["partial_rotary_factor"] != 1.0) {
    return unsupported(origin, "partial_rotary_factor", "only 1.0 is implemented");
  }
  RETURN_IF_ERROR(r.bool_key("tie_word_embeddings", &c.tie_word_embeddings));
  c.attention_bias = c.model_type == "qwen2";
  RETURN_IF_ERROR(r.bool_key("attention_bias", &c.attention_bias));
  if (c.model_type == "qwen2") c.attention_bias = true;  // Qwen2Attention always has q/k/v bias
  RETURN_IF_ERROR(r.bool_key("mlp_bias", &c.mlp_bias));
  c.qk_norm = c.model_type == "qwen3";
  if (r.has("hidden_act") && j["hidden_act"] != "silu") {
    return unsupported(origin, "hidden_act", j["hidden_act"].dump() + " (only silu)");
  }
  bool sliding = false;
  RETURN_IF_ERROR(r.bool_key("use_sliding_window", &sliding));
  if (sliding) return unsupported(origin, "use_sliding_window", "sliding-window attention");
  if (c.model_type == "mistral" && r.has("sliding_window")) {
    return unsupported(origin, "sliding_window", "sliding-window attention");
  }
  if (r.has("layer_types")) {
    if (!j["layer_types"].is_array()) return r.bad("layer_types", "expected a list");
    for (const auto& t : j["layer_types"]) {
      if (t != "full_attention") {
        return unsupported(origin, "layer_types", t.dump() + " (only full_attention)");
      }
    }
  }
  const char* dtype_key = r.has("torch_dtype") ? "torch_dtype" : "dtype";
  if (r.has(dtype_key)) {
    if (!j[dtype_key].is_string()) return r.bad(dtype_key, "expected a string");
    c.torch_dtype = j[dtype_key].get<std::string>();
    if (c.torch_dtype != "float32" && c.torch_dtype != "bfloat16" && c.torch_dtype != "float16") {
      return unsupported(origin, dtype_key, "'" + c.torch_dtype + "' (float32, bfloat16, float16)");
    }
  }
  for (const char* key : {"bos_token_id", "eos_token_id"}) {
    if (!r.has(key)) continue;
    const json& v = j[key].is_array() && !j[key].empty() ? j[key][0] : j[key];
    if (!v.is_number_integer()) return r.bad(key, "expected a token id, got " + j[key].dump());
    (std::string(key) == "bos_token_id" ? c.bos_token_id : c.eos_token_id) = v.get<std::int64_t>();
  }
  return c;
}

Expected<ModelConfig> load_model_config(const std::string& dir_or_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(dir_or_file);
  if (p.extension() != ".json") p /= "config.json";
  std::ifstream in(p);
  if (!in) {
    return make_error(ErrorCategory::kNotFound, "model.no_config", p.string() + ": cannot open");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_model_config(ss.str(), p.string());
}

ModelConfig tiny_model_config(const std::string& model_type, std::int64_t vocab_size,
                              std::int64_t head_dim) {
  ModelConfig c;
  c.model_type = model_type;
  c.vocab_size = vocab_size;
  c.head_dim = head_dim;
  c.hidden_size = 4 * head_dim;
  c.intermediate_size = 5 * head_dim;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 4096;
  c.tie_word_embeddings = model_type == "qwen2";
  c.attention_bias = model_type == "qwen2";
  c.qk_norm = model_type == "qwen3";
  return c;
}

std::string model_config_json(const ModelConfig& c) {
  const char* arch = c.model_type == "qwen2"   ? "Qwen2ForCausalLM"
                     : c.model_type == "qwen3" ? "Qwen3ForCausalLM"
                                               : "LlamaForCausalLM";
  json j = {{"architectures", {arch}},
            {"model_type", c.model_type},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"num_key_value_heads", c.num_key_value_heads},
            {"head_dim", c.head_dim},
            {"hidden_act", "silu"},
            {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta},
            {"max_position_embeddings", c.max_position_embeddings},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"attention_bias", c.attention_bias},
            {"torch_dtype", c.torch_dtype}};
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_id) j["eos_token_id"] = *c.eos_token_id;
  return j.dump(2) + "\n";
}

}  // namespace cuda_agent
