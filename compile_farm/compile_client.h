// The compile farm's client: a compile request to the farm's work-pool broker, the build (or its
// failure) back. What a rollout worker, `cuda-agent compile --farm` and `bench` link; the farm
// itself (compile_farm/farm.h: the handler, CompileService, nvcc) is not linked with it.
//
//   ASSIGN_OR_RETURN(auto client, CompileClient::connect({.broker_endpoint = "tcp://farm:5551"}));
//   Expected<CompileResult> r = client->call(request);   // no deadline: now + 5 min
//
// A failed build is a CompileReply holding the error (the broker caches it like any result, so
// a repeated request id gets the same answer); a transport problem (deadline, busy, lost workers)
// is a pool error. The client returns either as an Error (actors/pool_service_client.h).
//
// Threading: call() may be called from any thread concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/pool_service_client.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

struct CompilePoolProtocol {
  using Request = CompileRequest;
  using Result = CompileResult;
  static constexpr std::int64_t kDefaultTimeoutMs = 300'000;
  static std::string encode(const CompileRequest& request);
  static Expected<CompileResult> decode(std::string_view reply);
};

using CompileClient = PoolServiceClient<CompilePoolProtocol>;

}  // namespace cuda_agent
