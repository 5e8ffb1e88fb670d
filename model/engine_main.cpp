// cuda-agent-engine: the policy engine service (`cuda-agent serve policy-engine` execs it), an
// OpenAI-compatible HTTP server over one GenerationEngine (model/engine_server.h). Torch-linked,
// so it is a binary of its own beside the torch-free CLI, like cuda-agent-model.
//
//   cuda-agent-engine --model DIR [--port 8000] [--host 127.0.0.1] [--max-batch 16]
//                     [--max-seq-len 4096] [--device cpu|cuda|cuda:N] [--dtype fp32|bf16|fp16]
//                     [--version N] [--policy-dir DIR] [--served-model-name NAME]
//                     [--drain-timeout-ms MS]
//
// --policy-dir DIR: where the learner publishes each new version as a complete model directory
// DIR/v<N> (learner/learner_service.cpp, LearnerService::publish: written as .tmp-* and renamed,
// so every v<N> is whole). When DIR holds any v<N>, the engine starts from the newest (highest N)
// instead of --model and reports version N, as --version would: an engine restarted after a kill
// serves the weights the run is at, not the base model. Only "v" followed by digits counts
// (.tmp-*, .old-* and anything else are ignored); a missing or empty DIR means --model and
// --version as before; a v<N> that fails to load is an error naming it (no silent fallback).
// Which one it loads is printed before loading ("cuda-agent-engine: policy dir DIR: ...").
//
// Prints "cuda-agent-engine: listening on http://HOST:PORT ..." once it serves. SIGTERM or
// SIGINT drains: new requests get 503, running ones finish within --drain-timeout-ms (the rest
// end with "engine.drain_deadline"), then it exits 0. Exit codes: 0 after a drain, 1 the engine
// failed to start, 2 bad input (flags, model directory).
#include <CLI/CLI.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "model/engine_server.h"

namespace {

// A version the learner published under --policy-dir: DIR/v<N>.
struct PublishedVersion {
  std::filesystem::path dir;
  std::int64_t version = 0;
};

// "v12" -> 12; anything else (".tmp-v12-77", "v", "v1a", a number past int64) -> nullopt.
std::optional<std::int64_t> version_of_dir(const std::string& name) {
  if (name.size() < 2 || name.size() > 19 || name[0] != 'v') return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

// The newest v<N> directory in `policy_dir`; nullopt when it is missing or holds none.
cuda_agent::Expected<std::optional<PublishedVersion>> newest_published(
    const std::string& policy_dir) {
  namespace fs = std::filesystem;
  std::optional<PublishedVersion> newest;
  std::error_code ec;
  if (!fs::exists(policy_dir, ec)) return newest;
  for (fs::directory_iterator it(policy_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<std::int64_t> v = version_of_dir(it->path().filename().string());
    std::error_code type_ec;
    if (!v || !it->is_directory(type_ec)) continue;
    if (!newest || *v > newest->version) newest = PublishedVersion{it->path(), *v};
  }
  if (ec) {
    return cuda_agent::make_error(cuda_agent::ErrorCategory::kIo, "engine.policy_dir",
                                  "--policy-dir " + policy_dir + ": " + ec.message());
  }
  return newest;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cuda_agent;
  // Before any thread starts, so every thread inherits the mask and only sigwait sees them.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal

  EngineServerOptions o;
  CLI::App app{"cuda-agent-engine: the policy engine, an OpenAI-compatible HTTP server"};
  app.add_option("--model", o.core.model_dir,
                 "model directory (config.json, *.safetensors, tokenizer.json)")
      ->required();
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port (0: any free port)")->capture_default_str();
  app.add_option("--max-batch", o.core.max_batch, "requests decoded together (KV-cache slots)")
      ->capture_default_str();
  app.add_option("--max-seq-len", o.core.max_seq_len,
                 "context limit per request: prompt + max_tokens")
      ->capture_default_str();
  app.add_option("--prefill-chunk", o.core.prefill_chunk_tokens, "prefill chunk, tokens")
      ->capture_default_str();
  app.add_option("--device", o.core.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--dtype", o.core.dtype, "fp32, bf16 or fp16 (default: config.json's)");
  app.add_option("--version", o.core.policy_version, "policy version of the weights in --model")
      ->capture_default_str();
  std::string policy_dir;
  app.add_option("--policy-dir", policy_dir,
                 "the learner's published versions (DIR/v<N>): start from the newest one, as "
                 "version N, instead of --model");
  app.add_option("--served-model-name", o.model_name,
                 "`model` in replies (default: --model's dir name)");
  app.add_option("--request-timeout-ms", o.request_timeout_ms, "per request")
      ->capture_default_str();
  app.add_option("--drain-timeout-ms", o.drain_timeout_ms,
                 "on SIGTERM, how long running requests may take")
      ->capture_default_str();
  app.add_option("--http-threads", o.http_threads, "handler threads (0: 2 x max-batch + 16)")
      ->capture_default_str();
  bool no_graphs = false;
  app.add_flag("--no-cuda-graphs", no_graphs, "decode eagerly (no CUDA graph replay)");
  CLI11_PARSE(app, argc, argv);
  o.core.cuda_graphs = !no_graphs;

  auto report = [](const Error& e) {
    std::fprintf(stderr, "cuda-agent-engine: %s [%s/%s]\n", e.message.c_str(),
                 std::string(to_string(e.category)).c_str(), e.code.c_str());
    return e.category == ErrorCategory::kInvalidInput || e.category == ErrorCategory::kNotFound ? 2
                                                                                                : 1;
  };

  // A restarted engine resumes at the newest version the learner published (see the file comment).
  std::optional<PublishedVersion> published;
  if (!policy_dir.empty()) {
    auto newest = newest_published(policy_dir);
    if (!newest) return report(newest.error());
    published = *newest;
    if (published) {
      std::printf("cuda-agent-engine: policy dir %s: loading published version %lld from %s\n",
                  policy_dir.c_str(), (long long)published->version,
                  published->dir.string().c_str());
      if (o.model_name.empty()) {  // the name stays --model's, whichever version is loaded
        const std::filesystem::path p(o.core.model_dir);
        o.model_name = (p.has_filename() ? p : p.parent_path()).filename().string();
      }
      o.core.model_dir = published->dir.string();
      o.core.policy_version = published->version;
    } else {
      std::printf("cuda-agent-engine: policy dir %s: no published version; starting from %s\n",
                  policy_dir.c_str(), o.core.model_dir.c_str());
    }
    std::fflush(stdout);
  }
  auto server = EngineServer::create(o);
  if (!server) {
    if (!published) return report(server.error());
    return report(server.error().with_context("published policy version " +
                                              published->dir.string() + " (--policy-dir)"));
  }
  if (Status s = (*server)->start(); !s) return report(s.error());
  const EngineHealth h = (*server)->core().health();
  std::printf(
      "cuda-agent-engine: listening on http://%s:%d model %s version %lld, %lld slots x "
      "%lld tokens, device %s\n",
      o.host.c_str(), (*server)->port(), (*server)->model_name().c_str(),
      (long long)h.policy_version, (long long)h.slots, (long long)h.max_seq_len,
      o.core.device.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_set, &sig);
  std::printf("cuda-agent-engine: signal %d: draining (up to %lld ms)\n", sig,
              (long long)o.drain_timeout_ms);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  const bool in_time = (*server)->drain();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("cuda-agent-engine: drained in %.0f ms%s\n", ms,
              in_time ? "" : " (deadline passed: unfinished requests were ended)");
  std::fflush(stdout);
  return 0;
}
