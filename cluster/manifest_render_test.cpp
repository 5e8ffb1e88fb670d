// render_defaults / render_manifest: they parse back to what they show, and docs/MANIFEST.md
// holds render_defaults() verbatim.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cluster/manifest.h"
#include "cluster/manifest_internal.h"

namespace cuda_agent {
namespace {

using ::testing::HasSubstr;

std::filesystem::path env_dir(const char* name) {
  const char* dir = std::getenv(name);
  return dir == nullptr ? std::filesystem::path() : std::filesystem::path(dir);
}

// Every field of an options struct as "key = value" lines.
struct FieldDump {
  std::string out;
  template <class T>
  void operator()(const FieldInfo& field, T& value) {
    out += std::string(field.key) + " = " + manifest_detail::toml_value(value) + "\n";
  }
};

template <class Options>
std::string dump(Options options) {
  FieldDump d;
  options.visit(d);
  return d.out;
}

TEST(RenderTest, DefaultsParseBackToDefaults) {
  std::string text = render_defaults();
  Expected<Manifest> m = parse_manifest(text, "defaults.toml", "/base");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(dump(m->run), dump(RunOptions{}));
  EXPECT_EQ(dump(m->security), dump(SecurityOptions{}));
  EXPECT_EQ(dump(m->store), dump(StoreOptions{}));
  EXPECT_EQ(dump(m->compile), dump(CompileOptions{}));
  EXPECT_EQ(dump(m->bench), dump(BenchOptions{}));
  EXPECT_EQ(dump(m->rollout), dump(RolloutOptions{}));
  EXPECT_EQ(dump(m->learner), dump(LearnerOptions{}));
  EXPECT_EQ(dump(m->model), dump(ModelOptions{}));
  EXPECT_EQ(dump(m->tasks), dump(TaskOptions{}));
  EXPECT_EQ(m->learner.actor_lr, LearnerOptions{}.actor_lr);  // floats exactly, not rounded
  ASSERT_EQ(m->nodes.size(), 1u);
  EXPECT_EQ(m->nodes[0].host, "localhost");
  // The same text but for the opening comment, which says "defaults" or "the run's values".
  auto body = [](const std::string& t) { return t.substr(t.find("\n\n")); };
  EXPECT_EQ(body(render_manifest(*m)), body(text));
}

TEST(RenderTest, DocumentsEverySectionAndOption) {
  std::string text = render_defaults();
  Manifest m;
  manifest_detail::for_each_section(m, [&](auto& section) {
    EXPECT_THAT(text, HasSubstr("\n[" + std::string(section.kSection) + "]\n"));
    FieldDump d;
    section.visit(d);
    std::istringstream lines(d.out);
    for (std::string line; std::getline(lines, line);) EXPECT_THAT(text, HasSubstr("\n" + line));
  });
  EXPECT_THAT(text, HasSubstr("# Type: integer. Unit: ms. Range: 10 to 60000.\n"
                              "heartbeat_interval_ms = 1000\n"));
  EXPECT_THAT(text, HasSubstr("One of: \"trace\", \"debug\", \"info\", \"warn\", \"error\"."));
  EXPECT_THAT(text, HasSubstr("job_memory_bytes = 4294967296  # 4 GiB\n"));
  EXPECT_THAT(text, HasSubstr("# bench_gpus = []\n"));  // node key reference
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#")) {
      EXPECT_LE(line.size(), 100u) << line;
    }
  }
}

class RenderExampleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RenderExampleTest, RenderedManifestParsesToItself) {
  std::filesystem::path source = env_dir("CUDA_AGENT_SOURCE_DIR");
  ASSERT_FALSE(source.empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  Expected<Manifest> m = load_manifest(source / "examples" / GetParam());
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::string text = render_manifest(*m);
  Expected<Manifest> again = parse_manifest(text, "rendered.toml", m->base_dir);
  ASSERT_TRUE(again.has_value()) << again.error().to_string();
  EXPECT_EQ(render_manifest(*again), text);
  EXPECT_EQ(again->nodes.size(), m->nodes.size());
}

INSTANTIATE_TEST_SUITE_P(Examples, RenderExampleTest,
                         ::testing::Values("single-machine.toml", "two-nodes.toml",
                                           "cluster-128.toml", "demo-h200.toml", "demo-cpu.toml",
                                           "h200x2.toml", "h200x4.toml", "h200x8.toml"),
                         [](const auto& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(RenderTest, DocsHoldTheRenderedDefaults) {
  std::filesystem::path source = env_dir("CUDA_AGENT_SOURCE_DIR");
  ASSERT_FALSE(source.empty()) << "CUDA_AGENT_SOURCE_DIR is not set; run through ctest";
  std::ifstream in(source / "docs/MANIFEST.md");
  ASSERT_TRUE(in) << "cannot read docs/MANIFEST.md";
  std::ostringstream docs;
  docs << in.rdbuf();
  std::string expected = "```toml\n" + render_defaults() + "```\n";
  bool found = docs.str().find(expected) != std::string::npos;
  if (!found && !env_dir("CUDA_AGENT_BINARY_DIR").empty()) {
    std::ofstream(env_dir("CUDA_AGENT_BINARY_DIR") / "MANIFEST.defaults.toml") << render_defaults();
  }
  EXPECT_TRUE(found) << "docs/MANIFEST.md is out of date: replace its ```toml block with the "
                        "output of `cuda-agent manifest defaults` (also written to "
                        "$CUDA_AGENT_BINARY_DIR/MANIFEST.defaults.toml)";
}

}  // namespace
}  // namespace cuda_agent
