#include "coordinator/membership.h"

#include <algorithm>

namespace cuda_agent {

std::string_view to_string(MemberRole role) {
  switch (role) {
    case MemberRole::kRolloutWorker: return "rollout_worker";
    case MemberRole::kLearner: return "learner";
    case MemberRole::kEngine: return "engine";
    case MemberRole::kCompileWorker: return "compile_worker";
    case MemberRole::kBenchWorker: return "bench_worker";
    case MemberRole::kNodeAgent: return "node_agent";
  }
  return "unknown";
}

bool Membership::heard(const WorkerId& id, MemberRole role, Clock::time_point now, bool heartbeat,
                       std::string_view degraded) {
  auto [it, inserted] = members_.try_emplace(id);
  Member& m = it->second;
  if (inserted) {
    m.id = id;
    m.role = role;
  }
  m.last_heard = now;
  m.heartbeat_seen = m.heartbeat_seen || heartbeat;
  m.health = MemberHealth::kAlive;
  if (!heartbeat || m.degraded == degraded) return false;
  m.degraded = std::string(degraded);
  return true;
}

std::vector<std::string> Membership::degraded() const {
  std::vector<std::string> out;
  for (const auto& [id, m] : members_) {
    if (!m.degraded.empty())
      out.push_back(id.value() + " (" + std::string(to_string(m.role)) + "): " + m.degraded);
  }
  return out;
}

std::vector<Membership::Change> Membership::check(Clock::time_point now) {
  std::vector<Change> changes;
  for (auto it = members_.begin(); it != members_.end();) {
    Member& m = it->second;
    const auto limit = m.heartbeat_seen ? options_.heartbeat_timeout_ms
                                        : std::max(options_.first_heartbeat_grace_ms,
                                                   options_.heartbeat_timeout_ms);
    const auto silent = now - m.last_heard;
    if (silent > limit + options_.heartbeat_timeout_ms) {
      changes.push_back({m.id, m.role, MemberHealth::kLost});
      it = members_.erase(it);
      continue;
    }
    if (silent > limit && m.health == MemberHealth::kAlive) {
      m.health = MemberHealth::kSuspect;
      changes.push_back({m.id, m.role, MemberHealth::kSuspect});
    }
    ++it;
  }
  return changes;
}

}  // namespace cuda_agent
