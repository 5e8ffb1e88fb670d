// The CPU half of the GPU bench's attack and honest suites (tests/bench_suite/README.md, issue 6):
// every entry goes through `cuda-agent compile --json` as a user would run it.
//   - a compile-stage attack must be refused (compile.policy) with the rule its expect.json names;
//   - a harness-stage attack and an honest solution must build, and every `kernels.<name>(...)`
//     call in its model_new.py must name a launcher of the build with the right argument count
//     (the trailing cudaStream_t is filled by the harness), so the GPU run fails only on what the
//     bench itself must catch.
// One compile farm (a broker and a two-slot worker, over ipc sockets) serves all entries, two at a
// time; its cache lives in the build tree, so a re-run only rebuilds what changed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSuite = BENCH_SUITE_DIR;
const fs::path kCache = BENCH_SUITE_CACHE_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// "attacks/07_side_stream_cuda", for every entry directory, sorted.
std::vector<std::string> entry_names() {
  std::vector<std::string> out;
  for (const char* kind : {"attacks", "honest"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(kSuite / kind, ec))
      if (e.is_directory()) out.push_back(std::string(kind) + "/" + e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_attack(const std::string& name) { return name.rfind("attacks/", 0) == 0; }

struct CompileOutcome {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
  json report;  // the parsed --json output (null when it did not parse)
};

/// A child process: stdout is a pipe to us, stderr goes to a log file. It gets SIGTERM when the
/// thread that started it ends (so a test killed by its timeout leaves no farm or client behind),
/// and on destruction unless it was waited for.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& log) {
    std::vector<char*> args;  // built before fork: the child may only make async-signal-safe calls
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string log_path = log.string();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::dup2(fds[1], STDOUT_FILENO);
      const int err = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (err >= 0) ::dup2(err, STDERR_FILENO);
      ::close(fds[0]);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = ::fdopen(fds[0], "r");
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (out_) std::fclose(out_);
  }
  /// Blocks until the child prints a line (its "ready" banner) or exits; returns the line.
  std::string first_line() {
    if (!out_) return "";
    std::array<char, 512> buf{};
    return std::fgets(buf.data(), buf.size(), out_) ? std::string(buf.data()) : "";
  }
  /// Reads stdout to its end and waits for the exit; the exit code, or -1 when killed.
  int finish(std::string& stdout_text) {
    if (!out_ || pid_ <= 0) return -1;
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), out_)) > 0) stdout_text.append(buf.data(), n);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::FILE* out_ = nullptr;
};

/// The farm and every entry's compile outcome, computed once for the whole suite.
class SuiteRun {
 public:
  static SuiteRun& get() {
    static SuiteRun run;
    return run;
  }
  const std::string& farm_error() const { return farm_error_; }
  const CompileOutcome& outcome(const std::string& name) { return outcomes_.at(name); }

 private:
  SuiteRun() {
    std::error_code ec;
    fs::create_directories(kCache, ec);
    const std::string sock = "/tmp/ca-bench-suite-" + std::to_string(::getpid());
    const std::string clients = "ipc://" + sock + "-clients";
    const std::string workers = "ipc://" + sock + "-workers";
    broker_ = std::make_unique<Child>(
        std::vector<std::string>{CUDA_AGENT_EXE, "serve", "compile-farm", "--clients", clients,
                                 "--workers", workers},
        kCache / "broker.log");
    if (broker_->first_line().find("compile farm:") == std::string::npos) {
      farm_error_ =
          "the compile farm broker did not start; see " + (kCache / "broker.log").string();
      return;
    }
    worker_ = std::make_unique<Child>(
        std::vector<std::string>{CUDA_AGENT_EXE, "serve", "compile-worker", "--connect", workers,
                                 "--jobs", "2", "--cache-dir", (kCache / "cache").string()},
        kCache / "worker.log");
    if (worker_->first_line().find("compile worker") == std::string::npos) {
      farm_error_ = "the compile worker did not start; see " + (kCache / "worker.log").string();
      return;
    }
    const std::vector<std::string> names = entry_names();
    for (const auto& n : names) outcomes_[n];
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i = next++; i < names.size(); i = next++)
        outcomes_.at(names[i]) = compile(names[i], clients);
    };
    std::thread a(work), b(work);
    a.join();
    b.join();
    ::unlink((sock + "-clients").c_str());
    ::unlink((sock + "-workers").c_str());
  }

  // Only the map's values are written concurrently (each by one thread); its keys are fixed
  // before the threads start.
  static CompileOutcome compile(const std::string& name, const std::string& farm) {
    const fs::path err = kCache / (std::regex_replace(name, std::regex("/"), "__") + ".stderr");
    CompileOutcome o;
    Child c({CUDA_AGENT_EXE, "compile", "--json", "--farm", farm, (kSuite / name).string()}, err);
    o.exit_code = c.finish(o.stdout_text);
    o.stderr_text = read_file(err);
    o.report = json::parse(o.stdout_text, nullptr, /*allow_exceptions=*/false);
    return o;
  }

  std::unique_ptr<Child> broker_, worker_;
  std::string farm_error_;
  std::map<std::string, CompileOutcome> outcomes_;
};

/// Each `kernels.NAME(args)` call in model_new.py: NAME and its number of top-level arguments.
std::vector<std::pair<std::string, int>> launcher_calls(const std::string& py) {
  std::vector<std::pair<std::string, int>> out;
  static const std::regex kCall(R"(kernels\.([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  for (auto it = std::sregex_iterator(py.begin(), py.end(), kCall); it != std::sregex_iterator();
       ++it) {
    std::size_t i = it->position(0) + it->length(0);
    int depth = 0, commas = 0;
    bool any = false;
    for (; i < py.size(); ++i) {
      const char c = py[i];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) ++commas;
      if (!std::isspace(static_cast<unsigned char>(c))) any = true;
    }
    out.emplace_back((*it)[1].str(), any ? commas + 1 : 0);
  }
  return out;
}

class BenchSuiteEntry : public ::testing::TestWithParam<std::string> {};

TEST(BenchSuite, HasTheIssueSixMinimum) {
  int attacks = 0, honest = 0;
  for (const auto& n : entry_names()) (is_attack(n) ? attacks : honest)++;
  EXPECT_GE(attacks, 20);
  EXPECT_GE(honest, 10);
}

TEST_P(BenchSuiteEntry, CompilesAsItsExpectationSays) {
  const std::string name = GetParam();
  const fs::path dir = kSuite / name;
  ASSERT_TRUE(fs::exists(dir / "model.py")) << name;
  ASSERT_TRUE(fs::exists(dir / "model_new.py")) << name;
  const json expect = json::parse(read_file(dir / "expect.json"), nullptr, false);
  ASSERT_TRUE(expect.is_object()) << name << ": expect.json does not parse";
  const std::string verdict = expect.value("verdict", "");
  const std::string stage = expect.value("stage", "");
  const std::string rule = expect.value("rule", "");
  if (is_attack(name)) {
    EXPECT_TRUE(verdict == "rejected" || verdict == "no_speed_credit") << name << ": " << verdict;
    EXPECT_TRUE(stage == "compile" || stage == "harness") << name << ": " << stage;
    EXPECT_FALSE(rule.empty()) << name;
    EXPECT_FALSE(expect.value("attack", "").empty()) << name;
    EXPECT_FALSE(expect.value("why", "").empty()) << name;
  } else {
    EXPECT_EQ(verdict, "pass") << name;
    EXPECT_FALSE(expect.value("task", "").empty()) << name;
  }

  SuiteRun& run = SuiteRun::get();
  ASSERT_TRUE(run.farm_error().empty()) << run.farm_error();
  const CompileOutcome& o = run.outcome(name);
  ASSERT_TRUE(o.report.is_object()) << name << ": exit " << o.exit_code << "\nstdout:\n"
                                    << o.stdout_text << "\nstderr:\n"
                                    << o.stderr_text;
  if (stage == "compile") {
    EXPECT_EQ(o.exit_code, 1) << name;
    EXPECT_FALSE(o.report.value("ok", true))
        << name << " compiled, but should be refused by " << rule;
    const json error = o.report.value("error", json::object());
    EXPECT_EQ(error.value("code", ""), "compile.policy") << name << ": " << error.dump(2);
    EXPECT_NE(error.value("message", "").find(": " + rule + ": "), std::string::npos)
        << name << ": expected rule " << rule << ", got:\n"
        << error.value("message", "");
    return;
  }
  ASSERT_EQ(o.exit_code, 0) << name << ": " << o.report.dump(2) << "\n" << o.stderr_text;
  ASSERT_TRUE(o.report.value("ok", false)) << name;
  std::map<std::string, int> arity;  // launcher -> arguments model_new.py passes
  for (const json& l : o.report.at("launchers")) {
    int n = 0;
    for (const json& p : l.at("params"))
      if (p.value("kind", "") != "stream") ++n;
    arity[l.value("name", "")] = n;
  }
  const auto calls = launcher_calls(read_file(dir / "model_new.py"));
  if (!is_attack(name)) {
    EXPECT_FALSE(calls.empty()) << name << ": model_new.py calls no launcher";
  }
  for (const auto& [launcher, args] : calls) {
    auto it = arity.find(launcher);
    ASSERT_NE(it, arity.end()) << name << ": model_new.py calls kernels." << launcher
                               << ", which the build does not export";
    EXPECT_EQ(args, it->second) << name << ": kernels." << launcher << " takes " << it->second
                                << " arguments (without the stream), model_new.py passes " << args;
  }
  if (!is_attack(name)) {
    EXPECT_TRUE(o.report.value("warnings", json::array()).empty())
        << name << ": " << o.report["warnings"].dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, BenchSuiteEntry, ::testing::ValuesIn(entry_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::regex_replace(info.param, std::regex("[^A-Za-z0-9]"), "_");
                         });

}  // namespace
}  // namespace cuda_agent
