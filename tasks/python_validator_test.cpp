// The static validator: what it finds in good sources, why it rejects bad ones, and how a
// source that stalls or kills its child is blamed while the rest carry on.
#include "tasks/python_validator.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cuda_agent {
namespace {

const char* kGood = R"(import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale

    def forward(self, x):
        x = F.gelu(self.conv(x)) * self.scale
        return torch.sum(x, dim=1).view(x.size(0), -1)

batch_size = 16
channels, size = 3, 2 ** 6

def get_inputs():
    x = torch.randn(batch_size, channels, size, size)
    return [x, torch.randint(0, 10, (batch_size,)), 0.5]

def get_init_inputs():
    return [channels, 8, 3, 1.5]
)";

std::vector<StaticReport> check(const std::vector<std::string>& sources, ValidatorOptions o = {}) {
  std::vector<SourceToCheck> in;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    in.push_back({.name = "src" + std::to_string(i), .source = sources[i]});
  }
  int calls = 0;
  auto r = PythonValidator(o).check(in, [&](bool) { ++calls; });
  EXPECT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(calls, static_cast<int>(sources.size()));
  return r ? std::move(r).value() : std::vector<StaticReport>{};
}

TEST(PythonValidator, FindsModelOpsShapesAndInitArguments) {
  auto reports = check({kGood});
  ASSERT_EQ(reports.size(), 1u);
  const StaticReport& r = reports[0];
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.ops, (std::vector<std::string>{"nn.Conv2d", "F.gelu", "operator.mul", "torch.sum",
                                             "Tensor.view"}));
  EXPECT_EQ(r.imports, (std::vector<std::string>{"torch", "torch.nn", "torch.nn.functional"}));
  EXPECT_EQ(r.init_params,
            (std::vector<std::string>{"in_channels", "out_channels", "kernel_size", "scale"}));
  EXPECT_EQ(r.forward_params, std::vector<std::string>{"x"});
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(r.inputs[0].kind, "tensor");
  EXPECT_EQ(r.inputs[0].shape, (std::vector<std::int64_t>{16, 3, 64, 64}));
  EXPECT_EQ(r.inputs[0].dtype, "float32");
  EXPECT_EQ(r.inputs[1].shape, std::vector<std::int64_t>{16});
  EXPECT_EQ(r.inputs[1].dtype, "int64");
  EXPECT_EQ(r.inputs[2].kind, "value");
  EXPECT_EQ(r.inputs[2].value_json, "0.5");
  ASSERT_EQ(r.init_inputs.size(), 4u);
  EXPECT_EQ(r.init_inputs[0].value_json, "3");
  EXPECT_EQ(r.init_inputs[3].value_json, "1.5");
}

TEST(PythonValidator, RejectsWithTheReason) {
  const std::string good = kGood;
  auto without = [&](const std::string& what, const std::string& instead) {
    std::string s = good;
    s.replace(s.find(what), what.size(), instead);
    return s;
  };
  auto reports =
      check({"def broken(:\n", without("class Model", "class Other"),
             without("def get_inputs", "def make_inputs"),
             without("def get_init_inputs", "def init_inputs"), without("def forward", "def run"),
             "x = (" + std::string(200000, '(') + "\n",
             "while True: pass\n",  // never executed: fine to parse, but no Model
             kGood});
  ASSERT_EQ(reports.size(), 8u);
  auto first_error = [&](int i) { return reports[i].errors.empty() ? "" : reports[i].errors[0]; };
  EXPECT_EQ(first_error(0), "syntax error at line 1: invalid syntax");
  EXPECT_EQ(first_error(1), "no class Model");
  EXPECT_EQ(first_error(2), "no function get_inputs");
  EXPECT_EQ(first_error(3), "no function get_init_inputs");
  EXPECT_EQ(first_error(4), "class Model has no forward method");
  EXPECT_FALSE(reports[5].ok);  // a parser blow-up is a rejection, not a crash of the batch
  EXPECT_EQ(first_error(6), "no class Model");
  EXPECT_TRUE(reports[7].ok);
}

// A stand-in interpreter that answers "ok", stalls on STALL and dies on CRASH: the blame for a
// stall or crash goes to the source in flight, and a fresh child carries on after it.
TEST(PythonValidator, BlamesTheSourceInFlightAndCarriesOn) {
  const std::string fake =
      (std::filesystem::temp_directory_path() / ("fake_python_" + std::to_string(::getpid())))
          .string();
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\n"
         "while read -r line; do\n"
         "  case \"$line\" in\n"
         "    *STALL*) exec sleep 30 ;;\n"
         "    *CRASH*) kill -9 $$ ;;\n"
         "    *) echo '{\"ok\": true}' ;;\n"
         "  esac\n"
         "done\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ValidatorOptions o;
  o.python = fake;
  o.per_file_timeout_ms = 300;
  o.first_answer_timeout_ms = 2000;
  o.batch_files = 3;
  auto reports = check({"a", "STALL", "b", "c", "CRASH", "d", "e"}, o);
  std::filesystem::remove(fake);
  ASSERT_EQ(reports.size(), 7u);
  const std::vector<bool> ok = {true, false, true, true, false, true, true};
  for (std::size_t i = 0; i < ok.size(); ++i) EXPECT_EQ(reports[i].ok, ok[i]) << i;
  EXPECT_NE(reports[1].errors.at(0).find("timed out"), std::string::npos) << reports[1].errors[0];
  EXPECT_NE(reports[4].errors.at(0).find("signal 9"), std::string::npos) << reports[4].errors[0];
}

TEST(PythonValidator, AMissingInterpreterFailsTheCall) {
  ValidatorOptions o;
  o.python = "/nonexistent/python3";
  auto r = PythonValidator(o).check({{.name = "x", .source = kGood}}, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "task.child_start");
}

}  // namespace
}  // namespace cuda_agent
