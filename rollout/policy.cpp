#include "rollout/policy.h"

namespace cuda_agent {

void take_tool_calls_from_text(PolicyTurn& turn) {
  if (!turn.tool_calls.empty() || turn.content.find("<tool_call>") == std::string::npos) return;
  ParsedAssistant parsed = parse_assistant(turn.content);
  turn.content = parsed.content;
  turn.tool_calls = std::move(parsed.tool_calls);
  turn.problems = std::move(parsed.problems);
}

}  // namespace cuda_agent
