// The compile farm on the wire: compile requests travel through a work-pool broker
// (actors/work_pool_broker.h) to compile workers, each running a CompileService.
//
//   // a worker process (`cuda-agent serve compile-worker --connect tcp://farm:5552`)
//   auto service = std::shared_ptr<CompileService>(std::move(*CompileService::create({})));
//   auto worker = PoolWorker::start({.broker_endpoint = ep, .slots = 8}, compile_handler(service));
//
//   // a client (rollout worker, `cuda-agent compile --farm tcp://farm:5551`): the thin
//   // compile_farm/compile_client.h, which links none of this
//   ASSIGN_OR_RETURN(auto client, CompileClient::connect({.broker_endpoint = ep}));
//   Expected<CompileResult> r = client->call(request);
//
//   // single machine: broker and one worker in this process, on loopback
//   ASSIGN_OR_RETURN(auto farm, EmbeddedCompileFarm::start({}, /*slots=*/2));
//
// A failed build is a CompileReply holding the error (the broker caches it like any result, so
// a repeated request id gets the same answer); a transport problem (deadline, busy, lost workers)
// is a pool error. The client returns either as an Error.
//
// Threading: the embedded farm's accessors are safe from any thread; its destructor stops the
// worker, then the broker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "compile_farm/compile_client.h"
#include "compile_farm/compile_service.h"

namespace cuda_agent {

/// Decodes a CompileRequest payload, builds it, encodes the CompileReply.
PoolHandler compile_handler(std::shared_ptr<CompileService> service);

class EmbeddedCompileFarm {
 public:
  /// A broker on loopback ports and one worker with `slots` concurrent jobs (0: one per core).
  /// Without options.cache_dir, the per-user default_compile_cache_dir(), shared with later runs.
  static Expected<std::unique_ptr<EmbeddedCompileFarm>> start(CompileServiceOptions options,
                                                              std::int64_t slots);
  ~EmbeddedCompileFarm();

  const std::string& client_endpoint() const { return broker_->client_endpoint(); }
  const std::string& worker_endpoint() const { return broker_->worker_endpoint(); }
  CompileService& service() { return *service_; }
  WorkPoolBroker& broker() { return *broker_; }

 private:
  EmbeddedCompileFarm() = default;
  std::shared_ptr<CompileService> service_;
  std::unique_ptr<WorkPoolBroker> broker_;
  std::unique_ptr<PoolWorker> worker_;
};

}  // namespace cuda_agent
