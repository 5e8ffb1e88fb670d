// cuda-agent-model: the torch-linked half of `cuda-agent model` (the policy network). A separate
// executable so that `cuda-agent` itself stays torch-free (no 1 s libtorch start-up, no torch
// build for the coordinator); `cuda-agent model init|generate|logits` exec this binary.
//
//   cuda-agent-model init --tiny DIR [--arch qwen2|llama|qwen3] [--dtype fp32|bf16] [--seed N]
//   cuda-agent-model generate DIR --prompt TEXT [--max-new-tokens N] [--temperature T]
//                    [--top-p P] [--top-k K] [--seed N] [--device cpu|cuda] [--dtype ...] [--json]
//   cuda-agent-model generate DIR --input PROMPTS.jsonl --json    ({"ids":[...]} per line)
//   cuda-agent-model logits DIR --input PROMPTS.jsonl --output LOGITS.safetensors [--chunk N]
//     (tensors logits.<i> [T, vocab] float32 from one full forward; with --chunk also cached.<i>)
//
// Exit codes: 0 success, 1 the job failed, 2 bad input.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

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
};

int run_init(const InitArgs& a) {
  if (!a.tiny)
    return report(
        make_error(ErrorCategory::kInvalidInput, "cli.usage", "only --tiny is implemented"));
  if (Status s = write_tiny_tokenizer(a.dir); !s) return report(s.error());
  auto tok = Tokenizer::load(a.dir + "/tokenizer.json");
  if (!tok) return report(tok.error());
  auto dtype = parse_dtype_name(a.dtype);
  if (!dtype) return report(dtype.error());
  if (a.arch != "qwen2" && a.arch != "llama" && a.arch != "qwen3") {
    return report(
        make_error(ErrorCategory::kInvalidInput, "cli.usage", "--arch: qwen2, llama or qwen3"));
  }
  ModelConfig c = tiny_model_config(a.arch, std::int64_t(tok->vocab_size()), /*head_dim=*/16);
  if (auto eos = tok->token_to_id("<|endoftext|>")) c.eos_token_id = *eos;
  Transformer m = Transformer::random(c, a.seed, {.dtype = *dtype});
  if (Status s = m.save(a.dir); !s) return report(s.error());
  std::printf("wrote %s/{config.json,model.safetensors,tokenizer.json}: %s, vocab %lld\n",
              a.dir.c_str(), a.arch.c_str(), static_cast<long long>(c.vocab_size));
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
  init->add_flag("--tiny", init_args.tiny, "a tiny random model (2 layers, hidden 64)")->required();
  init->add_option("dir", init_args.dir, "output directory (created)")->required();
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
