// `cuda-agent model ...`: the torch-free text side of the policy model (model/tokenizer.h); the
// torch-linked commands (`model init|generate|logits`, `learn ...`, `serve learner`) exec their
// sibling binaries.
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cluster/launch_plan.h"
#include "model/tiny_tokenizer.h"
#include "model/tokenizer.h"

namespace cuda_agent::cli {
namespace {

struct TokenizeArgs {
  std::string dir;
  bool jsonl = false;
  bool add_special_tokens = false;
  bool decode = false;
};

// One output line per input line: {"ids":[...]} (or {"text":...} with --decode), or
// {"error":...} for a line that failed; the exit code is then 1.
int run_tokenize(const TokenizeArgs& args) {
  Expected<Tokenizer> tok = Tokenizer::load(args.dir);
  if (!tok) return report(tok.error());
  int exit_code = 0;
  std::string line;
  std::string out;
  for (std::size_t line_no = 1; std::getline(std::cin, line); ++line_no) {
    auto fail = [&](const std::string& message) {
      nlohmann::json e = {{"error", "stdin:" + std::to_string(line_no) + ": " + message}};
      out = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      exit_code = 1;
    };
    if (args.decode) {
      nlohmann::json in = nlohmann::json::parse(line, nullptr, false);
      if (in.is_discarded() || !in.is_object() || !in.contains("ids") || !in["ids"].is_array()) {
        fail("expected {\"ids\": [...]}");
      } else {
        std::vector<TokenId> ids;
        bool ok = true;
        for (const auto& v : in["ids"]) {
          ok &= v.is_number_unsigned() && v.get<std::uint64_t>() <= 0xffffffffULL;
          if (ok) ids.push_back(v.get<TokenId>());
        }
        Expected<std::string> text =
            ok ? tok->decode_lossy(ids)
               : Expected<std::string>(make_error(ErrorCategory::kInvalidInput, "cli.bad_id",
                                                  "ids must be non-negative integers"));
        if (!text) {
          fail(text.error().message);
        } else {
          out = nlohmann::json{{"text", *text}}.dump();
        }
      }
    } else {
      std::string text = line;
      bool ok = true;
      if (args.jsonl) {
        nlohmann::json in = nlohmann::json::parse(line, nullptr, false);
        ok = !in.is_discarded() && in.is_object() && in.contains("text") && in["text"].is_string();
        if (ok) {
          text = in["text"].get<std::string>();
        } else {
          fail("expected {\"text\": \"...\"}");
        }
      }
      if (ok) {
        Expected<std::vector<TokenId>> ids = tok->encode(text, args.add_special_tokens);
        if (!ids) {
          fail(ids.error().message);
        } else {
          out = "{\"ids\":[";
          for (std::size_t i = 0; i < ids->size(); ++i) {
            if (i) out += ',';
            out += std::to_string((*ids)[i]);
          }
          out += "]}";
        }
      }
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  std::fflush(stdout);
  return exit_code;
}

// `serve learner` with --manifest M: the manifest's settings for every flag of `cuda-agent-learn
// serve` the command line does not give itself (the launch plan gives the run's paths, endpoints
// and engines explicitly; the [learner] and [model] settings and the CURVE keys come from here).
Expected<std::vector<std::string>> learner_serve_args(std::vector<std::string> args) {
  std::string manifest_path;
  bool has_manifest = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--manifest" || args[i].rfind("--manifest=", 0) == 0) {
      has_manifest = true;
      if (args[i] == "--manifest") {
        if (i + 1 >= args.size())
          return make_error(ErrorCategory::kInvalidInput, "cli.usage",
                            "serve learner: --manifest needs a file");
        manifest_path = args[i + 1];
        args.erase(args.begin() + std::ptrdiff_t(i), args.begin() + std::ptrdiff_t(i) + 2);
      } else {
        manifest_path = args[i].substr(std::string("--manifest=").size());
        args.erase(args.begin() + std::ptrdiff_t(i));
      }
      break;
    }
  }
  if (!has_manifest) return args;
  ASSIGN_OR_RETURN(Manifest m, load_manifest_or_default(manifest_path));
  auto given = [&](const std::string& flag) {
    return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    });
  };
  std::vector<std::string> out = {"serve"};
  auto add = [&](const std::string& flag, const std::string& value) {
    if (!given(flag) && !value.empty()) out.insert(out.end(), {flag, value});
  };
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  add("--store", m.paths.store_dir.string());
  add("--run", m.run.name);
  add("--model", initial_model_dir(m).string());
  // The launch plan's learner directory: beside the store (cluster/launch_plan.cpp).
  add("--out", (m.paths.store_dir.parent_path() / "learner").string());
  add("--checkpoint-dir", m.paths.checkpoint_dir.string());
  add("--coordinator", coordinator_endpoint(m));
  add("--dtype", m.model.dtype);
  add("--lr", num(m.learner.actor_lr));
  add("--critic-lr", num(m.learner.critic_lr));
  add("--clip-low", num(m.learner.clip_low));
  add("--clip-high", num(m.learner.clip_high));
  // Log-probs of the distribution the engines sampled from: logits / the rollout's temperature.
  add("--temperature", num(m.rollout.temperature));
  add("--gamma", num(m.learner.gamma));
  add("--gae-lambda", num(m.learner.gae_lambda));
  add("--epochs", std::to_string(m.learner.ppo_epochs));
  add("--advantage", m.learner.advantage);
  if (m.learner.kl_coef > 0) add("--kl-coef", num(m.learner.kl_coef));
  if (m.learner.value_epochs > 1) add("--value-epochs", std::to_string(m.learner.value_epochs));
  if (m.learner.lr_warmup_steps > 0)
    add("--warmup-steps", std::to_string(m.learner.lr_warmup_steps));
  add("--skip-uniform-reward-batches", m.learner.skip_uniform_reward_batches ? "true" : "false");
  add("--micro-batch-tokens", std::to_string(m.learner.micro_batch_tokens));
  add("--timeout-ms", std::to_string(m.learner.nccl_timeout_ms));
  add("--heartbeat-ms", std::to_string(m.run.heartbeat_interval_ms));
  if (m.security.enabled()) {
    add("--curve-client-key", m.paths.client_secret_key_file.string());
    add("--curve-server-public-key", m.paths.server_public_key_file.string());
  }
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

}  // namespace

int exec_torch_binary(const std::string& exe_name, const std::vector<std::string>& args,
                      const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::string exe = exe_name;
  if (!ec && fs::exists(self.parent_path() / exe, ec)) exe = (self.parent_path() / exe).string();
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(exe.c_str(), argv.data());
  return report(make_error(ErrorCategory::kNotFound, "cli.no_torch_binary",
                           exe + ": " + std::strerror(errno) + " (build the " + exe_name +
                               " target; it holds the torch-linked " + what + ")"));
}

void add_model_commands(CLI::App& app, CommandResult& result) {
  auto* model = app.add_subcommand("model",
                                   "The policy model: tokenizer, chat format; init, generate, "
                                   "logits (torch-linked, via cuda-agent-model)");
  model->require_subcommand(1);

  auto* tokenize = model->add_subcommand(
      "tokenize",
      "Encode stdin with DIR/tokenizer.json: one line in, one {\"ids\":[...]} line out (a line "
      "that fails gives {\"error\":...} and exit code 1)");
  auto targs = std::make_shared<TokenizeArgs>();
  tokenize->add_option("dir", targs->dir, "directory holding tokenizer.json, or the file")
      ->required();
  tokenize->add_flag("--jsonl", targs->jsonl,
                     "each input line is {\"text\": \"...\"} (texts with newlines)");
  tokenize->add_flag("--add-special-tokens", targs->add_special_tokens,
                     "apply the post-processor template (Llama-3's BOS)");
  tokenize->add_flag("--decode", targs->decode,
                     "the reverse: {\"ids\":[...]} lines in, {\"text\":...} lines out "
                     "(invalid UTF-8 replaced by U+FFFD)");
  tokenize->callback([targs, &result] { result.exit_code = run_tokenize(*targs); });

  auto* init = model->add_subcommand(
      "init-tokenizer",
      "Write DIR/tokenizer.json: a tiny byte-level BPE in Qwen2's layout, trained on a "
      "built-in corpus (for tests and smoke runs)");
  struct InitArgs {
    std::string dir;
    int merges = 500;
    bool no_nfc = false;
  };
  auto iargs = std::make_shared<InitArgs>();
  init->add_option("dir", iargs->dir, "output directory (created)")->required();
  init->add_option("--merges", iargs->merges, "merges to learn")->capture_default_str();
  init->add_flag("--no-nfc", iargs->no_nfc, "no NFC normalizer (exact round trip of any text)");
  for (const char* name : {"init", "generate", "logits"}) {
    auto* sub = model->add_subcommand(
        name, std::string("The policy network (torch-linked): runs `cuda-agent-model ") + name +
                  " ...`; see `cuda-agent-model " + name + " --help`");
    sub->prefix_command();  // every argument after the name goes to cuda-agent-model
    sub->set_help_flag();
    sub->callback([sub, name, &result] {
      std::vector<std::string> args = sub->remaining();
      args.insert(args.begin(), name);
      result.exit_code = exec_torch_binary("cuda-agent-model", args, "model commands");
    });
  }

  init->callback([iargs, &result] {
    Status s = write_tiny_tokenizer(iargs->dir, {.merges = iargs->merges, .nfc = !iargs->no_nfc});
    if (!s) {
      result.exit_code = report(s.error());
      return;
    }
    std::printf("wrote %s/tokenizer.json\n", iargs->dir.c_str());
  });
}

void add_learn_commands(CLI::App& app, CommandResult& result) {
  auto* learn = app.add_subcommand(
      "learn",
      "The learner alone on stored episodes (torch-linked, via cuda-agent-learn): sft (RFT on the "
      "run's positive, completed episodes), value (critic pretraining), ppo; resumable from --out");
  learn->require_subcommand(1);
  for (const char* name : {"sft", "value", "ppo"}) {
    auto* sub = learn->add_subcommand(
        name, std::string("runs `cuda-agent-learn ") + name + " ...`; see `cuda-agent-learn " +
                  name + " --help` (--store DIR --run RUN --model DIR --out DIR [--steps N] ...)");
    sub->prefix_command();
    sub->set_help_flag();
    sub->callback([sub, name, &result] {
      std::vector<std::string> args = sub->remaining();
      args.insert(args.begin(), name);
      result.exit_code = exec_torch_binary("cuda-agent-learn", args, "learner");
    });
  }

  auto* serve = app.get_subcommand("serve")->add_subcommand(
      "learner",
      "The run's learner, driven by the coordinator: runs `cuda-agent-learn serve --store DIR "
      "--run RUN --model DIR --out DIR --coordinator tcp://HOST:PORT [--engine URL]... [--rank R "
      "--world-size W]`; with --manifest M, the manifest gives every flag not given ([learner], "
      "[model] dtype, [security] keys, the store, run and coordinator). See `cuda-agent-learn "
      "serve --help`");
  serve->prefix_command();
  serve->set_help_flag();
  serve->callback([serve, &result] {
    Expected<std::vector<std::string>> args = learner_serve_args(serve->remaining());
    if (!args) {
      result.exit_code = report(args.error());
      return;
    }
    if (args->empty() || (*args)[0] != "serve") args->insert(args->begin(), "serve");
    result.exit_code = exec_torch_binary("cuda-agent-learn", *args, "learner");
  });
}

}  // namespace cuda_agent::cli
