#include "cluster/manifest_overrides.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "cluster/manifest.h"

namespace cuda_agent {
namespace {

TEST(ManifestSettings, ValuesAreTomlOrStrings) {
  auto text = apply_manifest_settings(
      embedded_cpu_manifest(),
      {"learner.staleness=0", "rollout.temperature=0.5", "rollout.policy_model=qwen",
       "learner.batch_episodes=4", "learner.batch_episodes=6"});
  ASSERT_TRUE(text) << text.error().to_string();
  auto m = parse_manifest(*text, "test", "/tmp");
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->learner.staleness, 0);
  EXPECT_EQ(m->learner.batch_episodes, 6);  // the later one wins
  EXPECT_DOUBLE_EQ(m->rollout.temperature, 0.5);
  EXPECT_EQ(m->rollout.policy_model, "qwen");
}

TEST(ManifestSettings, BadSettingsAreNamed) {
  for (const char* bad :
       {"learner", "learner.staleness", "=3", "nodes.gpus=2", ".x=1", "learner.=1"}) {
    auto text = apply_manifest_settings(embedded_cpu_manifest(), {bad});
    ASSERT_FALSE(text) << bad;
    EXPECT_EQ(text.error().code, "manifest.bad_setting");
    EXPECT_NE(text.error().message.find(bad), std::string::npos) << text.error().message;
  }
  // An unknown key passes here and is refused by the manifest's validation, by name.
  auto text = apply_manifest_settings(embedded_cpu_manifest(), {"learner.bogus=1"});
  ASSERT_TRUE(text);
  auto m = parse_manifest(*text, "test", "/tmp");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().to_string().find("bogus"), std::string::npos);
}

TEST(ManifestSettings, ChangedKeysAreListed) {
  const std::string a(embedded_cpu_manifest());
  auto b = apply_manifest_settings(a, {"learner.staleness=2", "run.seed=7"});
  ASSERT_TRUE(b);
  auto same = changed_manifest_keys(a, a);
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->empty());
  auto changed = changed_manifest_keys(a, *b);
  ASSERT_TRUE(changed);
  EXPECT_EQ(*changed, (std::vector<std::string>{"learner.staleness", "run.seed"}));
  auto nodes = changed_manifest_keys(a, std::string(embedded_default_manifest()));
  ASSERT_TRUE(nodes);
  EXPECT_NE(std::find(nodes->begin(), nodes->end(), "nodes"), nodes->end());
}

}  // namespace
}  // namespace cuda_agent
