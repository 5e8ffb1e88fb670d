// The production WorkSource (rollout/coordinated_rollout.h): the run's coordinator through its
// client (coordinator/coordinator_client.h), which carries the requests over ZeroMQ, waits up to
// its request timeout for each answer and heartbeats for this worker meanwhile.
//
//   ASSIGN_OR_RETURN(auto client, CoordinatorClient::connect({.endpoint = ..., .run = run,
//                                                              .member = worker_id}));
//   CoordinatorWorkSource source(*client);
//   CoordinatedRollout loop(source, prepare, {.worker_id = worker_id});
//
// Header-only, so the rollout library does not link the client; whoever builds one (the
// `cuda-agent serve rollout-worker --coordinator` command) links cuda_agent::coordinator_client.
//
// Threading: as the client: both calls from any number of threads at once.
#pragma once

#include "coordinator/coordinator_client.h"
#include "rollout/coordinated_rollout.h"

namespace cuda_agent {

class CoordinatorWorkSource final : public WorkSource {
 public:
  /// `client` must outlive this source.
  explicit CoordinatorWorkSource(CoordinatorClient& client) : client_(client) {}
  Expected<WorkReply> request_work() override { return client_.request_work(); }
  Expected<SubmitReply> submit(const TrajectorySubmission& submission) override {
    return client_.submit(submission);  // a copy: a retry sends the same submission again
  }
  void cancel_work_requests() override { client_.cancel_work_requests(); }

 private:
  CoordinatorClient& client_;
};

}  // namespace cuda_agent
