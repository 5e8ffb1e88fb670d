// Pool calls as typed actor messages: an actor asks a `pool_channel` and does not know whether
// the pool is in this process (spawn_local_pool_channel: the handler runs here) or behind a
// broker (spawn_pool_gateway: the process's gateway actor, which owns the ZeroMQ client socket).
// Both answer with a PoolOutcome: the result or a typed Error with the same codes
// ("pool.deadline_expired", the handler's own errors, ...), and both treat the request id as an
// idempotency key. The gateway answers by the deadline; the local channel answers when its
// handler returns, so callers bound the wait with pool_request_timeout and map CAF's failure
// with pool_error_from_caf, which gives the same "pool.deadline_expired".
//
//   pool_channel pool = local ? spawn_local_pool_channel(sys, handler)
//                             : *spawn_pool_gateway(sys, {.broker_endpoint = ep});
//   // in an event-based actor:
//   self->request(pool, pool_request_timeout(req), pool_call_atom::value, req)
//       .then([](const PoolOutcome& o) { ... }, [](caf::error& e) { ... });
//   // outside actors (mains, tests):
//   PoolOutcome o = call_pool_channel(sys, pool, req);
//
// Threading: the handles are CAF actors, safe to use from any thread or actor. The gateway runs
// on the CAF scheduler and never blocks; its PoolClient's io thread turns replies into messages
// to the gateway, which answers the requester. The local channel is a detached actor (its own
// thread) so a slow handler blocks only itself; it runs one request at a time. Before the
// ActorRuntime is destroyed, send the channels an exit and drop every handle: CAF 0.17 keeps a
// detached actor's thread until its last handle is gone.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>

#include "actors/pool_client.h"
#include "actors/pool_worker.h"
#include "core/error.h"

namespace cuda_agent {

/// Asks a pool to run a request.
using pool_call_atom = caf::atom_constant<caf::atom("poolcall")>;

/// The protocol of every pool peer inside a process, local or remote.
using pool_channel =
    caf::typed_actor<caf::replies_to<pool_call_atom, PoolRequest>::with<PoolOutcome>>;

/// The process's gateway to a remote pool: owns a PoolClient connected to the broker.
Expected<pool_channel> spawn_pool_gateway(caf::actor_system& system,
                                          const PoolClientOptions& options);

struct LocalPoolChannelOptions {
  /// Outcomes kept for repeated request ids. Default: 10000.
  std::int64_t result_cache_entries = 10'000;
  /// The worker id reported in outcomes. Default: "local".
  WorkerId worker_id{"local"};
};

/// An in-process pool: runs `handler` on its own thread, with the broker's rules (expired
/// requests are not run, a result after the deadline becomes "pool.deadline_expired", repeated
/// ids get the stored outcome, exceptions become "pool.handler_threw").
pool_channel spawn_local_pool_channel(caf::actor_system& system, PoolHandler handler,
                                      const LocalPoolChannelOptions& options = {});

/// The request timeout to give CAF: time left to the deadline plus 250 ms for the answer to
/// travel.
std::chrono::milliseconds pool_request_timeout(const PoolRequest& request);

/// A failed CAF request to a channel as a pool error: a request timeout becomes
/// "pool.deadline_expired" (as the gateway reports it), anything else from_caf_error's mapping.
Error pool_error_from_caf(caf::actor_system& system, const caf::error& error,
                          const RequestId& request_id);

/// Sends `request` to `channel` and blocks until the outcome or pool_request_timeout; a CAF
/// failure becomes pool_error_from_caf's error.
PoolOutcome call_pool_channel(caf::actor_system& system, const pool_channel& channel,
                              PoolRequest request);

}  // namespace cuda_agent

// Local-only message types (they never cross a CAF network boundary; ZeroMQ carries them).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cuda_agent::PoolRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cuda_agent::PoolOutcome)
