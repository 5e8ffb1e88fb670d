#include "gpu_bench/bench_types.h"

#include <utility>

namespace cuda_agent {

BenchRequest bench_request(BenchMode mode, std::string task_id, std::string task_model_py,
                           const CompileResult& built, std::string model_new_py) {
  BenchRequest r;
  r.mode = mode;
  r.task.task_id = std::move(task_id);
  r.artifact.hash = built.artifact_hash;
  r.payload = BenchPayload{.task_model_py = std::move(task_model_py),
                           .shared_object = built.artifact,
                           .prototypes = built.prototypes,
                           .model_new_py = std::move(model_new_py),
                           .toolchain = built.toolchain};
  return r;
}

}  // namespace cuda_agent
