// The GPU bench on the wire: bench requests travel through a work-pool broker
// (actors/work_pool_broker.h) to bench workers, one per GPU, each running a BenchService.
//
//   // a worker process (`cuda-agent serve bench-worker --connect tcp://pool:5562 --gpu 0`)
//   auto service = std::shared_ptr<BenchService>(std::move(*BenchService::create({.device = 0})));
//   auto worker = PoolWorker::start({.broker_endpoint = ep, .tags = bench_worker_tags(device),
//                                    .slots = 1}, bench_handler(service));
//
//   // a client (a rollout worker): the thin gpu_bench/bench_client.h, which links none of this
//   ASSIGN_OR_RETURN(auto client, BenchClient::connect({.broker_endpoint = ep}));
//   Expected<BenchResult> r = client->call(request, {"gpu:NVIDIA H200"});
//
// A request carries the task's model.py and the built solution inline (BenchRequest::payload);
// a worker refuses one without it ("bench.request": looking artifacts up in the run store is not
// implemented yet) and one whose model.py does not hash to TaskRef::content_hash when that is
// set ("bench.task_hash"). A candidate that fails checks is a BenchReply with a result (tier
// -1); an evaluation that could not run is a BenchReply with the error; a transport problem is a
// pool error. The client returns either as an Error.
//
// Threading: a worker runs one request at a time per GPU (slots = 1: the GPU is owned exclusively).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actors/pool_worker.h"
#include "gpu_bench/bench_client.h"
#include "gpu_bench/bench_service.h"
#include "gpu_bench/device_probe.h"

namespace cuda_agent {

/// Decodes a BenchRequest payload, evaluates it, encodes the BenchReply.
PoolHandler bench_handler(std::shared_ptr<BenchService> service);

/// The capability tags a bench worker announces: {"gpu", "gpu:<model>"} ("gpu:NVIDIA H200").
std::vector<std::string> bench_worker_tags(const DeviceInfo& device);

}  // namespace cuda_agent
