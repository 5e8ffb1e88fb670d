// Options of the rollout workers and episodes (manifest section [rollout]). DESIGN.md section 6.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct RolloutOptions {
  static constexpr std::string_view kSection = "rollout";
  static constexpr std::string_view kDoc =
      "Rollout workers: run agent episodes with the policy and the compile and bench tools.";

  std::int64_t max_turns = 200;
  std::int64_t max_context_tokens = 131'072;
  std::int64_t episode_wall_ms = 4 * 3'600'000;
  std::int64_t concurrent_episodes = 64;
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t max_new_tokens_per_turn = 8192;
  std::string policy_backend = "openai";
  std::string policy_endpoint = "http://127.0.0.1:8000/v1";
  std::string policy_model;
  bool request_token_ids = true;
  std::string replay_transcripts;
  std::int64_t episodes_per_task = 1;
  std::int64_t generation_slots = 0;
  std::int64_t max_attempts = 2;
  std::string reward = "full";
  std::string system_prompt = "skill";

  template <class V>
  void visit(V& v) {
    v({.key = "max_turns", .unit = "turns", .doc = "Turns before an episode is ended.", .min = 1},
      max_turns);
    v({.key = "max_context_tokens",
       .unit = "tokens",
       .doc = "Context length (prompt, model output and tool results) before an episode is ended.",
       .min = 1024},
      max_context_tokens);
    v({.key = "episode_wall_ms",
       .unit = "ms",
       .doc = "Wall-clock budget of one episode, tool time included.",
       .min = 1000},
      episode_wall_ms);
    v({.key = "concurrent_episodes",
       .unit = "episodes",
       .doc = "Episodes one rollout worker runs at once; an episode waiting on a tool holds no "
              "generation slot.",
       .min = 1},
      concurrent_episodes);
    v({.key = "temperature", .doc = "Sampling temperature.", .min = 0.0, .max = 10.0}, temperature);
    v({.key = "top_p", .doc = "Nucleus-sampling mass.", .min = 0.0, .max = 1.0}, top_p);
    v({.key = "max_new_tokens_per_turn",
       .unit = "tokens",
       .doc = "Tokens the policy may generate in one turn.",
       .min = 1},
      max_new_tokens_per_turn);
    v({.key = "policy_backend",
       .doc = "What answers the policy calls of `cuda-agent serve rollout-worker`: 'openai', an "
              "OpenAI-compatible chat-completions server (vLLM, SGLang) at policy_endpoint; "
              "'replay', recorded transcripts from replay_transcripts (tests, reproducing "
              "episodes). The in-process libtorch engine is not in the cuda-agent binary yet.",
       .choices = {"openai", "replay"}},
      policy_backend);
    v({.key = "policy_endpoint",
       .doc = "Base URL of the OpenAI-compatible server, up to /v1; with policy_backend = "
              "'openai'. The API key, if the server wants one, comes from $OPENAI_API_KEY."},
      policy_endpoint);
    v({.key = "policy_model",
       .doc = "Model name sent to the server (its served model name); required with "
              "policy_backend = 'openai'."},
      policy_model);
    v({.key = "request_token_ids",
       .doc = "'openai': ask for the sampled token ids and logprobs (vLLM's "
              "return_tokens_as_token_ids) so trajectories are token-in-token-out, as training "
              "needs; false for servers that cannot return them (evaluation only)."},
      request_token_ids);
    v({.key = "replay_transcripts",
       .doc = "With policy_backend = 'replay': a JSON Lines transcript replayed for every "
              "episode, or a directory holding <task name>.jsonl per task. Relative paths are "
              "relative to the manifest's directory."},
      replay_transcripts);
    v({.key = "episodes_per_task",
       .unit = "episodes",
       .doc = "Episodes of each train-set task a rollout worker runs (their ids are "
              "'<task id>#<k>'); the workers of a run share them out by episode.",
       .min = 1,
       .max = 1'000'000},
      episodes_per_task);
    v({.key = "generation_slots",
       .unit = "calls",
       .doc = "Policy calls one rollout worker has in flight at once (the policy server's "
              "capacity); 0 means as many as concurrent_episodes.",
       .min = 0},
      generation_slots);
    v({.key = "max_attempts",
       .unit = "attempts",
       .doc = "Attempts at one episode, counting the first, before it is stored as aborted. An "
              "attempt cut because its worker was stopped (SIGTERM) does not count; one whose "
              "worker was lost does.",
       .min = 1,
       .max = 100},
      max_attempts);
    v({.key = "reward",
       .doc = "What an episode's final reward measures. 'full': the evaluation protocol on the "
              "GPU bench pool (correctness, then speed: tiers -1 / +1 / +2 / +3). "
              "'compile-only', for a run without a GPU: +1 when the final workspace builds under "
              "the compile farm's source and symbol policies, -1 otherwise; nothing is run, so "
              "correctness and speed are not measured, the agent's verify / benchmark / profile "
              "calls are answered saying so, every final report says so, and the rollout "
              "worker needs no bench pool. `cuda-agent train` sets it on a machine without a "
              "GPU.",
       .choices = {"full", "compile-only"}},
      reward);
    v({.key = "system_prompt",
       .doc = "What opens every episode as the system message. 'skill': the agent skill "
              "document (rollout/agent_skill.md: the workspace, launchers, tools, the evaluation "
              "protocol and its rules), what real policies need. 'brief': a few lines naming the "
              "workspace files and tools, for tiny policies on a CPU where every prompt token "
              "costs attention time (the embedded CPU manifest uses it).",
       .choices = {"skill", "brief"}},
      system_prompt);
  }
};

}  // namespace cuda_agent
