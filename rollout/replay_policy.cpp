#include "rollout/replay_policy.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cuda_agent {
namespace {

using nlohmann::json;

Error bad_line(const std::string& name, std::size_t line, const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "policy.transcript",
                    name + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

Expected<std::unique_ptr<ReplayPolicy>> ReplayPolicy::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(ErrorCategory::kNotFound, "policy.transcript",
                      "cannot read transcript '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Expected<std::unique_ptr<ReplayPolicy>> ReplayPolicy::parse(const std::string& text,
                                                            const std::string& name) {
  std::vector<PolicyTurn> turns;
  std::istringstream lines(text);
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad_line(name, n, "not a JSON object");
    if (!j.contains("role") || !j["role"].is_string())
      return bad_line(name, n, "\"role\" is missing or not text");
    if (j["role"] != "assistant") continue;
    PolicyTurn turn;
    if (j.contains("content") && !j["content"].is_null()) {
      if (!j["content"].is_string()) return bad_line(name, n, "\"content\" is not text");
      turn.content = j["content"].get<std::string>();
    }
    if (j.contains("tool_calls")) {
      if (!j["tool_calls"].is_array()) return bad_line(name, n, "\"tool_calls\" is not an array");
      for (const json& c : j["tool_calls"]) {
        if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
          return bad_line(name, n, "a tool call without a \"name\"");
        ChatToolCall call{.name = c["name"].get<std::string>()};
        if (c.contains("arguments"))
          call.arguments_json = c["arguments"].is_string() ? c["arguments"].get<std::string>()
                                                           : c["arguments"].dump();
        turn.tool_calls.push_back(std::move(call));
      }
    }
    take_tool_calls_from_text(turn);
    try {
      if (j.contains("token_ids")) turn.token_ids = j["token_ids"].get<std::vector<std::int32_t>>();
      if (j.contains("logprobs")) turn.logprobs = j["logprobs"].get<std::vector<float>>();
    } catch (const json::exception&) {
      return bad_line(name, n, "\"token_ids\" / \"logprobs\" must be arrays of numbers");
    }
    if (!turn.logprobs.empty() && turn.logprobs.size() != turn.token_ids.size())
      return bad_line(name, n, "\"logprobs\" and \"token_ids\" differ in length");
    turn.finish_reason = j.value("finish_reason", turn.tool_calls.empty() ? "stop" : "tool_calls");
    turn.completion_tokens = static_cast<std::int64_t>(turn.token_ids.size());
    turn.policy_version = "replay";
    turns.push_back(std::move(turn));
  }
  if (turns.empty())
    return make_error(ErrorCategory::kInvalidInput, "policy.transcript",
                      name + ": no assistant turns to play back");
  return std::unique_ptr<ReplayPolicy>(new ReplayPolicy(name, std::move(turns)));
}

Expected<PolicyTurn> ReplayPolicy::next(const PolicyRequest&) {
  std::lock_guard lock(mu_);
  if (next_ >= turns_.size())
    return make_error(ErrorCategory::kInvalidInput, "policy.replay_exhausted",
                      name_ + " has " + std::to_string(turns_.size()) + " assistant turns; turn " +
                          std::to_string(next_ + 1) + " was asked for");
  return turns_[next_++];
}

std::string ReplayPolicy::describe() const { return "replay " + name_; }

}  // namespace cuda_agent
