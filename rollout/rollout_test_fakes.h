// Test-only fakes for the rollout worker's tests (rollout/rollout_worker_test.cpp, the
// multi-process helper tests/rollout_crash_worker.cpp and tests/rollout_serve_test.cpp); never
// linked into the product.
//  - a replay transcript that writes a solution, compiles and finishes, with token ids and
//    logprobs derived from the episode number so a stored trajectory can be checked exactly;
//  - FakeEvaluationTools: compile and evaluate without nvcc or a GPU; an optional hook runs
//    inside compile (to hold an episode in a tool);
//  - fake_job(n): job "e<n>" of task "t/<n % 2>" that replays fake_transcript(n) with the fake
//    tools, at policy version 7;
//  - FaultyRolloutStore: a real store behind the interface that fails chosen writes.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rollout/episode.h"
#include "rollout/replay_policy.h"
#include "rollout/rollout_store.h"
#include "rollout/rollout_worker.h"

namespace cuda_agent::testing {

inline const char* kFakeModelPy =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n";

/// Token ids of turn `turn` of episode number `n` (3 ids) and their logprobs.
inline std::vector<std::int32_t> fake_tokens(int n, int turn) {
  return {1000 * n + 10 * turn + 1, 1000 * n + 10 * turn + 2, 1000 * n + 10 * turn + 3};
}
inline std::vector<float> fake_logprobs(int turn) {
  return {-0.5f - turn, -0.25f - turn, -0.125f - turn};
}

/// Two assistant turns: write kernels/k.cu and model_new.py and compile; then finish.
inline std::string fake_transcript(int n) {
  using nlohmann::json;
  auto call = [](const std::string& name, json args) {
    return json{{"name", name}, {"arguments", std::move(args)}};
  };
  json t1 = {{"role", "assistant"},
             {"content", ""},
             {"tool_calls",
              {call("write_file", {{"path", "kernels/k.cu"}, {"content", "// kernel"}}),
               call("write_file", {{"path", "model_new.py"}, {"content", "class ModelNew: pass"}}),
               call("compile", json::object())}},
             {"token_ids", fake_tokens(n, 0)},
             {"logprobs", fake_logprobs(0)}};
  json t2 = {{"role", "assistant"},
             {"content", ""},
             {"tool_calls", {call("finish", json::object())}},
             {"token_ids", fake_tokens(n, 1)},
             {"logprobs", fake_logprobs(1)}};
  return t1.dump() + "\n" + t2.dump() + "\n";
}

class FakeEvaluationTools final : public EvaluationTools {
 public:
  /// Runs inside every compile (e.g. to hold the episode in a tool); may be empty.
  std::function<void()> in_compile;
  Expected<CompileResult> compile(const std::vector<SourceFile>&) override {
    if (in_compile) in_compile();
    return CompileResult{};
  }
  Expected<EvaluationOutcome> evaluate(BenchMode, const std::string&,
                                       const std::vector<SourceFile>&, const CompileResult&,
                                       bool final_evaluation) override {
    EvaluationOutcome out{.report = final_evaluation ? "final: correct, 1.2x" : "correct",
                          .correct = true,
                          .reward_tier = 2,
                          .speedup_vs_eager = 1.2,
                          .speedup_vs_compile = 0.9};
    if (final_evaluation) out.bench = fake_bench_result();
    return out;
  }
  /// What a bench would return for the final evaluation: audit, trials and reward.
  static BenchResult fake_bench_result() {
    BenchResult b;
    b.candidate_trial_us = {100, 101, 99};
    b.eager_trial_us = {120, 121, 119};
    b.compile_trial_us = {90, 91, 89};
    b.speedup_vs_eager = 1.2;
    b.speedup_vs_compile = 0.9;
    b.reward.tier = 2;
    b.audit.task_hash = "task-hash-fake";
    b.audit.artifact_hash = "artifact-hash-fake";
    b.audit.gpu_name = "Fake GPU";
    b.audit.torch_version = "2.11";
    b.audit.checks_run = {"tolerance[seed=1]"};
    return b;
  }
};

/// One attempt at episode number `n`: a fresh replay of fake_transcript(n), FakeEvaluationTools
/// whose compile runs `in_compile` (may be empty), the fake model.py, policy version 7.
inline Expected<PreparedEpisode> fake_prepared_episode(int n,
                                                       std::function<void()> in_compile = {}) {
  ASSIGN_OR_RETURN(auto policy, ReplayPolicy::parse(fake_transcript(n), "fake"));
  auto tools = std::make_unique<FakeEvaluationTools>();
  tools->in_compile = std::move(in_compile);
  PreparedEpisode p;
  p.spec.model_py = kFakeModelPy;
  p.spec.policy_version = PolicyVersion{7};
  p.policy = std::move(policy);
  p.tools = std::move(tools);
  p.spec.policy = p.policy.get();
  p.spec.tools = p.tools.get();
  return p;
}

/// Job "e<n>" of task "t/<n % 2>" preparing fake_prepared_episode(n, in_compile); with
/// `evaluation`, it also asks for evaluation record "run/e<n>".
inline RolloutJob fake_job(int n, std::function<void()> in_compile = {}, bool evaluation = true) {
  RolloutJob job{.episode_id = EpisodeId{"e" + std::to_string(n)},
                 .task_id = TaskId{"t/" + std::to_string(n % 2)},
                 .prepare = [n, in_compile = std::move(in_compile)] {
                   return fake_prepared_episode(n, in_compile);
                 }};
  if (evaluation) job.evaluation_id = EvaluationId{"run/e" + std::to_string(n)};
  return job;
}

/// The real store behind the interface; `fail_write` (may be empty) decides per write, by its
/// 1-based number, whether to fail it with that error instead of writing.
class FaultyRolloutStore final : public RolloutStore {
 public:
  explicit FaultyRolloutStore(RolloutStore& real) : real_(real) {}
  std::function<std::optional<Error>(int write_number, const StoreWrite&)> fail_write;
  std::atomic<int> writes{0};

  Status write(StoreWrite w, std::chrono::milliseconds timeout) override {
    const int n = ++writes;
    if (fail_write) {
      if (std::optional<Error> e = fail_write(n, w)) return *e;
    }
    return real_.write(std::move(w), timeout);
  }
  Expected<std::vector<EpisodeAttemptRecord>> attempts(const RunId& run) const override {
    return real_.attempts(run);
  }
  Expected<std::optional<EpisodeSummary>> episode(const RunId& run,
                                                  const EpisodeId& episode) const override {
    return real_.episode(run, episode);
  }

 private:
  RolloutStore& real_;
};

}  // namespace cuda_agent::testing
