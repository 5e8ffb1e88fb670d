#include "actors/actor_runtime.h"

#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>

#include <thread>

#include "actors/caf_inspect.h"

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

namespace {
constexpr caf::atom_value kOurErrors = caf::atom("cagent");
}  // namespace

caf::error to_caf_error(const Error& error) {
  return caf::error(static_cast<std::uint8_t>(1), kOurErrors, caf::make_message(error));
}

caf::error keep_exception_text(std::exception_ptr& exception) {
  std::string what = "an unknown exception";
  try {
    std::rethrow_exception(exception);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  return to_caf_error(make_error(ErrorCategory::kInternal, "actor.exception", "threw: " + what));
}

Error from_caf_error(const caf::actor_system& system, const caf::error& error) {
  if (error.category() == kOurErrors && error.context().match_elements<Error>())
    return error.context().get_as<Error>(0);
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
