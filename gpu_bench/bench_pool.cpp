#include "gpu_bench/bench_pool.h"

#include "core/clock.h"
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

Expected<std::unique_ptr<BenchClient>> BenchClient::connect(const PoolClientOptions& options) {
  ASSIGN_OR_RETURN(auto client, PoolClient::connect(options));
  return std::unique_ptr<BenchClient>(new BenchClient(std::move(client)));
}

Expected<BenchResult> BenchClient::evaluate(BenchRequest request, std::vector<std::string> tags,
                                            std::int64_t default_timeout_ms) {
  if (request.header.deadline_unix_ms <= 0)
    request.header.deadline_unix_ms = now_unix_ms() + default_timeout_ms;
  PoolRequest pool_request{request.header, std::move(tags), encode_bench_request(request)};
  ASSIGN_OR_RETURN(std::string payload, client_->call(std::move(pool_request)));
  Expected<BenchReply> reply = decode_bench_reply(payload);
  if (!reply) return reply.error();
  if (!reply->outcome) return reply->outcome.error();
  return std::move(reply->outcome).value();
}

}  // namespace cuda_agent
