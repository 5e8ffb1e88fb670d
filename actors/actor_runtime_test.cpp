#include "actors/actor_runtime.h"

#include <gtest/gtest.h>

#include <caf/all.hpp>

namespace cuda_agent {
namespace {

using doubler_actor = caf::typed_actor<caf::replies_to<int>::with<int>>;

doubler_actor::behavior_type doubler() {
  return {[](int x) { return 2 * x; }};
}

// An actor that takes requests and never answers them: the caller's deadline must fire.
caf::behavior silent(caf::event_based_actor* self) {
  return {[=](int) -> caf::result<int> { return self->make_response_promise<int>(); }};
}

TEST(ActorRuntime, TypedRequestGetsAReply) {
  ActorRuntime runtime({.scheduler_threads = 2});
  auto worker = runtime.system().spawn(doubler);
  caf::scoped_actor self{runtime.system()};
  int got = 0;
  self->request(worker, std::chrono::seconds(10), 21)
      .receive([&](int v) { got = v; },
               [&](caf::error& e) { FAIL() << from_caf_error(runtime.system(), e).to_string(); });
  EXPECT_EQ(got, 42);
  self->send_exit(worker, caf::exit_reason::user_shutdown);
}

// Covers: a reply that never arrives before the deadline becomes a typed timeout error.
TEST(ActorRuntime, MissingReplyBecomesATypedTimeout) {
  ActorRuntime runtime({.scheduler_threads = 2});
  auto peer = runtime.system().spawn(silent);
  caf::scoped_actor self{runtime.system()};
  Error error;
  self->request(peer, std::chrono::milliseconds(50), 1)
      .receive([&](int) { FAIL() << "unexpected reply"; },
               [&](caf::error& e) { error = from_caf_error(runtime.system(), e); });
  EXPECT_EQ(error.category, ErrorCategory::kTimeout);
  EXPECT_EQ(error.code, "actor.request_timeout");
  self->send_exit(peer, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace cuda_agent
