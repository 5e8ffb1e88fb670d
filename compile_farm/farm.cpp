#include "compile_farm/farm.h"

#include <thread>

namespace cuda_agent {

PoolHandler compile_handler(std::shared_ptr<CompileService> service) {
  return [service](const WorkItem& item) -> Expected<std::string> {
    ASSIGN_OR_RETURN(CompileRequest request, decode_compile_request(item.payload));
    CompileReply reply{request.header.request_id, service->compile(request)};
    return encode_compile_reply(reply);
  };
}

Expected<std::unique_ptr<EmbeddedCompileFarm>> EmbeddedCompileFarm::start(
    CompileServiceOptions options, std::int64_t slots) {
  std::unique_ptr<EmbeddedCompileFarm> farm(new EmbeddedCompileFarm());
  // The cache outlives this process: the job key hashes the normalised inputs and the toolchain,
  // so the next `cuda-agent compile`, bench or eval of an unchanged solution starts no nvcc.
  if (options.cache_dir.empty() && options.use_cache)
    options.cache_dir = default_compile_cache_dir();
  ASSIGN_OR_RETURN(auto service, CompileService::create(std::move(options)));
  farm->service_ = std::move(service);
  WorkPoolBrokerOptions broker;
  broker.name = "compile-farm";
  ASSIGN_OR_RETURN(farm->broker_, WorkPoolBroker::start(broker));
  PoolWorkerOptions worker;
  worker.broker_endpoint = farm->broker_->worker_endpoint();
  worker.slots = slots > 0 ? slots : std::max(1u, std::thread::hardware_concurrency());
  ASSIGN_OR_RETURN(farm->worker_, PoolWorker::start(worker, compile_handler(farm->service_)));
  return farm;
}

EmbeddedCompileFarm::~EmbeddedCompileFarm() {
  if (worker_) worker_->stop();
  if (broker_) broker_->stop();
}

}  // namespace cuda_agent
