// The work protocol between a rollout worker and the run's coordinator, as typed CAF messages
// (DESIGN.md section 3; issue 21 item 1): ask for an episode, submit its trajectory. The
// coordinator's own interface (coordinator/coordinator_actor.h) contains these two signatures,
// so its handle converts to `work_source_actor`; a worker in another process gets the same
// interface from rollout/blocking_work_source.h over the coordinator's ZeroMQ client. The worker
// cannot tell which one it has.
//
//   work_source_actor source = coordinator;                     // local: the coordinator itself
//   self->request(source, timeout, work_atom::value, WorkRequest{worker})
//       .then([](const WorkReply& r) { ... }, [](caf::error& e) { ... });
//
// Threading: CAF messages; a handle is safe from any actor or thread.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_inspect.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

using work_atom = caf::atom_constant<caf::atom("cwork")>;
using submit_atom = caf::atom_constant<caf::atom("csubmit")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Assignment& x) {
  return f(caf::meta::type_name("cuda_agent.Assignment"), x.episode_id, x.task_id, x.attempt,
           x.policy_version, x.stage);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkRequest& x) {
  return f(caf::meta::type_name("cuda_agent.WorkRequest"), x.worker);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkReply& x) {
  return f(caf::meta::type_name("cuda_agent.WorkReply"), x.assigned, x.assignment, x.retry_after_ms,
           x.reason);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TrajectorySubmission& x) {
  return f(caf::meta::type_name("cuda_agent.TrajectorySubmission"), x.worker, x.attempt, x.episode,
           x.evaluations, x.baselines);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SubmitReply& x) {
  return f(caf::meta::type_name("cuda_agent.SubmitReply"), x.episode_id, x.status, x.message);
}

/// Where a rollout worker's episodes come from and where their trajectories go. A reply to
/// work_atom is the coordinator's answer (an assignment, or "none now" with a retry hint and a
/// reason); a caf::error is a transport failure (the request may be repeated).
using work_source_actor =
    caf::typed_actor<caf::replies_to<work_atom, WorkRequest>::with<WorkReply>,
                     caf::replies_to<submit_atom, TrajectorySubmission>::with<SubmitReply>>;

/// Registers the work protocol's message types (call on the config before the system starts).
inline void add_work_message_types(caf::actor_system_config& config) {
  config.add_message_type<Assignment>("cuda_agent.Assignment");
  config.add_message_type<WorkRequest>("cuda_agent.WorkRequest");
  config.add_message_type<WorkReply>("cuda_agent.WorkReply");
  config.add_message_type<TrajectorySubmission>("cuda_agent.TrajectorySubmission");
  config.add_message_type<SubmitReply>("cuda_agent.SubmitReply");
}

}  // namespace cuda_agent
