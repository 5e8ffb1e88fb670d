#include "gpu_bench/bench_pool.h"

#include "core/content_hash.h"

namespace cuda_agent {

Expected<BenchJob> bench_job_from_request(const BenchRequest& request) {
  if (!request.payload)
    return make_error(ErrorCategory::kInvalidInput, "bench.request",
                      "the request carries no payload (task model.py and built solution); this "
                      "worker does not look artifacts up in a run store");
  const BenchPayload& p = *request.payload;
  if (!request.task.content_hash.empty() &&
      request.task.content_hash != content_hash(p.task_model_py))
    return make_error(
        ErrorCategory::kInvalidInput, "bench.task_hash",
        "model.py does not hash to the task's content hash " + request.task.content_hash);
  BenchJob job;
  job.mode = request.mode;
  job.task_id = request.task.task_id;
  job.task_model_py = p.task_model_py;
  job.artifact_hash = request.artifact.hash;
  job.artifact = p.shared_object;
  job.prototypes = p.prototypes;
  job.model_new_py = p.model_new_py;
  job.toolchain = p.toolchain;
  job.seeds = request.seeds;
  job.overrides = request.options;
  job.deadline_unix_ms = request.header.deadline_unix_ms;
  return job;
}

PoolHandler bench_handler(std::shared_ptr<BenchService> service) {
  return [service](const WorkItem& item) -> Expected<std::string> {
    ASSIGN_OR_RETURN(BenchRequest request, decode_bench_request(item.payload));
    BenchReply reply{request.header.request_id, BenchResult{}};
    Expected<BenchJob> job = bench_job_from_request(request);
    if (!job) {
      reply.outcome = job.error();
    } else {
      Expected<BenchEvaluation> e = service->evaluate(*job);
      if (e)
        reply.outcome = std::move(e->result);
      else
        reply.outcome = e.error();
    }
    return encode_bench_reply(reply);
  };
}

std::vector<std::string> bench_worker_tags(const DeviceInfo& device) {
  return {"gpu", "gpu:" + device.name};
}

}  // namespace cuda_agent
