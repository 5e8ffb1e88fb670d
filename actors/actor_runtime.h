// The CAF actor system every cuda-agent process shares. One ActorRuntime per process, created in
// main (or a test) and destroyed last; parts spawn their actors on `system()`.
//
//   ActorRuntime runtime({.scheduler_threads = 4});
//   auto worker = runtime.system().spawn(compile_worker, options);
//
// Threading: construct and destroy from one thread; `system()` is safe from any thread. The
// destructor waits for every actor to finish (CAF's await_all_actors_done).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>

#include "core/error.h"

namespace cuda_agent {

struct ActorRuntimeOptions {
  /// Scheduler worker threads; 0 means one per hardware thread. Default: 0.
  std::int64_t scheduler_threads = 0;
};

class ActorRuntime {
 public:
  explicit ActorRuntime(const ActorRuntimeOptions& options = {});
  ~ActorRuntime();
  ActorRuntime(const ActorRuntime&) = delete;
  ActorRuntime& operator=(const ActorRuntime&) = delete;

  caf::actor_system& system() { return *system_; }

 private:
  caf::actor_system_config config_;
  std::unique_ptr<caf::actor_system> system_;
};

/// Translates a CAF error (a failed request: timeout, dead peer, ...) into our Error, once, here.
/// An error made by to_caf_error comes back as the Error it carries.
Error from_caf_error(const caf::actor_system& system, const caf::error& error);

/// Our Error as a caf::error (category "cagent", the Error in its context), so that a handler can
/// answer a request with it and the requester gets it back whole through from_caf_error.
caf::error to_caf_error(const Error& error);

/// An actor's exception handler that keeps the exception's text (CAF's default prints it and
/// exits with a bare runtime_error): the actor exits with Error "actor.exception" carrying
/// what(), and a requester whose request it was handling gets that error.
///   self->set_exception_handler(keep_exception_text);
caf::error keep_exception_text(std::exception_ptr& exception);

}  // namespace cuda_agent
