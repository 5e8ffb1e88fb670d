#include "actors/actor_runtime.h"

#include <caf/sec.hpp>

#include <thread>

namespace cuda_agent {

ActorRuntime::ActorRuntime(const ActorRuntimeOptions& options) {
  std::size_t threads = options.scheduler_threads > 0
                            ? static_cast<std::size_t>(options.scheduler_threads)
                            : std::max(1u, std::thread::hardware_concurrency());
  config_.set("scheduler.max-threads", threads);
  // CAF prints nothing unless asked; our logging is spdlog (core/log.h).
  system_ = std::make_unique<caf::actor_system>(config_);
}

ActorRuntime::~ActorRuntime() {
  system_->await_all_actors_done();
  system_.reset();
}

Error from_caf_error(const caf::actor_system& system, const caf::error& error) {
  std::string text = const_cast<caf::actor_system&>(system).render(error);
  if (error.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(error.code())) {
      case caf::sec::request_timeout:
        return make_error(ErrorCategory::kTimeout, "actor.request_timeout", text);
      case caf::sec::request_receiver_down:
        return make_error(ErrorCategory::kUnavailable, "actor.receiver_down", text);
      case caf::sec::unexpected_message:
        return make_error(ErrorCategory::kInvalidInput, "actor.unexpected_message", text);
      default: break;
    }
  }
  return make_error(ErrorCategory::kInternal, "actor.error", text);
}

}  // namespace cuda_agent
