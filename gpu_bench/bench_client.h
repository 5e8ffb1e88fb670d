// The GPU bench pool's client: a bench request (the task's model.py and the built solution
// inline) to the pool's broker, the worker's BenchResult (with its audit record) back. What a
// rollout worker links; the bench itself (gpu_bench/bench_pool.h: the handler, BenchService, the
// harness) is not linked with it.
//
//   ASSIGN_OR_RETURN(auto client, BenchClient::connect({.broker_endpoint = "tcp://pool:5553"}));
//   Expected<BenchResult> r = client->call(request, {"gpu:NVIDIA H200"});  // no deadline: 10 min
//
// A candidate that fails checks is a result (tier -1); an evaluation that could not run, or a
// transport problem, is an Error (actors/pool_service_client.h).
//
// Threading: call() may be called from any thread concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/pool_service_client.h"
#include "messages/bench_codec.h"

namespace cuda_agent {

struct BenchPoolProtocol {
  using Request = BenchRequest;
  using Result = BenchResult;
  static constexpr std::int64_t kDefaultTimeoutMs = 600'000;
  static std::string encode(const BenchRequest& request);
  static Expected<BenchResult> decode(std::string_view reply);
};

using BenchClient = PoolServiceClient<BenchPoolProtocol>;

}  // namespace cuda_agent
