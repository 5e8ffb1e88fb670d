// Supervision of the coordinator (issue 21 part 1: CAF 0.17 has no supervisor, so monitors do
// it). The supervisor spawns the coordinator from the store (start_coordinator), monitors it, and
// when it exits abnormally starts a new one from the store: the store is the coordinator's state
// (coordinator_state.h), so nothing acknowledged is lost and in-flight work is re-queued. Peers
// attached through the supervisor (the learner, version subscribers) are attached to every new
// coordinator. More than `max_restarts` restarts within `restart_window_ms` escalate: the
// supervisor exits with the coordinator's exit reason, so its own parent (main: the process
// exits non-zero and `cuda-agent train` restarts it) sees the failure. A normal exit (or
// user_shutdown) of the coordinator ends the supervisor normally.
//
//   auto sup = spawn_coordinator_supervisor(sys, options, *store);
//   caf::anon_send(sup, attach_learner_atom::value, learner);
//   self->request(sup, timeout, current_atom::value).then([](coordinator_actor c) { ... });
//
// Threading: a CAF event-based actor; `store` must outlive it.
#pragma once

#include "coordinator/coordinator_actor.h"

namespace cuda_agent {

/// Asks the supervisor for the coordinator now running.
using current_atom = caf::atom_constant<caf::atom("ccurrent")>;

using coordinator_supervisor =
    caf::typed_actor<caf::replies_to<current_atom>::with<coordinator_actor>,
                     caf::reacts_to<attach_learner_atom, learner_peer>,
                     caf::reacts_to<subscribe_atom, version_subscriber>>;

struct SupervisorOptions {
  /// Restarts allowed within the window before the failure is escalated. Default: 5.
  int max_restarts = 5;
  /// Default: 10 minutes.
  std::chrono::milliseconds restart_window_ms{600'000};
};

/// Spawns the supervisor, which starts the first coordinator at once. A first start that fails
/// (the store cannot be read, the restore refuses) ends the supervisor with that error.
coordinator_supervisor spawn_coordinator_supervisor(caf::actor_system& system,
                                                    CoordinatorOptions options,
                                                    CoordinatorStore& store,
                                                    SupervisorOptions supervision = {});

}  // namespace cuda_agent
