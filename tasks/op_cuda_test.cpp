// The operator -> CUDA expression table (tasks/op_cuda.h): coverage of the catalogue, the
// parameter rules, and every expression compiled by nvcc as __host__ __device__ code and evaluated
// on the host against a double-precision reference written from torch's documented formulas
// (the GPU comparison with torch itself is tests/op_cuda_gpu/check_ops.py, label gpu).
#include "tasks/op_cuda.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "tasks/op_catalogue.h"

namespace cuda_agent {
namespace {

TEST(OpCuda, CoversTheCataloguesPointwiseOperators) {
  const auto& ops = op_cuda_ops();
  EXPECT_GE(ops.size(), 40u);
  for (const std::string& op : ops) {
    bool found = false;
    for (const OpDef& d : op_catalogue()) found = found || d.name == op;
    EXPECT_TRUE(found) << op << " is not a catalogue operator";
  }
  for (const OpDef& d : op_catalogue())
    if (d.category == "activation" && d.name != "F.glu") {  // glu halves a dimension
      EXPECT_TRUE(op_cuda_supported(d.name)) << d.name;
    }
  EXPECT_TRUE(op_cuda_binary("torch.maximum"));
  EXPECT_FALSE(op_cuda_binary("torch.relu"));
  EXPECT_TRUE(op_cuda_takes_param("F.elu"));
  EXPECT_FALSE(op_cuda_supported("torch.softmax"));
}

TEST(OpCuda, ExpressionsFollowTorchsKernels) {
  EXPECT_EQ(*op_cuda_expression("torch.relu", "", "v"), "fmaxf(v, 0.f)");
  EXPECT_EQ(*op_cuda_expression("F.elu", "0.5", "v"), "(v > 0.f ? v : expm1f(v) * 0.5f)");
  EXPECT_EQ(*op_cuda_expression("torch.round", "4.0", "v"), "(rintf(v * 4.0f) * (1.f / 4.0f))");
  EXPECT_EQ(*op_cuda_expression("torch.pow", "2", "v"), "(v * v)");
  EXPECT_EQ(*op_cuda_expression("torch.pow", "3", "a"), "(a * a * a)");
  EXPECT_EQ(*op_cuda_expression("torch.pow", "2.5", "v"), "powf(v, 2.5f)");
  EXPECT_EQ(*op_cuda_expression("torch.lerp", "0.25", "v"), "(v + 0.25f * (tanhf(v) - v))");
  EXPECT_EQ(*op_cuda_expression("torch.lerp", "0.5", "v"),
            "(tanhf(v) - (tanhf(v) - v) * (1.f - 0.5f))");
  EXPECT_EQ(*op_cuda_expression("torch.sqrt", "1e-06", "v"), "sqrtf(fabsf(v) + 1e-06f)");
  EXPECT_EQ(*op_cuda_expression("torch.clamp_min", "-0.5", "v"), "fmaxf(v, (-0.5f))");
  EXPECT_EQ(*op_cuda_expression("torch.add", "", "v", "b"), "(v + b)");
  EXPECT_NE(op_cuda_expression("F.gelu", "", "v")->find("erff"), std::string::npos);
}

TEST(OpCuda, BadInputIsNamed) {
  auto unsupported = op_cuda_expression("torch.softmax", "", "v");
  ASSERT_FALSE(unsupported);
  EXPECT_EQ(unsupported.error().code, "tasks.op_cuda_unsupported");
  EXPECT_NE(unsupported.error().message.find("torch.softmax"), std::string::npos);
  auto missing = op_cuda_expression("F.elu", "", "v");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "tasks.op_cuda_param");
  auto extra = op_cuda_expression("torch.relu", "1.0", "v");
  ASSERT_FALSE(extra);
  EXPECT_NE(extra.error().message.find("takes none"), std::string::npos);
  auto garbage = op_cuda_expression("F.elu", "alpha", "v");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message.find("\"alpha\""), std::string::npos);
  EXPECT_EQ(*cuda_float_literal("2"), "2.f");
  EXPECT_EQ(*cuda_float_literal("1e-03"), "1e-03f");
  EXPECT_FALSE(cuda_float_literal("inf"));
  EXPECT_FALSE(cuda_float_literal("1.0; system(\"x\")"));
}

// Double-precision references from torch's documentation (w: the second operand, a: parameter).
using Ref = std::function<double(double v, double w, double a)>;
const std::map<std::string, Ref>& references() {
  static const std::map<std::string, Ref> kRefs = {
      {"torch.relu", [](double v, double, double) { return v > 0 ? v : 0; }},
      {"torch.sigmoid", [](double v, double, double) { return 1 / (1 + std::exp(-v)); }},
      {"torch.tanh", [](double v, double, double) { return std::tanh(v); }},
      {"F.gelu",
       [](double v, double, double) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2))); }},
      {"F.silu", [](double v, double, double) { return v / (1 + std::exp(-v)); }},
      {"F.mish", [](double v, double, double) { return v * std::tanh(std::log1p(std::exp(v))); }},
      {"F.elu", [](double v, double, double a) { return v > 0 ? v : a * (std::exp(v) - 1); }},
      {"F.selu",
       [](double v, double, double) {
         const double alpha = 1.6732632423543772, scale = 1.0507009873554805;
         return scale * (v > 0 ? v : alpha * (std::exp(v) - 1));
       }},
      {"F.celu",
       [](double v, double, double a) {
         return std::max(0.0, v) + std::min(0.0, a * (std::exp(v / a) - 1));
       }},
      {"F.softplus", [](double v, double,
                        double b) { return v * b > 20 ? v : std::log(1 + std::exp(b * v)) / b; }},
      {"F.softsign", [](double v, double, double) { return v / (1 + std::fabs(v)); }},
      {"F.hardswish", [](double v, double, double) { return v * std::clamp(v + 3, 0.0, 6.0) / 6; }},
      {"F.hardsigmoid", [](double v, double, double) { return std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"F.hardtanh", [](double v, double, double a) { return std::clamp(v, -a, a); }},
      {"F.relu6", [](double v, double, double) { return std::clamp(v, 0.0, 6.0); }},
      {"F.leaky_relu", [](double v, double, double a) { return v >= 0 ? v : a * v; }},
      {"F.logsigmoid", [](double v, double, double) { return -std::log1p(std::exp(-v)); }},
      {"F.tanhshrink", [](double v, double, double) { return v - std::tanh(v); }},
      {"F.softshrink",
       [](double v, double, double l) { return v > l ? v - l : (v < -l ? v + l : 0); }},
      {"F.hardshrink", [](double v, double, double l) { return std::fabs(v) > l ? v : 0; }},
      {"torch.abs", [](double v, double, double) { return std::fabs(v); }},
      {"torch.exp", [](double v, double, double a) { return std::exp(std::min(v, a)); }},
      {"torch.neg", [](double v, double, double) { return -v; }},
      {"torch.square", [](double v, double, double) { return v * v; }},
      {"torch.sin", [](double v, double, double) { return std::sin(v); }},
      {"torch.cos", [](double v, double, double) { return std::cos(v); }},
      {"torch.erf", [](double v, double, double) { return std::erf(v); }},
      {"torch.sqrt", [](double v, double, double a) { return std::sqrt(std::fabs(v) + a); }},
      {"torch.log", [](double v, double, double a) { return std::log(std::fabs(v) + a); }},
      {"torch.rsqrt", [](double v, double, double a) { return 1 / std::sqrt(std::fabs(v) + a); }},
      {"torch.clamp", [](double v, double, double a) { return std::clamp(v, -a, a); }},
      {"torch.clamp_min", [](double v, double, double a) { return std::max(v, a); }},
      {"torch.round", [](double v, double, double a) { return std::nearbyint(v * a) / a; }},
      {"torch.pow", [](double v, double, double a) { return std::pow(v, a); }},
      {"operator.mul", [](double v, double, double a) { return v * a; }},
      {"operator.add", [](double v, double, double a) { return v + a; }},
      {"operator.sub", [](double v, double, double a) { return v - a; }},
      {"operator.truediv", [](double v, double, double a) { return v / a; }},
      {"torch.where", [](double v, double, double a) { return v > 0 ? v : v * a; }},
      {"torch.lerp", [](double v, double, double a) { return v + a * (std::tanh(v) - v); }},
      {"torch.add", [](double v, double w, double) { return v + w; }},
      {"torch.mul", [](double v, double w, double) { return v * w; }},
      {"torch.maximum", [](double v, double w, double) { return std::max(v, w); }},
      {"torch.minimum", [](double v, double w, double) { return std::min(v, w); }},
  };
  return kRefs;
}

// Parameter values to try per op (the catalogue's choices and a few more).
std::vector<std::string> params_of(const std::string& op) {
  if (!op_cuda_takes_param(op)) return {""};
  if (op == "torch.pow") return {"2", "3", "1.5"};
  if (op == "torch.lerp") return {"0.25", "0.5", "0.75"};
  if (op == "torch.sqrt" || op == "torch.log" || op == "torch.rsqrt") return {"1e-06", "1.0"};
  if (op == "torch.clamp_min" || op == "operator.add") return {"-0.5", "1.0"};
  return {"0.5", "2.0"};
}

std::string run(const std::string& cmd) {
  std::string out;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

TEST(OpCuda, EveryExpressionBuildsWithNvccAndMatchesItsReferenceOnTheHost) {
  const std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  ASSERT_EQ(references().size(), op_cuda_ops().size());
  const std::vector<double> points = {-25, -3.5, -1.2, -0.6, -0.3, 0, 0.25, 0.7, 1.6, 4, 12.5, 25};
  std::ostringstream cu;
  cu << "#include <cstdio>\n#include <cmath>\n";
  std::vector<std::pair<std::string, std::string>> cases;
  for (const std::string& op : op_cuda_ops()) {
    for (const std::string& p : params_of(op)) {
      auto e = op_cuda_expression(op, p, "v", "w");
      ASSERT_TRUE(e) << e.error().message;
      cu << "__host__ __device__ float f" << cases.size() << "(float v, float w) { return " << *e
         << "; }\n";
      cases.emplace_back(op, p);
    }
  }
  cu << "int main() {\n  const float points[] = {";
  for (double x : points) cu << "(float)" << x << ", ";
  cu << "};\n  for (float v : points) {\n";
  for (std::size_t i = 0; i < cases.size(); ++i)
    cu << "    std::printf(\"%.9g\\n\", (double)f" << i << "(v, 0.5f));\n";
  cu << "  }\n}\n";
  const auto dir =
      std::filesystem::temp_directory_path() / ("op_cuda_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ops.cu") << cu.str();
  const std::string build =
      run(nvcc + " -O2 -o " + (dir / "ops").string() + " " + (dir / "ops.cu").string() + " 2>&1");
  ASSERT_TRUE(std::filesystem::exists(dir / "ops")) << build;
  std::istringstream values(run((dir / "ops").string()));
  int mismatches = 0;
  for (double x : points) {
    for (const auto& [op, p] : cases) {
      std::string text;
      values >> text;
      const double got = std::strtod(text.c_str(), nullptr);
      const double a = p.empty() ? 0 : std::stod(p);
      const double want = references().at(op)(static_cast<float>(x), 0.5, a);
      const double tol = 2e-5 * std::max(1.0, std::fabs(want));
      if (!(std::fabs(got - want) <= tol) && !(std::isnan(got) && std::isnan(want))) {
        ++mismatches;
        ADD_FAILURE() << op << "(" << x << (p.empty() ? "" : ", " + p) << ") = " << got
                      << ", reference " << want << ": " << *op_cuda_expression(op, p, "v", "w");
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
