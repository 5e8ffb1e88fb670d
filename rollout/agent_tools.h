// What the agent is told: the skill document it is prompted with (rollout/agent_skill.md,
// compiled in) and the tools of DESIGN.md section 6 as JSON-schema function descriptions.
//
//   PolicyRequest r{.tools = agent_tools()};
//   r.messages.push_back({ChatRole::kSystem, std::string(agent_skill_document()), {}});
//
// Threading: both return immutable data; safe from any thread.
#pragma once

#include <string_view>
#include <vector>

#include "rollout/policy.h"

namespace cuda_agent {

/// rollout/agent_skill.md as built into this binary.
std::string_view agent_skill_document();

/// A few lines naming the workspace files and the tools (`[rollout] system_prompt = "brief"`).
std::string_view agent_brief_document();

/// The system message for `[rollout] system_prompt` ("skill" or "brief"; anything else: skill).
std::string_view agent_system_prompt(std::string_view kind);

/// write_file, edit_file, read_file, list_files, compile, verify, benchmark, profile, finish.
const std::vector<PolicyTool>& agent_tools();

}  // namespace cuda_agent
