// The in-memory workspace: what the agent may write, exact-match edits, read-only reference.
#include "rollout/workspace.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(Workspace, WritesEditsAndRefusesWithReasons) {
  Workspace w("class Model: pass\n", {.max_file_bytes = 64, .max_files = 2, .max_read_bytes = 8});
  ASSERT_TRUE(w.write_file("kernels/a.cu", "int a = 1;\nint b = 2;\n"));
  EXPECT_EQ(w.revision(), 1u);
  auto e = w.edit_file("kernels/a.cu", "b = 2", "b = 3");
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(*e, "edited kernels/a.cu at line 2");
  EXPECT_EQ(w.solution_files()[0].content, "int a = 1;\nint b = 3;\n");
  EXPECT_EQ(*w.read_file("kernels/a.cu"), "int a = \n[... 14 more bytes not shown]");
  EXPECT_EQ(*w.read_file("model.py"), "class Mo\n[... 10 more bytes not shown]");

  struct Case {
    Expected<std::string> result;
    const char* code;
  };
  for (Case c : {Case{w.write_file("model.py", "x"), "workspace.read_only"},
                 Case{w.write_file("../etc/passwd", "x"), "workspace.path"},
                 Case{w.write_file("kernels/sub/a.cu", "x"), "workspace.path"},
                 Case{w.write_file("/abs.cu", "x"), "workspace.path"},
                 Case{w.write_file("kernels/big.cu", std::string(65, 'x')), "workspace.too_large"},
                 Case{w.edit_file("kernels/a.cu", "int", "long"), "workspace.edit"},
                 Case{w.edit_file("kernels/a.cu", "missing", "x"), "workspace.edit"},
                 Case{w.edit_file("kernels/none.cu", "a", "b"), "workspace.not_found"},
                 Case{w.read_file("kernels/none.cu"), "workspace.not_found"}}) {
    ASSERT_FALSE(c.result) << c.code;
    EXPECT_EQ(c.result.error().code, c.code) << c.result.error().message;
  }
  ASSERT_TRUE(w.write_file("model_new.py", "import kernels\n"));
  auto third = w.write_file("kernels/c.cu", "x");
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, "workspace.too_many");
  EXPECT_EQ(w.revision(), 3u) << "refused writes change nothing";
}

// Issue 27 item 1: the workspace never touches the disk, so a path cannot reach a host file;
// every escaping form is refused by name and a read of one finds nothing.
TEST(Workspace, EscapingPathsNeverReachTheDisk) {
  Workspace w("class Model: pass\n");
  for (const char* p : {"kernels/../model.py", "kernels/../../etc/passwd.h", "kernels/./a.cu",
                        "kernels//a.cu", "./kernels/a.cu", "kernels/..cu", "kernels/a.cu/",
                        "kernels/", "/etc/passwd", "kernels\\a.cu"}) {
    auto r = w.write_file(p, "x");
    ASSERT_FALSE(r) << p;
    EXPECT_EQ(r.error().code, "workspace.path") << p;
  }
  for (const char* p : {"../../etc/passwd", "/etc/passwd", "kernels/../model.py"}) {
    auto r = w.read_file(p);
    ASSERT_FALSE(r) << p;
    EXPECT_EQ(r.error().code, "workspace.not_found") << p;
  }
  EXPECT_TRUE(w.solution_files().empty());
}

}  // namespace
}  // namespace cuda_agent
