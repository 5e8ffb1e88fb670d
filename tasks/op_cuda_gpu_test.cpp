// tasks/op_cuda.h against torch on this machine's GPU (label gpu; skipped with a message where
// there is none): every operator with each parameter value the catalogue draws, its CUDA
// expression built by nvcc and run beside the catalogue's own forward line in torch, through
// tests/op_cuda_gpu/check_ops.py. OP_CUDA_CASES=FILE writes the cases to FILE (also without a GPU).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "gpu_bench/device_probe.h"
#include "tasks/op_catalogue.h"
#include "tasks/op_cuda.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;

// Every (op, parameter) the catalogue's rule produces, with its forward line.
nlohmann::json cases() {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& op : op_cuda_ops()) {
    const OpDef* def = nullptr;
    for (const OpDef& d : op_catalogue())
      if (d.name == op) def = &d;
    std::set<std::string> seen;
    for (std::uint64_t seed = 0; seed < 32 && def; ++seed) {
      Rng rng(seed);
      ChainCode code;
      Shape out_shape;
      OpCost cost;
      if (!def->apply({1, 64}, rng, code, out_shape, cost)) continue;
      const std::string param = code.init_args.empty() ? "" : code.init_args[0].second;
      if (!seen.insert(param).second) continue;
      auto expr = op_cuda_expression(op, param, "v", "w");
      EXPECT_TRUE(expr) << expr.error().message;
      out.push_back({{"op", op},
                     {"param_name", code.init_args.empty() ? "" : code.init_args[0].first},
                     {"param", param},
                     {"line", code.forward_lines.at(0)},
                     {"input", code.inputs.empty() ? "" : code.inputs[0].name},
                     {"expr", expr ? *expr : "0.f"}});
    }
  }
  return out;
}

TEST(OpCudaGpu, EveryExpressionMatchesTorchOnTheGpu) {
  // OP_CUDA_CASES=FILE also writes the cases there, for check_ops.py on a machine without a build.
  if (const char* copy = std::getenv("OP_CUDA_CASES")) std::ofstream(copy) << cases().dump(1);
  DeviceList devices = list_devices();
  if (devices.devices.empty()) GTEST_SKIP() << "no GPU here: " << devices.no_gpu_reason;
  const char* src = std::getenv("CUDA_AGENT_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (it sets CUDA_AGENT_SOURCE_DIR)";
  const fs::path dir = fs::temp_directory_path() / ("op_cuda_gpu_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const nlohmann::json c = cases();
  ASSERT_GE(c.size(), op_cuda_ops().size());
  std::ofstream(dir / "cases.json") << c.dump(1);
  const std::string cmd = "python3 " + (fs::path(src) / "tests/op_cuda_gpu/check_ops.py").string() +
                          " " + (dir / "cases.json").string() + " --workdir " + dir.string() +
                          " 2>&1";
  std::string output;
  int status = -1;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) output.append(buf, n);
    status = ::pclose(p);
  }
  std::printf("%s", output.c_str());
  if (output.find("[  SKIPPED ]") != std::string::npos) GTEST_SKIP() << output;
  EXPECT_EQ(status, 0) << output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
