#include "rollout/episode.h"

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "compile_farm/compile_report.h"
#include "core/clock.h"
#include "rollout/agent_tools.h"

namespace cuda_agent {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::uint64_t ms_since(Clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

// What one tool call gave back.
struct ToolRun {
  std::string content;
  bool is_error = false;
  bool invalid_call = false;  // the call itself was malformed (counted)
  bool finish = false;
};

ToolRun error_run(std::string text, bool invalid_call = false) {
  return {std::move(text), true, invalid_call, false};
}

class EpisodeRunner {
 public:
  explicit EpisodeRunner(const EpisodeSpec& spec) : spec_(spec), workspace_(spec.model_py) {}

  Episode run();
  const EvaluationOutcome& final_outcome() const { return final_outcome_; }

 private:
  ToolRun run_tool(const ChatToolCall& call);
  ToolRun run_evaluation(BenchMode mode);
  Expected<const CompileResult*> build_current();
  std::int64_t context_tokens() const;
  EvaluationOutcome final_evaluation(std::string* report);
  Status take_prompt_tokens(const PolicyTurn& reply, std::int64_t turn_index);

  const EpisodeSpec& spec_;
  Workspace workspace_;
  std::vector<ChatMessage> messages_;
  std::optional<std::pair<std::uint64_t, Expected<CompileResult>>> built_;  // by revision
  std::string last_call_key_;
  std::int64_t reported_tokens_ = 0;
  std::size_t reported_messages_ = 0;  // messages_ the last reported usage covers
  // Every token id stored so far, in order, while the backend reports its prompts' ids (see
  // take_prompt_tokens); empty otherwise.
  std::vector<std::uint32_t> sequence_;
  bool token_exact_ = false;
  Episode episode_;
  EvaluationOutcome final_outcome_;
};

std::int64_t EpisodeRunner::context_tokens() const {
  // Backends that report usage are believed up to their last reply; the messages added since
  // (tool answers) are counted at two bytes a token plus 8 for each message's chat-template frame,
  // on the safe side: tool answers quoting malformed calls or compiler logs tokenize poorly, and
  // an estimate that comes out low makes the server refuse the turn (the first GPU demo's
  // refusals were 100-150 tokens over). Without any report: about four bytes per token.
  auto bytes_of = [](const ChatMessage& m) {
    std::int64_t bytes = static_cast<std::int64_t>(m.content.size());
    for (const auto& c : m.tool_calls)
      bytes += static_cast<std::int64_t>(c.name.size() + c.arguments_json.size());
    return bytes;
  };
  std::int64_t all = 0, since = 0;
  for (std::size_t i = 0; i < messages_.size(); ++i) {
    const std::int64_t bytes = bytes_of(messages_[i]);
    all += bytes;
    if (i >= reported_messages_) since += bytes / 2 + 8;
  }
  if (reported_tokens_ == 0) return all / 4;
  return std::max(reported_tokens_ + since, all / 4);
}

Expected<const CompileResult*> EpisodeRunner::build_current() {
  if (!built_ || built_->first != workspace_.revision())
    built_.emplace(workspace_.revision(), spec_.tools->compile(workspace_.solution_files()));
  if (!built_->second) return built_->second.error();
  return &*built_->second;
}

ToolRun EpisodeRunner::run_evaluation(BenchMode mode) {
  if (!workspace_.has("model_new.py"))
    return error_run("there is no model_new.py yet: write it (class ModelNew) before verifying");
  auto built = build_current();
  if (!built) return error_run("compile failed:\n" + built.error().message);
  auto outcome = spec_.tools->evaluate(mode, spec_.model_py, workspace_.solution_files(), **built,
                                       /*final_evaluation=*/false);
  if (!outcome) return error_run("the evaluation could not run: " + outcome.error().message);
  return {outcome->report, !outcome->correct, false, false};
}

ToolRun EpisodeRunner::run_tool(const ChatToolCall& call) {
  auto args = json::parse(call.arguments_json, nullptr, false);
  if (args.is_discarded() || !args.is_object())
    return error_run("the arguments of " + call.name +
                         " are not a JSON object: " + call.arguments_json.substr(0, 200),
                     true);
  auto text_arg = [&](const char* name) -> std::optional<std::string> {
    if (!args.contains(name) || !args[name].is_string()) return std::nullopt;
    return args[name].get<std::string>();
  };
  auto missing = [&](const char* name) {
    return error_run(call.name + " needs a string argument \"" + name + "\"", true);
  };
  auto from = [](Expected<std::string> r) {
    return r ? ToolRun{*r, false, false, false} : error_run(r.error().message);
  };

  if (call.name == "list_files") return from(workspace_.list_files());
  if (call.name == "read_file") {
    auto path = text_arg("path");
    return path ? from(workspace_.read_file(*path)) : missing("path");
  }
  if (call.name == "write_file") {
    auto path = text_arg("path");
    auto content = text_arg("content");
    if (!path) return missing("path");
    if (!content) return missing("content");
    return from(workspace_.write_file(*path, *content));
  }
  if (call.name == "edit_file") {
    auto path = text_arg("path");
    auto old_text = text_arg("old");
    auto new_text = text_arg("new");
    if (!path) return missing("path");
    if (!old_text) return missing("old");
    if (!new_text) return missing("new");
    return from(workspace_.edit_file(*path, *old_text, *new_text));
  }
  if (call.name == "compile") {
    auto built = build_current();
    if (!built) return error_run(built.error().message);
    return {compile_observation(**built), false, false, false};
  }
  if (call.name == "verify") return run_evaluation(BenchMode::kVerify);
  if (call.name == "benchmark") return run_evaluation(BenchMode::kBenchmark);
  if (call.name == "profile") return run_evaluation(BenchMode::kProfile);
  if (call.name == "finish")
    return {"finished; the final workspace is evaluated with unseen seeds", false, false, true};
  std::string names;
  for (const PolicyTool& t : agent_tools()) names += (names.empty() ? "" : ", ") + t.name;
  return error_run("there is no tool '" + call.name + "'; the tools are " + names, true);
}

// A backend that reports the prompt's token ids (cuda-agent-engine) makes the trajectory the
// exact sequence the model saw: the ids new since the previous model turn (the system and task
// prompt, tool output, chat-template tokens) go on the turn before this one with loss mask 0. The
// prompt must extend what is stored; if it does not, the server re-tokenized the history (DESIGN.md
// section 6 forbids it: training would see another context than sampling did) and the episode
// ends as aborted, its trajectory exact up to there.
Status EpisodeRunner::take_prompt_tokens(const PolicyTurn& reply, std::int64_t turn_index) {
  if (reply.prompt_token_ids.empty()) {
    if (!token_exact_) return {};
    return make_error(ErrorCategory::kUnavailable, "policy.no_prompt_ids",
                      "turn " + std::to_string(turn_index) +
                          ": the backend reported no prompt_token_ids after earlier turns did");
  }
  const auto& prompt = reply.prompt_token_ids;
  std::size_t same = 0;
  while (same < sequence_.size() && same < prompt.size() &&
         sequence_[same] == static_cast<std::uint32_t>(prompt[same]))
    ++same;
  if (same < sequence_.size()) {
    return make_error(ErrorCategory::kUnavailable, "policy.history_retokenized",
                      "turn " + std::to_string(turn_index) +
                          ": the prompt's token ids differ from the " +
                          "trajectory's at position " + std::to_string(same) + " of " +
                          std::to_string(sequence_.size()) +
                          " (the server re-tokenized the history; the trajectory would not be what "
                          "the model saw)");
  }
  token_exact_ = true;
  Turn& before = episode_.turns.back();  // the task prompt, or the last tool results
  for (std::size_t k = same; k < prompt.size(); ++k) {
    before.token_ids.push_back(static_cast<std::uint32_t>(prompt[k]));
    before.loss_mask.push_back(0);
    sequence_.push_back(static_cast<std::uint32_t>(prompt[k]));
  }
  episode_.counters.tokens += prompt.size() - same;
  for (std::int32_t id : reply.token_ids) sequence_.push_back(static_cast<std::uint32_t>(id));
  return {};
}

EvaluationOutcome EpisodeRunner::final_evaluation(std::string* report) {
  if (!workspace_.has("model_new.py")) {
    *report = "final evaluation: no model_new.py";
    return {};
  }
  auto built = build_current();
  if (!built) {
    *report = "final evaluation: the workspace does not build:\n" + built.error().message;
    return {};
  }
  auto outcome = spec_.tools->evaluate(BenchMode::kBenchmark, spec_.model_py,
                                       workspace_.solution_files(), **built,
                                       /*final_evaluation=*/true);
  if (!outcome) {
    *report = "final evaluation could not run: " + outcome.error().to_string();
    episode_.status = EpisodeStatus::kFailed;
    return {.reward_tier = 0};
  }
  *report = "final evaluation:\n" + outcome->report;
  return *outcome;
}

Episode EpisodeRunner::run() {
  const auto started = Clock::now();
  episode_.episode_id = spec_.episode_id;
  episode_.run_id = spec_.run_id;
  episode_.task_id = spec_.task_id;
  episode_.stage = spec_.stage;
  episode_.status = EpisodeStatus::kTruncated;

  messages_.push_back(
      {ChatRole::kSystem,
       spec_.system_prompt.empty() ? std::string(agent_skill_document()) : spec_.system_prompt,
       {}});
  messages_.push_back({ChatRole::kUser, task_prompt(spec_.model_py), {}});
  episode_.turns.push_back({.role = TurnRole::kSystem, .policy_version = spec_.policy_version});
  episode_.turns.push_back({.role = TurnRole::kUser, .policy_version = spec_.policy_version});

  bool finished = false, aborted = false;
  for (std::int64_t turn_index = 0; turn_index < spec_.budgets.max_turns; ++turn_index) {
    const std::int64_t wall_left =
        spec_.budgets.wall_ms - static_cast<std::int64_t>(ms_since(started));
    // The turn asks for no more new tokens than the context has room for (an estimate:
    // context_tokens(); the server's refusal below covers what it misses).
    const std::int64_t room = spec_.budgets.max_context_tokens - context_tokens();
    if (wall_left <= 0 || room <= 0) break;
    PolicyRequest request{.messages = messages_,
                          .tools = agent_tools(),
                          .temperature = spec_.temperature,
                          .top_p = spec_.top_p,
                          .max_new_tokens = spec_.max_new_tokens_per_turn > 0
                                                ? std::min(spec_.max_new_tokens_per_turn, room)
                                                : 0,
                          .seed = spec_.seed == 0 ? 0 : spec_.seed + turn_index,
                          .deadline_unix_ms = now_unix_ms() + wall_left};
    if (token_exact_) request.context_token_ids.assign(sequence_.begin(), sequence_.end());
    const auto t0 = Clock::now();
    auto reply = spec_.policy->next(request);
    Status exact = reply ? take_prompt_tokens(*reply, turn_index) : Status{};
    if (!reply && reply.error().code == kPolicyContextLimit) {
      // The context is full: the episode ends truncated and its workspace is evaluated, as when
      // its turns run out; not aborted (that is for a policy server or tool that failed).
      Turn full{.role = TurnRole::kTool, .policy_version = spec_.policy_version};
      full.tool_results.push_back(
          {"context_full", "the context is full: " + reply.error().message, true});
      episode_.turns.push_back(std::move(full));
      break;
    }
    if (!reply || !exact) {
      const Error& e = reply ? exact.error() : reply.error();
      Turn failed{.role = TurnRole::kTool, .policy_version = spec_.policy_version};
      failed.tool_results.push_back(
          {"policy_error", "the policy backend failed: " + e.to_string(), true});
      episode_.turns.push_back(std::move(failed));
      aborted = true;
      break;
    }
    ++episode_.counters.turns;
    if (reply->prompt_tokens > 0) {
      reported_tokens_ = reply->prompt_tokens + reply->completion_tokens;
      reported_messages_ = messages_.size() + 1;  // the reply's own message is appended below
    }

    // The weights that sampled the turn, when the backend says (the older one when new weights
    // came in mid-turn: staleness is counted from it); else the version the episode started at.
    Turn assistant{.role = TurnRole::kAssistant,
                   .policy_version = reply->first_policy_version
                                         ? PolicyVersion{*reply->first_policy_version}
                                         : spec_.policy_version};
    for (std::int32_t id : reply->token_ids)
      assistant.token_ids.push_back(static_cast<std::uint32_t>(id));
    assistant.logprobs = reply->logprobs;
    assistant.loss_mask.assign(assistant.token_ids.size(), 1);
    assistant.wall_ms = ms_since(t0);
    episode_.counters.tokens += assistant.token_ids.size();
    const std::string call_prefix = "call_" + std::to_string(turn_index) + "_";
    for (std::size_t k = 0; k < reply->tool_calls.size(); ++k)
      assistant.tool_calls.push_back({call_prefix + std::to_string(k), reply->tool_calls[k].name,
                                      reply->tool_calls[k].arguments_json});
    episode_.turns.push_back(std::move(assistant));
    messages_.push_back({ChatRole::kAssistant, reply->content, reply->tool_calls});

    // Run the calls in order; unreadable blocks and a reply without any call get an error each.
    Turn tools{.role = TurnRole::kTool, .policy_version = spec_.policy_version};
    const auto tools_t0 = Clock::now();
    auto answer = [&](const std::string& id, const ToolRun& r) {
      tools.tool_results.push_back({id, r.content, r.is_error});
      messages_.push_back({ChatRole::kTool, r.content, {}});
      if (r.invalid_call) ++episode_.counters.invalid_tool_calls;
    };
    for (std::size_t k = 0; k < reply->tool_calls.size() && !finished; ++k) {
      const ChatToolCall& call = reply->tool_calls[k];
      const std::string key =
          call.name + "\n" + call.arguments_json + "\n" + std::to_string(workspace_.revision());
      const bool repeatable = call.name == "compile" || call.name == "verify" ||
                              call.name == "benchmark" || call.name == "profile" ||
                              call.name == "read_file" || call.name == "list_files";
      if (repeatable && key == last_call_key_) ++episode_.counters.wasted_loops;
      last_call_key_ = key;
      ToolRun r = run_tool(call);
      finished = r.finish;
      answer(call_prefix + std::to_string(k), r);
    }
    for (const ToolCallProblem& p : reply->problems)
      answer("malformed", error_run("a tool call could not be read (" +
                                        std::string(to_string(p.kind)) + "): " + p.message,
                                    true));
    if (reply->tool_calls.empty() && reply->problems.empty())
      answer("none", error_run("no tool was called: act through the tools, and call finish() "
                               "when the solution is done",
                               true));
    tools.wall_ms = ms_since(tools_t0);
    episode_.turns.push_back(std::move(tools));
    if (finished) break;
  }

  if (aborted) {
    episode_.status = EpisodeStatus::kAborted;
    episode_.final_reward = 0;
  } else {
    if (finished) episode_.status = EpisodeStatus::kCompleted;
    std::string report;
    const auto final_t0 = Clock::now();
    const EvaluationOutcome outcome = final_evaluation(&report);
    if (const std::string note = spec_.tools->reward_note(); !note.empty())
      report = note + "\n" + report;
    final_outcome_ = outcome;
    episode_.final_reward = outcome.reward_tier;
    Turn final_turn{.role = TurnRole::kTool, .policy_version = spec_.policy_version};
    final_turn.tool_results.push_back({"final_evaluation", report, !outcome.correct});
    final_turn.wall_ms = ms_since(final_t0);
    episode_.turns.push_back(std::move(final_turn));
  }
  episode_.ended_unix_ms = now_unix_ms();
  return std::move(episode_);
}

}  // namespace

EpisodeSpec episode_spec(const RolloutOptions& o, const std::string& model_py,
                         PolicyBackend* policy, EvaluationTools* tools) {
  EpisodeSpec spec;
  spec.model_py = model_py;
  spec.policy = policy;
  spec.tools = tools;
  spec.budgets = {.max_turns = o.max_turns,
                  .max_context_tokens = o.max_context_tokens,
                  .wall_ms = o.episode_wall_ms};
  spec.temperature = o.temperature;
  spec.top_p = o.top_p;
  spec.max_new_tokens_per_turn = o.max_new_tokens_per_turn;
  spec.system_prompt = std::string(agent_system_prompt(o.system_prompt));
  return spec;
}

std::string task_prompt(const std::string& model_py) {
  return "Make this PyTorch model faster with your own CUDA kernels. model.py (read-only) is:\n\n"
         "```python\n" +
         model_py +
         "\n```\n\nWrite kernels/*.cu with extern \"C\" launchers and model_new.py with class "
         "ModelNew, compile and verify until it is correct, then benchmark and improve it. Call "
         "finish() when you are done.";
}

std::string compile_observation(const CompileResult& r) {
  std::istringstream in(compile_report_text(r));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("toolchain:", 0) == 0 || line.rfind("host:", 0) == 0 ||
        line.rfind("sandbox:", 0) == 0)
      continue;
    out += line + "\n";
  }
  return out;
}

Episode run_episode(const EpisodeSpec& spec, EvaluationOutcome* final_outcome) {
  EpisodeRunner runner(spec);
  Episode e = runner.run();
  if (final_outcome) *final_outcome = runner.final_outcome();
  return e;
}

}  // namespace cuda_agent
