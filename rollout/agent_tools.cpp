#include "rollout/agent_tools.h"

namespace cuda_agent {

const std::vector<PolicyTool>& agent_tools() {
  static const std::vector<PolicyTool> kTools = {
      {"list_files", "List the workspace's files with their sizes.",
       R"({"type":"object","properties":{},"additionalProperties":false})"},
      {"read_file", "Read one workspace file (model.py included).",
       R"({"type":"object","properties":{"path":{"type":"string","description":"relative path, e.g. kernels/k.cu"}},"required":["path"],"additionalProperties":false})"},
      {"write_file", "Create or replace kernels/<name>.cu|.cpp|.h or model_new.py.",
       R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false})"},
      {"edit_file", "Replace one exact, unique occurrence of `old` with `new` in a file.",
       R"({"type":"object","properties":{"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}},"required":["path","old","new"],"additionalProperties":false})"},
      {"compile",
       "Static checks and nvcc for every file: errors with file:line, per-kernel registers, "
       "shared memory, stack and spills.",
       R"({"type":"object","properties":{},"additionalProperties":false})"},
      {"verify",
       "Compile if needed, then check correctness on several seeded input sets against "
       "model.py.",
       R"({"type":"object","properties":{},"additionalProperties":false})"},
      {"benchmark",
       "Verify, then time the solution against PyTorch eager and torch.compile: medians, spread "
       "and speedups.",
       R"({"type":"object","properties":{},"additionalProperties":false})"},
      {"profile", "Per-kernel time, achieved occupancy, DRAM and SM throughput as a share of peak.",
       R"({"type":"object","properties":{},"additionalProperties":false})"},
      {"finish",
       "End the episode; the final workspace is evaluated again with unseen seeds for the "
       "reward.",
       R"({"type":"object","properties":{},"additionalProperties":false})"},
  };
  return kTools;
}

std::string_view agent_brief_document() {
  return "You replace the computation of model.py (a PyTorch Model) with your own CUDA kernels. "
         "Write kernels/*.cu with __global__ kernels and extern \"C\" launchers taking a "
         "trailing cudaStream_t, and model_new.py with class ModelNew calling them through "
         "`import kernels`. Tools: write_file, edit_file, read_file, list_files, compile, "
         "verify, benchmark, profile, finish. Call finish when done; the final workspace is "
         "evaluated.";
}

std::string_view agent_system_prompt(std::string_view kind) {
  return kind == "brief" ? agent_brief_document() : agent_skill_document();
}

}  // namespace cuda_agent
