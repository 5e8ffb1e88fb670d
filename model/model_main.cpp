// cuda-agent-model: the torch-linked half of `cuda-agent model` (the policy network). A separate
// executable so that `cuda-agent` itself stays torch-free (no 1 s libtorch start-up, no torch
// build for the coordinator); `cuda-agent model init|generate|logits` exec this binary.
//
//   cuda-agent-model init [--tiny] DIR [--arch qwen2|llama|qwen3] [--dtype fp32|bf16] [--seed N]
//                    [--params 1M|10M|...] [--layers N] [--hidden H] [--heads A] [--kv-heads K]
//                    [--intermediate I] [--max-positions P]
//                    [--tokenizer-corpus CORPUS.jsonl] [--tokenizer-text FILE]... [--merges M]
//     (no shape flag: today's tiny model, 2 layers, hidden 64; --params picks the nearest of a
//     ladder of shapes, e.g. ~1M: 4 layers, hidden 128; ~10M: 8 layers, hidden 320; the
//     tokenizer is the built-in tiny one unless training text is given, its chat tokens the same)
//   cuda-agent-model generate DIR --prompt TEXT [--max-new-tokens N] [--temperature T]
//                    [--top-p P] [--top-k K] [--seed N] [--device cpu|cuda] [--dtype ...] [--json]
//   cuda-agent-model generate DIR --input PROMPTS.jsonl --json    ({"ids":[...]} per line)
//   cuda-agent-model logits DIR --input PROMPTS.jsonl --output LOGITS.safetensors [--chunk N]
//     (tensors logits.<i> [T, vocab] float32 from one full forward; with --chunk also cached.<i>)
//
// Exit codes: 0 success, 1 the job failed, 2 bad input.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model/chat_format.h"
#include "model/generate.h"
#include "model/safetensors.h"
#include "model/tiny_tokenizer.h"
#include "model/tokenizer.h"
#include "model/transformer.h"

namespace cuda_agent {
namespace {

int report(const Error& e) {
  std::fprintf(stderr, "cuda-agent-model: %s [%s/%s]\n", e.message.c_str(),
               std::string(to_string(e.category)).c_str(), e.code.c_str());
  return e.category == ErrorCategory::kInvalidInput || e.category == ErrorCategory::kNotFound ? 2
                                                                                              : 1;
}

struct InitArgs {
  std::string dir, arch = "qwen2", dtype = "fp32";
  bool tiny = false;
  std::uint64_t seed = 0;
  // The shape: 0 keeps the --params preset's value, or today's --tiny model's.
  std::int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, intermediate = 0;
  std::int64_t max_positions = 4096;
  std::string params;  // "1M", "10M", "250K", "3000000": the preset nearest to that many
  // The tokenizer: the built-in tiny one, or trained on these too.
  std::string tokenizer_corpus;
  std::vector<std::string> tokenizer_texts;
  int merges = 500;
};

// One row of the --params ladder: head_dim 16 up to hidden 96, then 32; KV heads a divisor of
// the query heads (GQA, as Qwen2.5); SwiGLU 3 x hidden.
struct Shape {
  std::int64_t hidden, layers, heads, kv_heads, intermediate;
};
constexpr Shape kShapes[] = {
    {64, 2, 4, 2, 192},     {96, 3, 6, 2, 288},     {128, 4, 4, 2, 384},     {192, 4, 6, 2, 576},
    {256, 6, 8, 4, 768},    {320, 8, 10, 5, 960},   {384, 8, 12, 4, 1152},   {512, 8, 16, 4, 1536},
    {640, 10, 20, 4, 1920}, {768, 12, 24, 8, 2304}, {1024, 16, 32, 8, 3072},
};

// Trainable parameters of a config, as Transformer::parameters() holds them.
std::int64_t parameter_count(const ModelConfig& c) {
  const std::int64_t h = c.hidden_size, d = c.head_dim, q = c.num_attention_heads * d,
                     kv = c.num_key_value_heads * d;
  std::int64_t layer = 2 * h + h * q + 2 * h * kv + q * h + 3 * h * c.intermediate_size;
  if (c.attention_bias) layer += q + 2 * kv;
  if (c.qk_norm) layer += 2 * d;
  const std::int64_t embed = c.vocab_size * h * (c.tie_word_embeddings ? 1 : 2);
  return embed + c.num_hidden_layers * layer + h;
}

void apply_shape(ModelConfig& c, const Shape& s) {
  c.hidden_size = s.hidden;
  c.num_hidden_layers = s.layers;
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.intermediate_size = s.intermediate;
  c.head_dim = s.hidden / s.heads;
}

// "10M", "1.5m", "250K", "3000000" -> a count.
Expected<double> parse_count(const std::string& text) {
  char* end = nullptr;
  double x = std::strtod(text.c_str(), &end);
  std::string unit = end ? std::string(end) : "";
  double scale = unit.empty()                                ? 1
                 : unit == "K" || unit == "k"                ? 1e3
                 : unit == "M" || unit == "m"                ? 1e6
                 : unit == "B" || unit == "b" || unit == "G" ? 1e9
                                                             : 0;
  if (end == text.c_str() || scale == 0 || !(x > 0))
    return make_error(ErrorCategory::kInvalidInput, "cli.usage",
                      "--params '" + text + "': a positive count like 1M, 10M or 250K");
  return x * scale;
}

// The model's config: today's --tiny model, or the --params preset nearest (in ratio) to the
// count asked for with this vocabulary, then each shape flag given on top.
Expected<ModelConfig> init_config(const InitArgs& a, std::int64_t vocab) {
  ModelConfig c = tiny_model_config(a.arch, vocab, /*head_dim=*/16);
  if (!a.params.empty()) {
    ASSIGN_OR_RETURN(double target, parse_count(a.params));
    double best = 0;
    for (const Shape& s : kShapes) {
      ModelConfig t = c;
      apply_shape(t, s);
      const double off = std::abs(std::log(double(parameter_count(t)) / target));
      if (&s == &kShapes[0] || off < best) {
        best = off;
        apply_shape(c, s);
      }
    }
  }
  if (a.hidden > 0) c.hidden_size = a.hidden;
  if (a.layers > 0) c.num_hidden_layers = a.layers;
  if (a.heads > 0) c.num_attention_heads = a.heads;
  if (a.kv_heads > 0) c.num_key_value_heads = a.kv_heads;
  if (a.intermediate > 0) c.intermediate_size = a.intermediate;
  c.max_position_embeddings = a.max_positions;
  auto usage = [](const std::string& m) {
    return make_error(ErrorCategory::kInvalidInput, "cli.usage", m);
  };
  if (c.hidden_size % c.num_attention_heads != 0)
    return usage("--hidden " + std::to_string(c.hidden_size) + " is not a multiple of --heads " +
                 std::to_string(c.num_attention_heads));
  c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.head_dim % 2 != 0)
    return usage("head dimension " + std::to_string(c.head_dim) +
                 " (hidden / heads) is odd: "
                 "RoPE needs an even one");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    return usage("--heads " + std::to_string(c.num_attention_heads) +
                 " is not a multiple of --kv-heads " + std::to_string(c.num_key_value_heads));
  return c;
}

// Training text from one --tokenizer-corpus or --tokenizer-text file. A cuda-agent-corpus line
// (rollout/seed_corpus.h) gives its transcript as the chat template renders it (system prompt,
// tools, user, assistant and tool messages: the text the tokenizer will meet); anything else is
// taken as it is.
Expected<std::vector<std::string>> tokenizer_training_text(const std::string& path,
                                                           const ChatFormat& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCategory::kNotFound, "cli.no_input", path + ": cannot open");
  auto str = [](const nlohmann::ordered_json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::vector<std::string> out;
  std::string plain, line;
  while (std::getline(in, line)) {
    auto j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || str(j, "format") != "cuda-agent-corpus" ||
        !j.contains("messages") || !j["messages"].is_array()) {
      plain += line + "\n";
      continue;
    }
    std::vector<ChatMessage> messages = {{ChatRole::kSystem, str(j, "system"), {}}};
    for (const auto& m : j["messages"]) {
      if (!m.is_object()) continue;
      const std::string role = str(m, "role");
      ChatMessage cm{role == "assistant" ? ChatRole::kAssistant
                     : role == "tool"    ? ChatRole::kTool
                                         : ChatRole::kUser,
                     str(m, "content"),
                     {}};
      if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
        for (const auto& c : m["tool_calls"]) {
          if (c.is_object() && !str(c, "name").empty())
            cm.tool_calls.push_back(
                {str(c, "name"), c.contains("arguments") ? c["arguments"].dump() : "{}"});
        }
      }
      messages.push_back(std::move(cm));
    }
    std::vector<std::string> tools;  // as the engine shows them: keys sorted
    if (j.contains("tools") && j["tools"].is_array())
      for (const auto& t : j["tools"]) tools.push_back(nlohmann::json::parse(t.dump()).dump());
    auto text = format.render(messages, tools, false);
    if (!text) return text.error();
    out.push_back(std::move(*text));
  }
  if (!plain.empty()) out.push_back(std::move(plain));
  return out;
}

Expected<TinyTokenizerOptions> tokenizer_options(const InitArgs& a) {
  TinyTokenizerOptions o{.merges = a.merges};
  std::vector<std::string> files = a.tokenizer_texts;
  if (!a.tokenizer_corpus.empty()) files.insert(files.begin(), a.tokenizer_corpus);
  if (files.empty()) return o;
  // The built-in tokenizer renders the transcripts (rendering needs no merges).
  ASSIGN_OR_RETURN(std::string json, tiny_tokenizer_json({.merges = 0}));
  ASSIGN_OR_RETURN(Tokenizer builtin, Tokenizer::from_json(json, "built-in tiny tokenizer"));
  ASSIGN_OR_RETURN(ChatFormat format,
                   ChatFormat::create(std::make_shared<const Tokenizer>(std::move(builtin))));
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(std::vector<std::string> texts, tokenizer_training_text(f, format));
    for (std::string& t : texts) o.extra_text.push_back(std::move(t));
  }
  return o;
}

int run_init(const InitArgs& a) {
  auto dtype = parse_dtype_name(a.dtype);
  if (!dtype) return report(dtype.error());
  if (a.arch != "qwen2" && a.arch != "llama" && a.arch != "qwen3") {
    return report(
        make_error(ErrorCategory::kInvalidInput, "cli.usage", "--arch: qwen2, llama or qwen3"));
  }
  auto topts = tokenizer_options(a);
  if (!topts) return report(topts.error());
  if (Status s = write_tiny_tokenizer(a.dir, *topts); !s) return report(s.error());
  auto tok = Tokenizer::load(a.dir + "/tokenizer.json");
  if (!tok) return report(tok.error());
  auto config = init_config(a, std::int64_t(tok->vocab_size()));
  if (!config) return report(config.error());
  ModelConfig& c = *config;
  if (auto eos = tok->token_to_id("<|endoftext|>")) c.eos_token_id = *eos;
  Transformer m = Transformer::random(c, a.seed, {.dtype = *dtype});
  std::int64_t count = 0;
  for (const auto& [name, t] : m.parameters()) count += t.numel();
  if (Status s = m.save(a.dir); !s) return report(s.error());
  std::printf(
      "wrote %s/{config.json,model.safetensors,tokenizer.json}: %s, vocab %lld%s, "
      "%lld parameters (%.2fM): layers %lld, hidden %lld, heads %lld/%lld kv, head_dim "
      "%lld, intermediate %lld, max positions %lld\n",
      a.dir.c_str(), a.arch.c_str(), static_cast<long long>(c.vocab_size),
      topts->extra_text.empty() ? " (built-in tokenizer)" : " (tokenizer fitted to the text given)",
      static_cast<long long>(count), double(count) / 1e6,
      static_cast<long long>(c.num_hidden_layers), static_cast<long long>(c.hidden_size),
      static_cast<long long>(c.num_attention_heads), static_cast<long long>(c.num_key_value_heads),
      static_cast<long long>(c.head_dim), static_cast<long long>(c.intermediate_size),
      static_cast<long long>(c.max_position_embeddings));
  if (count != parameter_count(c))
    std::fprintf(stderr, "cuda-agent-model: note: the shape formula counts %lld parameters\n",
                 static_cast<long long>(parameter_count(c)));
  return 0;
}

struct RunArgs {
  std::string dir, prompt, input, output, device = "cpu", dtype;
  std::int64_t max_new_tokens = 32, top_k = 0, chunk = 0, max_batch = 16, prefill_chunk = 512;
  double temperature = 0, top_p = 1;
  std::vector<std::string> stop;
  std::uint64_t seed = 0;
  bool json = false;
};

Expected<Transformer> load_model(const RunArgs& a) {
  LoadOptions o;
  if (a.device == "cuda") {
    if (!torch::cuda::is_available()) {
      return make_error(ErrorCategory::kUnavailable, "model.no_gpu",
                        "--device cuda: no GPU visible to libtorch");
    }
    o.device = at::kCUDA;
  } else if (a.device != "cpu") {
    return make_error(ErrorCategory::kInvalidInput, "cli.usage", "--device: cpu or cuda");
  }
  if (!a.dtype.empty()) {
    ASSIGN_OR_RETURN(at::ScalarType t, parse_dtype_name(a.dtype));
    o.dtype = t;
  }
  return Transformer::load(a.dir, o);
}

// Prompts from --input: {"ids": [...]} or {"text": "..."} per line.
Expected<std::vector<std::vector<std::int64_t>>> read_prompts(const RunArgs& a,
                                                              const Tokenizer* tok) {
  std::vector<std::vector<std::int64_t>> out;
  auto encode = [&](const std::string& text) -> Expected<std::vector<std::int64_t>> {
    if (tok == nullptr) {
      return make_error(ErrorCategory::kNotFound, "model.no_tokenizer",
                        a.dir + ": no tokenizer.json for a text prompt");
    }
    ASSIGN_OR_RETURN(auto ids, tok->encode(text));
    return std::vector<std::int64_t>(ids.begin(), ids.end());
  };
  if (a.input.empty()) {
    ASSIGN_OR_RETURN(auto ids, encode(a.prompt));
    out.push_back(std::move(ids));
    return out;
  }
  std::ifstream in(a.input);
  if (!in) return make_error(ErrorCategory::kNotFound, "cli.no_input", a.input + ": cannot open");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("ids") && j["ids"].is_array()) {
      out.push_back(j["ids"].get<std::vector<std::int64_t>>());
    } else if (!j.is_discarded() && j.is_object() && j.contains("text") && j["text"].is_string()) {
      ASSIGN_OR_RETURN(auto ids, encode(j["text"].get<std::string>()));
      out.push_back(std::move(ids));
    } else {
      return make_error(
          ErrorCategory::kInvalidInput, "cli.bad_input",
          a.input + ":" + std::to_string(n) + ": expected {\"ids\":[...]} or {\"text\":...}");
    }
  }
  return out;
}

int run_generate(const RunArgs& a) {
  auto model = load_model(a);
  if (!model) return report(model.error());
  std::optional<Tokenizer> tok;
  if (std::filesystem::exists(a.dir + "/tokenizer.json")) {
    auto t = Tokenizer::load(a.dir + "/tokenizer.json");
    if (!t) return report(t.error());
    tok = std::move(*t);
  }
  auto prompts = read_prompts(a, tok ? &*tok : nullptr);
  if (!prompts) return report(prompts.error());
  std::int64_t longest = 0;
  for (const auto& p : *prompts) longest = std::max<std::int64_t>(longest, p.size());
  auto shared = std::make_shared<const Transformer>(std::move(*model));
  auto engine = GenerationEngine::create(shared, 0,
                                         {.max_batch = a.max_batch,
                                          .max_seq_len = longest + a.max_new_tokens,
                                          .prefill_chunk_tokens = a.prefill_chunk});
  if (!engine) return report(engine.error());
  SamplingParams params{.temperature = a.temperature,
                        .top_p = a.top_p,
                        .top_k = a.top_k,
                        .seed = a.seed,
                        .max_new_tokens = a.max_new_tokens};
  if (shared->config().eos_token_id) params.stop_tokens.push_back(*shared->config().eos_token_id);
  if (tok) {
    for (const char* s : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tok->token_to_id(s)) params.stop_tokens.push_back(*id);
    }
    engine->set_detokenizer([t = *tok](std::span<const std::int64_t> ids) {
      std::vector<TokenId> v(ids.begin(), ids.end());
      auto text = t.decode(v);
      return text ? *text : std::string();
    });
  }
  params.stop_strings = a.stop;
  for (std::size_t i = 0; i < prompts->size(); ++i) {
    SamplingParams p = params;
    p.seed = a.seed + i;
    if (Status s = engine->submit({.id = i, .prompt = (*prompts)[i], .params = p}); !s)
      return report(s.error());
  }
  auto results = engine->run();
  if (!results) return report(results.error());
  std::sort(results->begin(), results->end(), [](auto& x, auto& y) { return x.id < y.id; });
  for (const auto& r : *results) {
    std::string text;
    if (tok) {
      std::vector<TokenId> ids(r.tokens.begin(), r.tokens.end());
      auto t = tok->decode_lossy(ids);
      if (t) text = *t;
    }
    if (a.json) {
      nlohmann::json j = {{"id", r.id},
                          {"tokens", r.tokens},
                          {"logprobs", r.logprobs},
                          {"finish", to_string(r.finish)},
                          {"text", text}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::printf("%s\n", text.c_str());
    }
  }
  return 0;
}

// Logits of every position of every prompt, float32, as tensors "logits.<i>" [T, vocab].
int run_logits(const RunArgs& a) {
  auto model = load_model(a);
  if (!model) return report(model.error());
  auto prompts = read_prompts(a, nullptr);
  if (!prompts) return report(prompts.error());
  std::vector<at::Tensor> keep;
  std::vector<SafetensorsWriteTensor> out;
  try {
    for (std::size_t i = 0; i < prompts->size(); ++i) {
      const auto& ids = (*prompts)[i];
      const std::int64_t T = std::int64_t(ids.size());
      auto tokens =
          at::tensor(ids, at::TensorOptions().dtype(at::kLong)).to(model->device()).view({1, T});
      auto add = [&](const std::string& name, const at::Tensor& logits) {
        auto cpu = logits.squeeze(0).to(at::kFloat).to(at::kCPU).contiguous();
        keep.push_back(cpu);
        out.push_back({.name = name + "." + std::to_string(i),
                       .dtype = StDtype::kF32,
                       .shape = {cpu.size(0), cpu.size(1)},
                       .data = cpu.data_ptr(),
                       .bytes = std::size_t(cpu.numel() * 4)});
      };
      add("logits", model->forward(tokens));
      if (a.chunk > 0) {  // again through the KV cache, `chunk` tokens at a time
        KvCache cache = model->make_cache(1, T);
        std::vector<at::Tensor> parts;
        for (std::int64_t b = 0; b < T; b += a.chunk) {
          const std::int64_t len = std::min(a.chunk, T - b);
          parts.push_back(model->forward(tokens.narrow(1, b, len), &cache, {0}, {b}));
        }
        add("cached", at::cat(parts, 1));
      }
    }
  } catch (const c10::Error& e) {
    return report(
        make_error(ErrorCategory::kInternal, "model.torch_error", e.what_without_backtrace()));
  }
  if (Status s = write_safetensors(a.output, out); !s) return report(s.error());
  std::printf("wrote %zu logits tensors to %s\n", out.size(), a.output.c_str());
  return 0;
}

void add_run_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("dir", a.dir, "model directory (config.json, *.safetensors, tokenizer.json)")
      ->required();
  cmd->add_option("--input", a.input, "prompts, one {\"ids\":[...]} or {\"text\":...} per line");
  cmd->add_option("--device", a.device, "cpu or cuda")->capture_default_str();
  cmd->add_option("--dtype", a.dtype, "fp32, bf16 or fp16 (default: config.json's torch_dtype)");
}

}  // namespace
}  // namespace cuda_agent

int main(int argc, char** argv) {
  using namespace cuda_agent;
  CLI::App app{"cuda-agent-model: the policy network (libtorch): init, generate, logits"};
  app.require_subcommand(1);
  int exit_code = 0;

  InitArgs init_args;
  auto* init = app.add_subcommand("init", "Write a small random model in Hugging Face format");
  init->add_flag("--tiny", init_args.tiny,
                 "the tiny shape (2 layers, hidden 64, 4/2 heads, intermediate 80): the default "
                 "when neither --params nor a shape flag is given");
  init->add_option("dir", init_args.dir, "output directory (created)")->required();
  init->add_option("--params", init_args.params,
                   "about this many parameters (1M, 10M, 250K): the nearest of a ladder of "
                   "shapes for the tokenizer's vocabulary; shape flags override its fields");
  init->add_option("--layers", init_args.layers, "transformer layers")->check(CLI::PositiveNumber);
  init->add_option("--hidden", init_args.hidden, "hidden size")->check(CLI::PositiveNumber);
  init->add_option("--heads", init_args.heads, "query heads (head_dim = hidden / heads)")
      ->check(CLI::PositiveNumber);
  init->add_option("--kv-heads", init_args.kv_heads, "key/value heads (divides --heads)")
      ->check(CLI::PositiveNumber);
  init->add_option("--intermediate", init_args.intermediate, "SwiGLU intermediate size")
      ->check(CLI::PositiveNumber);
  init->add_option("--max-positions", init_args.max_positions,
                   "max_position_embeddings: the longest sequence the engine and learner take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  init->add_option("--tokenizer-corpus", init_args.tokenizer_corpus,
                   "train the tokenizer's merges on this file too: a cuda-agent-corpus JSONL "
                   "(each transcript as the chat template renders it) or plain text");
  init->add_option("--tokenizer-text", init_args.tokenizer_texts,
                   "more plain-text training files for the tokenizer (repeatable; e.g. "
                   "rollout/agent_skill.md)");
  init->add_option("--merges", init_args.merges, "BPE merges to learn")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  init->add_option("--arch", init_args.arch, "qwen2, llama or qwen3")->capture_default_str();
  init->add_option("--dtype", init_args.dtype, "fp32, bf16 or fp16")->capture_default_str();
  init->add_option("--seed", init_args.seed, "weights seed")->capture_default_str();
  init->callback([&] { exit_code = run_init(init_args); });

  RunArgs gen_args;
  auto* gen = app.add_subcommand("generate", "Generate from a prompt (or prompts from --input)");
  add_run_options(gen, gen_args);
  gen->add_option("--prompt", gen_args.prompt, "prompt text (tokenized with DIR/tokenizer.json)");
  gen->add_option("--max-new-tokens", gen_args.max_new_tokens)->capture_default_str();
  gen->add_option("--temperature", gen_args.temperature, "0: greedy")->capture_default_str();
  gen->add_option("--top-p", gen_args.top_p)->capture_default_str();
  gen->add_option("--top-k", gen_args.top_k, "0: off")->capture_default_str();
  gen->add_option("--seed", gen_args.seed, "sampling seed (prompt i uses seed + i)")
      ->capture_default_str();
  gen->add_option("--max-batch", gen_args.max_batch, "requests decoded together")
      ->capture_default_str();
  gen->add_option("--prefill-chunk", gen_args.prefill_chunk, "prefill chunk, tokens")
      ->capture_default_str();
  gen->add_option("--stop", gen_args.stop, "stop string (repeatable; needs DIR/tokenizer.json)");
  gen->add_flag("--json", gen_args.json,
                "one JSON line per prompt: tokens, logprobs, finish, text");
  gen->callback([&] { exit_code = run_generate(gen_args); });

  RunArgs log_args;
  auto* logits = app.add_subcommand("logits", "Write every position's logits for --input prompts");
  add_run_options(logits, log_args);
  logits->get_option("--input")->required();
  logits->add_option("--output", log_args.output, "output .safetensors")->required();
  logits->add_option("--chunk", log_args.chunk,
                     "also write cached.<i>: the logits through the KV cache, N tokens per call");
  logits->callback([&] { exit_code = run_logits(log_args); });

  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
