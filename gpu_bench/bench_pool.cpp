#include "gpu_bench/bench_pool.h"

namespace cuda_agent {

PoolHandler bench_handler(std::shared_ptr<BenchService> service) {
  return [service](const WorkItem& item) -> Expected<std::string> {
    ASSIGN_OR_RETURN(BenchRequest request, decode_bench_request(item.payload));
    BenchReply reply{request.header.request_id, BenchResult{}};
    Expected<BenchEvaluation> e = service->evaluate(BenchJob{.request = std::move(request)});
    if (e)
      reply.outcome = std::move(e->result);
    else
      reply.outcome = e.error();
    return encode_bench_reply(reply);
  };
}

std::vector<std::string> bench_worker_tags(const DeviceInfo& device) {
  return {"gpu", "gpu:" + device.name};
}

}  // namespace cuda_agent
