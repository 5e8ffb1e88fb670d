// The tools are valid JSON schemas with unique names, and the skill document that is compiled in
// describes every one of them.
#include "rollout/agent_tools.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace cuda_agent {
namespace {

TEST(AgentTools, SchemasParseNamesAreUniqueAndTheSkillDocumentCoversEach) {
  std::set<std::string> names;
  const std::string_view skill = agent_skill_document();
  ASSERT_GT(skill.size(), 2000u);
  for (const PolicyTool& t : agent_tools()) {
    EXPECT_TRUE(names.insert(t.name).second) << "duplicate tool " << t.name;
    auto schema = nlohmann::json::parse(t.parameters_json, nullptr, false);
    ASSERT_FALSE(schema.is_discarded()) << t.name << ": " << t.parameters_json;
    EXPECT_EQ(schema["type"], "object") << t.name;
    EXPECT_NE(skill.find("`" + t.name + "("), std::string_view::npos)
        << "agent_skill.md does not describe " << t.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"list_files", "read_file", "write_file", "edit_file",
                                          "compile", "verify", "benchmark", "profile", "finish"}));
}

}  // namespace
}  // namespace cuda_agent
