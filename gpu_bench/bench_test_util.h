// Test-only set-up shared by the BenchService tests (bench_service_test.cpp,
// harness_zygote_test.cpp, bench_pool_test.cpp): a service on the fake harness
// (gpu_bench/testdata/fake_harness/harness.py: the real harness's files, no torch, no GPU; the
// scenario named in model_new.py decides what it reports), the jobs it plays, and readers of
// files and notes. Not linked into the product.
//
//   BenchServiceOptions o = fake_harness_options("bench-service-test");
//   auto s = make_service(o);
//   auto e = s->evaluate(fake_job("fast"));
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/content_hash.h"
#include "gpu_bench/bench_service.h"

namespace cuda_agent::bench_test {

/// The source tree: $CUDA_AGENT_SOURCE_DIR (ctest sets it), else the working directory.
inline std::string source_dir() {
  const char* s = std::getenv("CUDA_AGENT_SOURCE_DIR");
  return s ? s : ".";
}

/// The whole text of a file; empty when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// /usr/bin/python3 where it exists (Debian's, with its CPU torch), else python3 from PATH.
inline std::string test_python() {
  return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/// A fresh directory name under the temp dir: `prefix`-<pid>-<running test's name>, so tests
/// (and concurrent ctest runs) never share job directories.
inline std::string test_work_root(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) +
                                                    (info ? std::string("-") + info->name() : "")))
      .string();
}

/// Options of a service that runs the fake harness with test_python(), job directories under
/// test_work_root(prefix), and a health check that always passes (tests that count or fail
/// health checks replace it). The zygote is left at its default (on).
inline BenchServiceOptions fake_harness_options(const std::string& prefix) {
  BenchServiceOptions o;
  o.harness_dir = source_dir() + "/gpu_bench/testdata/fake_harness";
  o.bench.python = test_python();
  o.work_root = test_work_root(prefix);
  o.health_check = [] { return Status(); };
  return o;
}

/// BenchService::create, failing the running test (and returning null) when it fails.
inline std::unique_ptr<BenchService> make_service(const BenchServiceOptions& options) {
  auto s = BenchService::create(options);
  EXPECT_TRUE(s) << s.error().to_string();
  return s ? std::move(*s) : nullptr;
}

/// A job for the fake harness: it plays `scenario` ("fast", "crash", "hang", ...; see
/// fake_harness/harness.py), read from the model_new.py text.
inline BenchJob fake_job(const std::string& scenario, BenchMode mode = BenchMode::kBenchmark) {
  CompileResult built;
  built.artifact =
      "\x7f"
      "ELF fake";
  built.artifact_hash = content_hash(built.artifact);
  built.prototypes = {{"k", {{"x", "float*", ParamKind::kPointer}}}};
  built.toolchain = "nvcc 13.0";
  return {.request = bench_request(mode, "level1/test", "class Model: pass\n", built,
                                   "# fake: " + scenario + "\n")};
}

/// Whether one of the evaluation's notes contains `text`.
inline bool has_note(const BenchEvaluation& e, const std::string& text) {
  for (const auto& n : e.harness.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

/// Every note, " | "-separated, for failure messages.
inline std::string notes_of(const BenchEvaluation& e) {
  std::string all;
  for (const auto& n : e.harness.notes) all += n + " | ";
  return all;
}

}  // namespace cuda_agent::bench_test
