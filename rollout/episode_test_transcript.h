// The recorded episode the episode tests replay (rollout/episode_test.cpp with a scripted bench,
// rollout/episode_gpu_test.cpp with the real one): a ReLU-of-2x task; the transcript writes a
// kernel with a compile error, compiles, reads the error, fixes it, writes model_new.py,
// verifies, makes one malformed benchmark call, benchmarks and finishes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace cuda_agent::episode_test {

using nlohmann::json;

inline const char* kModelPy = R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(2 * x)
def get_inputs():
    return [torch.randn(1 << 20)]
def get_init_inputs():
    return []
)";

inline std::string call(const std::string& name, json args) {
  return json{{"name", name}, {"arguments", std::move(args)}}.dump();
}

inline std::string assistant(const std::vector<std::string>& calls, json extra = json::object()) {
  json j = {{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array()}};
  for (const auto& c : calls) j["tool_calls"].push_back(json::parse(c));
  j.update(extra);
  return j.dump() + "\n";
}

inline const std::string kBroken = R"(#include <cuda_runtime.h>
__global__ void scale_relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(2.f * x[i], zero);
}
extern "C" void scale_relu_launch(const float* x, float* y, long long n, cudaStream_t s) {
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
)";

inline const char* kModelNew = R"(import torch, torch.nn as nn
import kernels
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        kernels.scale_relu_launch(x, y, x.numel())
        return y
)";

inline std::string transcript() {
  std::string t = R"({"role": "system", "content": "recorded"})"
                  "\n";
  t += assistant({call("write_file", {{"path", "kernels/scale_relu.cu"}, {"content", kBroken}})},
                 {{"token_ids", {11, 12, 13}}, {"logprobs", {-0.5, -0.25, -0.125}}});
  t += assistant({call("compile", json::object())});
  t += assistant(
      {call("edit_file", {{"path", "kernels/scale_relu.cu"}, {"old", "zero"}, {"new", "0.f"}}),
       call("compile", json::object())});
  t += assistant({call("write_file", {{"path", "model_new.py"}, {"content", kModelNew}}),
                  call("verify", json::object())});
  t += R"({"role": "assistant", "tool_calls": [{"name": "benchmark", "arguments": "{oops"}]})"
       "\n";
  t += assistant({call("benchmark", json::object())});
  t += assistant({call("finish", json::object())});
  return t;
}

}  // namespace cuda_agent::episode_test
