// The learner as the coordinator sees it: a typed actor that trains one step on named episodes
// and writes checkpoints. The handle may be the learner driver in this process or the process's
// gateway to a remote learner group; the coordinator cannot tell and does not care.
//
//   self->request(learner, step_timeout, train_step_atom::value, TrainStep{...})
//       .then([](const StepDone& done) { ... }, [](caf::error& e) { /* step failed */ });
//
// Ordering contract: the coordinator sends at most one request at a time (a step, or a
// checkpoint after a step), so a learner handles them in order; a checkpoint holds the weights
// of the last step it answered. A step answers with the version it produced (normally
// step.version + 1); a failed step answers with an error and the coordinator offers the same
// episodes again. Episodes are named by id; the learner reads them from the store (learner/
// load_sequences), which holds every one before it is named here.
//
// Threading: CAF messages; the handle is safe to use from any actor or thread.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_inspect.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

/// Train one step.
using train_step_atom = caf::atom_constant<caf::atom("ctrain")>;
/// Write a checkpoint of the current weights.
using checkpoint_atom = caf::atom_constant<caf::atom("cckpt")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RecordedStep& x) {
  return f(caf::meta::type_name("cuda_agent.RecordedStep"), x.step, x.stage, x.version, x.episodes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TrainStep& x) {
  return f(caf::meta::type_name("cuda_agent.TrainStep"), x.step, x.stage, x.version, x.episodes,
           x.replay);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepDone& x) {
  return f(caf::meta::type_name("cuda_agent.StepDone"), x.step, x.new_version, x.metrics);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CheckpointRequest& x) {
  return f(caf::meta::type_name("cuda_agent.CheckpointRequest"), x.step, x.version);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CheckpointDone& x) {
  return f(caf::meta::type_name("cuda_agent.CheckpointDone"), x.step, x.path, x.size_bytes,
           x.checksum);
}

/// The learner's protocol toward the coordinator.
using learner_peer =
    caf::typed_actor<caf::replies_to<train_step_atom, TrainStep>::with<StepDone>,
                     caf::replies_to<checkpoint_atom, CheckpointRequest>::with<CheckpointDone>>;

}  // namespace cuda_agent
