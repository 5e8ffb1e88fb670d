#include "coordinator/coordinator_supervisor.h"

#include <caf/all.hpp>

#include <deque>

#include "core/log.h"

namespace cuda_agent {
namespace {

struct SupervisorState {
  static inline const char* name = "cuda_agent.coordinator_supervisor";
  CoordinatorOptions options;
  CoordinatorStore* store = nullptr;
  SupervisorOptions supervision;
  coordinator_actor child;
  learner_peer learner;
  std::vector<version_subscriber> subscribers;
  std::deque<caf::actor_clock::time_point> restarts;
};

using Self = coordinator_supervisor::stateful_pointer<SupervisorState>;

// Starts a coordinator from the store and hands it the remembered peers; false on failure.
bool start_child(Self self) {
  auto& st = self->state;
  Expected<coordinator_actor> c = start_coordinator(self->system(), st.options, *st.store);
  if (!c) {
    log_error(c.error().with_context("coordinator supervisor: cannot start the coordinator"));
    return false;
  }
  st.child = *c;
  self->monitor(st.child);
  if (st.learner) self->send(st.child, attach_learner_atom::value, st.learner);
  for (const version_subscriber& s : st.subscribers) self->send(st.child, subscribe_atom::value, s);
  return true;
}

coordinator_supervisor::behavior_type supervisor_fn(Self self, CoordinatorOptions options,
                                                    CoordinatorStore* store,
                                                    SupervisorOptions supervision) {
  auto& st = self->state;
  st.options = std::move(options);
  st.store = store;
  st.supervision = supervision;
  // A failed first start ends the supervisor (quit before the behavior is ever used).
  if (!start_child(self))
    self->quit(caf::make_error(caf::sec::runtime_error, "coordinator start failed"));
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.child || dm.source != st.child.address()) return;
    st.child = nullptr;
    if (dm.reason == caf::exit_reason::normal || dm.reason == caf::exit_reason::user_shutdown) {
      self->quit(dm.reason);
      return;
    }
    const auto now = self->clock().now();
    while (!st.restarts.empty() && now - st.restarts.front() > st.supervision.restart_window_ms) {
      st.restarts.pop_front();
    }
    if (static_cast<int>(st.restarts.size()) >= st.supervision.max_restarts) {
      log_error("coordinator supervisor: the coordinator failed " +
                std::to_string(st.restarts.size() + 1) +
                " times within the window; escalating: " + self->system().render(dm.reason));
      self->quit(dm.reason);
      return;
    }
    st.restarts.push_back(now);
    log_warn("coordinator supervisor: the coordinator exited (" + self->system().render(dm.reason) +
             "); restarting it from the store");
    if (!start_child(self)) self->quit(dm.reason);
  });
  return {
      [self](current_atom) { return self->state.child; },
      [self](attach_learner_atom, learner_peer l) {
        self->state.learner = l;
        if (self->state.child) self->send(self->state.child, attach_learner_atom::value, l);
      },
      [self](subscribe_atom, version_subscriber s) {
        self->state.subscribers.push_back(s);
        if (self->state.child) self->send(self->state.child, subscribe_atom::value, s);
      },
  };
}

}  // namespace

coordinator_supervisor spawn_coordinator_supervisor(caf::actor_system& system,
                                                    CoordinatorOptions options,
                                                    CoordinatorStore& store,
                                                    SupervisorOptions supervision) {
  return system.spawn(supervisor_fn, std::move(options), &store, supervision);
}

}  // namespace cuda_agent
