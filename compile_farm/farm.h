// The compile farm on the wire: compile requests travel through a work-pool broker
// (actors/work_pool_broker.h) to compile workers, each running a CompileService.
//
//   // a worker process (`cuda-agent serve compile-worker --connect tcp://farm:5552`)
//   auto service = std::shared_ptr<CompileService>(std::move(*CompileService::create({})));
//   auto worker = PoolWorker::start({.broker_endpoint = ep, .slots = 8}, compile_handler(service));
//
//   // a client (rollout worker, `cuda-agent compile --farm tcp://farm:5551`)
//   ASSIGN_OR_RETURN(auto client, CompileClient::connect({.broker_endpoint = ep}));
//   Expected<CompileResult> r = client->compile(request);   // header.deadline_unix_ms required
//
//   // single machine: broker and one worker in this process, on loopback
//   ASSIGN_OR_RETURN(auto farm, EmbeddedCompileFarm::start({}, /*slots=*/2));
//
// A failed build is a CompileReply holding the error (the broker caches it like any result, so
// a repeated request id gets the same answer); a transport problem (deadline, busy, lost workers)
// is a pool error. The client returns either as an Error.
//
// Threading: CompileClient::compile may be called from any thread concurrently. The embedded
// farm's accessors are safe from any thread; its destructor stops the worker, then the broker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "actors/pool_client.h"
#include "actors/pool_worker.h"
#include "actors/work_pool_broker.h"
#include "compile_farm/compile_service.h"

namespace cuda_agent {

/// Decodes a CompileRequest payload, builds it, encodes the CompileReply.
PoolHandler compile_handler(std::shared_ptr<CompileService> service);

class CompileClient {
 public:
  static Expected<std::unique_ptr<CompileClient>> connect(const PoolClientOptions& options);
  /// Sends the request and waits until its deadline. A request without a deadline gets
  /// now + default_timeout_ms.
  Expected<CompileResult> compile(CompileRequest request,
                                  std::int64_t default_timeout_ms = 300'000);
  PoolClient& pool() { return *client_; }

 private:
  explicit CompileClient(std::unique_ptr<PoolClient> client) : client_(std::move(client)) {}
  std::unique_ptr<PoolClient> client_;
};

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
