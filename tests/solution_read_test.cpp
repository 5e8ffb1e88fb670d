// Issue 27 item 1: a solution is a tree of regular files inside its directory. Each probe of the
// issue, against the shared reader (compile_farm::read_solution_directory / read_solution_file)
// and through `cuda-agent compile` and `bench` as a user runs them: a link to a file outside, a
// linked directory, a fifo (under a deadline: it must not block), a device node, a hard link to a
// file outside, "../" paths, and __has_include("/abs") / __has_include("../x") in a kernel. A
// refusal names the path inside the solution and never prints the outside file's contents.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "compile_farm/source_checks.h"
#include "tests/scale_kernel.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using compile_farm::read_solution_directory;
using compile_farm::read_solution_file;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

struct Cli {
  int exit_code;
  std::string output;
};

// `timeout 60 cuda-agent ARGS`: a reader that blocked on a fifo fails the test instead of hanging.
Cli run_cli(const std::string& args) {
  const std::string cmd = "timeout 60 " + std::string(CUDA_AGENT_EXE) + " " + args + " 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

const std::string kKernel = testing::scale_kernel_source("2");

class SolutionReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    const std::string nonce = std::to_string(rd()) + "-" + std::to_string(::getpid());
    root_ = fs::temp_directory_path() / ("solution_read_test-" + nonce);
    secret_ = "SECRET_" + nonce;
    // A file outside the solution that a link may point at; its text must never be printed.
    write(root_ / "outside/secret.txt", secret_ + " is not C++\n");
    write(root_ / "outside/inc/evil.cu", secret_ + "\n");
    write(root_ / "sol/kernels/scale.cu", kKernel);
    write(root_ / "sol/model_new.py", "import kernels\n");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string sol() const { return (root_ / "sol").string(); }
  fs::path kernels() const { return root_ / "sol/kernels"; }

  // The reader refuses with `code`, naming `path` and never showing the secret.
  void expect_refused(const std::string& code, const std::string& path, const std::string& what) {
    auto r = read_solution_directory(sol());
    ASSERT_FALSE(r) << "read " << r->size() << " files";
    EXPECT_EQ(r.error().code, code) << r.error().to_string();
    EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput) << r.error().to_string();
    EXPECT_NE(r.error().message.find("'" + path + "'"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find(secret_), std::string::npos) << r.error().message;
  }

  fs::path root_;
  std::string secret_;
};

TEST_F(SolutionReadTest, ReadsAnHonestSolutionSortedByPath) {
  write(kernels() / "common.cuh", "#pragma once\n");
  auto r = read_solution_directory(sol());
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].path, "kernels/common.cuh");
  EXPECT_EQ((*r)[1].path, "kernels/scale.cu");
  EXPECT_EQ((*r)[1].content, kKernel);
  EXPECT_EQ((*r)[2].path, "model_new.py");
  // A solution directory named through a link is the caller's choice and is fine.
  fs::create_directory_symlink(root_ / "sol", root_ / "sol-link");
  auto l = read_solution_directory((root_ / "sol-link").string());
  ASSERT_TRUE(l) << l.error().to_string();
  EXPECT_EQ(l->size(), 3u);
}

TEST_F(SolutionReadTest, SymlinkToAFileOutsideIsRefusedUnread) {
  fs::create_symlink(root_ / "outside/secret.txt", kernels() / "secret.cuh");
  expect_refused("solution.not_regular_file", "kernels/secret.cuh", "symbolic link to '");
  // Also when the link stays inside the solution, and for model_new.py.
  fs::remove(kernels() / "secret.cuh");
  fs::create_symlink("scale.cu", kernels() / "alias.cu");
  expect_refused("solution.not_regular_file", "kernels/alias.cu", "symbolic link to 'scale.cu'");
  fs::remove(kernels() / "alias.cu");
  fs::remove(root_ / "sol/model_new.py");
  fs::create_symlink(root_ / "outside/secret.txt", root_ / "sol/model_new.py");
  expect_refused("solution.not_regular_file", "model_new.py", "symbolic link");
}

TEST_F(SolutionReadTest, SymlinkedDirectoryIsRefused) {
  fs::create_directory_symlink(root_ / "outside/inc", kernels() / "inc");
  expect_refused("solution.not_regular_file", "kernels/inc", "symbolic link");
  fs::remove(kernels() / "inc");
  // kernels/ itself as a link to a directory outside.
  fs::rename(kernels(), root_ / "kernels-real");
  fs::create_directory_symlink(root_ / "outside/inc", kernels());
  expect_refused("solution.not_regular_file", "kernels", "symbolic link");
}

TEST_F(SolutionReadTest, SubdirectoryOfKernelsIsRefused) {
  write(kernels() / "sub/x.cu", "\n");
  expect_refused("solution.not_regular_file", "kernels/sub", "a directory");
}

TEST_F(SolutionReadTest, FifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((kernels() / "pipe.cuh").c_str(), 0600), 0);
  ::alarm(20);  // the deadline: a reader that opens the fifo blocking kills the test here
  expect_refused("solution.not_regular_file", "kernels/pipe.cuh", "a fifo");
  auto one = read_solution_file(sol(), "kernels/pipe.cuh");
  ::alarm(0);
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().code, "solution.not_regular_file");
}

TEST_F(SolutionReadTest, DeviceNodeIsRefused) {
  const fs::path node = kernels() / "dev.cuh";
  if (::mknod(node.c_str(), S_IFCHR | 0600, ::makedev(1, 3)) == 0) {  // /dev/null's numbers
    expect_refused("solution.not_regular_file", "kernels/dev.cuh", "a character device");
  } else {
    // Without CAP_MKNOD: a link to one.
    fs::create_symlink("/dev/zero", node);
    expect_refused("solution.not_regular_file", "kernels/dev.cuh", "symbolic link to '/dev/zero'");
  }
}

TEST_F(SolutionReadTest, HardLinkToAFileOutsideIsRefused) {
  std::error_code ec;
  fs::create_hard_link(root_ / "outside/secret.txt", kernels() / "h.cuh", ec);
  if (ec) GTEST_SKIP() << "no hard links here: " << ec.message();
  expect_refused("solution.hard_link", "kernels/h.cuh", "2 hard links");
}

TEST_F(SolutionReadTest, PathsEscapingTheDirectoryAreRefused) {
  for (const char* p : {"../outside/secret.txt", "/etc/passwd", "kernels/../model_new.py",
                        "kernels/./scale.cu", "kernels//scale.cu", "", "kernels/"}) {
    auto r = read_solution_file(sol(), p);
    ASSERT_FALSE(r) << p;
    EXPECT_EQ(r.error().code, "solution.escapes_directory") << p;
    EXPECT_EQ(r.error().message.find(secret_), std::string::npos);
  }
  auto ok = read_solution_file(sol(), "kernels/scale.cu");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(*ok, kKernel);
  // An intermediate directory that is a link is refused as the last component is.
  fs::create_directory_symlink(root_ / "outside", root_ / "sol/out");
  auto l = read_solution_file(sol(), "out/secret.txt");
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, "solution.not_regular_file") << l.error().to_string();
  EXPECT_EQ(read_solution_file(sol(), "kernels/none.cu").error().code, "solution.not_found");
}

TEST_F(SolutionReadTest, SizeLimitsHoldBeforeReading) {
  for (int i = 0; i < 5; ++i) write(kernels() / ("k" + std::to_string(i) + ".cuh"), "\n");
  auto many = read_solution_directory(sol(), {.max_files = 4});
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().code, "solution.too_large");
  write(kernels() / "big.cuh", std::string(2000, ' '));
  auto big = read_solution_directory(sol(), {.max_files = 32, .max_file_bytes = 1000});
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, "solution.too_large");
  EXPECT_NE(big.error().message.find("kernels/big.cuh"), std::string::npos);
}

// Through the CLI: the probe (a kernel that includes a header linked to a file outside)
// printed that file in the compile log.
TEST_F(SolutionReadTest, CompileAndBenchRefuseALinkedHeaderWithoutPrintingIt) {
  write(kernels() / "scale.cu", std::string("#include \"secret.cuh\"\n") + kKernel);
  fs::create_symlink(root_ / "outside/secret.txt", kernels() / "secret.cuh");
  Cli c = run_cli("compile " + sol());
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("solution.not_regular_file"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("kernels/secret.cuh"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find(secret_), std::string::npos) << c.output;

  write(root_ / "task/model.py", "import torch\n");
  Cli b = run_cli("bench --task " + (root_ / "task/model.py").string() + " --solution " + sol());
  EXPECT_EQ(b.exit_code, 2) << b.output;
  EXPECT_NE(b.output.find("solution.not_regular_file"), std::string::npos) << b.output;
  EXPECT_EQ(b.output.find(secret_), std::string::npos) << b.output;
}

TEST_F(SolutionReadTest, CompileRefusesAFifoAndAHardLinkWithoutHanging) {
  ASSERT_EQ(::mkfifo((kernels() / "pipe.cuh").c_str(), 0600), 0);
  Cli c = run_cli("compile " + sol());
  EXPECT_EQ(c.exit_code, 2) << c.output;  // 124 would be `timeout`: it blocked
  EXPECT_NE(c.output.find("kernels/pipe.cuh"), std::string::npos) << c.output;
  fs::remove(kernels() / "pipe.cuh");
  std::error_code ec;
  fs::create_hard_link(root_ / "outside/secret.txt", kernels() / "h.cuh", ec);
  if (ec) return;
  c = run_cli("compile " + sol());
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("solution.hard_link"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find(secret_), std::string::npos) << c.output;
}

// __has_include("/abs") answered whether a host file exists: the kernel compiled one way or the
// other. It is refused by the farm's source policy, like #include "/abs".
TEST_F(SolutionReadTest, HasIncludeOfHostPathsIsRefusedByTheFarm) {
  if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no CUDA toolkit";
  const std::string outside = (root_ / "outside/secret.txt").string();
  for (const std::string& arg :
       {"\"" + outside + "\"", std::string("\"../../outside/secret.txt\"")}) {
    write(kernels() / "scale.cu",
          "#if __has_include(" + arg + ")\n#error " + secret_ + "\n#endif\n" + kKernel);
    Cli c = run_cli("compile " + sol());
    EXPECT_EQ(c.exit_code, 1) << arg << ": " << c.output;  // refused by policy
    EXPECT_NE(c.output.find("include.path"), std::string::npos) << arg << ": " << c.output;
    EXPECT_NE(c.output.find("kernels/scale.cu:1"), std::string::npos) << c.output;
    EXPECT_EQ(c.output.find("#error"), std::string::npos) << c.output;
  }
}

}  // namespace
}  // namespace cuda_agent
