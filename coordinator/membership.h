// Membership of a run: which processes the coordinator has heard from, and which it takes for
// suspect or lost (DESIGN.md section 7; slime's first-grace rule, RL_INFRA_NOTES item 4).
//
// A member is known from its first message of any kind (a heartbeat, a request for work). Its
// silence limit is `heartbeat_timeout_ms` once it has sent a heartbeat, and
// max(first_heartbeat_grace_ms, heartbeat_timeout_ms) before its first one (loading a model and
// starting CUDA take minutes). Silent past its limit it is suspect (nothing is taken from it yet);
// silent past its limit + heartbeat_timeout_ms (twice the timeout after a heartbeat) it is lost:
// removed, and check() reports it once so its in-flight work is re-queued. A lost member that
// speaks again joins anew.
//
// Threading: a plain value owned by the coordinator actor (or a test); no internal locking. Time
// comes from the caller (the actor's clock), so tests drive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

/// "rollout_worker", "learner", ... (MemberRole is in messages/coordinator_protocol.h).
std::string_view to_string(MemberRole role);

enum class MemberHealth : std::uint8_t { kAlive = 0, kSuspect = 1, kLost = 2 };

struct MembershipOptions {
  /// From [run] (cluster/run_options.h). Defaults as there.
  std::chrono::milliseconds heartbeat_interval_ms{1000};
  std::chrono::milliseconds heartbeat_timeout_ms{10'000};
  std::chrono::milliseconds first_heartbeat_grace_ms{300'000};
};

class Membership {
 public:
  using Clock = std::chrono::steady_clock;

  struct Member {
    WorkerId id;
    MemberRole role = MemberRole::kRolloutWorker;
    Clock::time_point last_heard;
    bool heartbeat_seen = false;
    MemberHealth health = MemberHealth::kAlive;
    /// What its last heartbeat said of its own degradation; empty: healthy.
    std::string degraded;
  };
  struct Change {
    WorkerId id;
    MemberRole role = MemberRole::kRolloutWorker;
    MemberHealth health = MemberHealth::kAlive;  ///< the new health (kSuspect or kLost)
  };

  explicit Membership(MembershipOptions options) : options_(options) {}

  /// A message from `id` at `now`; `heartbeat` when it was a heartbeat, which also says whether
  /// the member is `degraded` (why; empty: healthy). True when that report changed.
  bool heard(const WorkerId& id, MemberRole role, Clock::time_point now, bool heartbeat,
             std::string_view degraded = {});
  /// "<member> (<role>): <why>" for each member whose last heartbeat reported it degraded.
  std::vector<std::string> degraded() const;
  /// Members whose health got worse since the last check; lost ones are removed.
  std::vector<Change> check(Clock::time_point now);

  bool known(const WorkerId& id) const { return members_.count(id) != 0; }
  const std::map<WorkerId, Member>& members() const { return members_; }

 private:
  MembershipOptions options_;
  std::map<WorkerId, Member> members_;
};

}  // namespace cuda_agent
