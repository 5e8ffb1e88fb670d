#include "coordinator/membership.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using Clock = Membership::Clock;

TEST(Membership, FirstGraceThenSuspectAfterTheTimeoutAndLostAfterTwiceIt) {
  Membership m({.heartbeat_interval_ms = 1000ms,
                .heartbeat_timeout_ms = 10'000ms,
                .first_heartbeat_grace_ms = 300'000ms});
  const Clock::time_point t0{};
  m.heard(WorkerId{"w"}, MemberRole::kRolloutWorker, t0, /*heartbeat=*/false);
  EXPECT_TRUE(m.check(t0 + 299'000ms).empty()) << "inside the first grace";
  auto c = m.check(t0 + 301'000ms);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].health, MemberHealth::kSuspect);
  m.heard(WorkerId{"w"}, MemberRole::kRolloutWorker, t0 + 302'000ms, /*heartbeat=*/true);
  EXPECT_TRUE(m.check(t0 + 311'000ms).empty());  // 9 s of silence
  c = m.check(t0 + 313'000ms);                   // 11 s: suspect
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].health, MemberHealth::kSuspect);
  EXPECT_TRUE(m.check(t0 + 321'000ms).empty()) << "suspect is reported once";
  c = m.check(t0 + 323'000ms);  // 21 s: lost
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].health, MemberHealth::kLost);
  EXPECT_FALSE(m.known(WorkerId{"w"}));
  EXPECT_TRUE(m.check(t0 + 400'000ms).empty()) << "lost is reported once";
}

TEST(Membership, AHeartbeatSaysWhetherItsMemberIsDegradedAndALostOneSaysNothing) {
  Membership m({.heartbeat_timeout_ms = 10'000ms, .first_heartbeat_grace_ms = 10'000ms});
  const Clock::time_point t0{};
  const WorkerId node{"node-agent/node-b"};
  m.heard(node, MemberRole::kNodeAgent, t0, true);
  m.heard(WorkerId{"w"}, MemberRole::kRolloutWorker, t0, true);
  EXPECT_TRUE(m.degraded().empty());
  m.heard(node, MemberRole::kNodeAgent, t0 + 1s, true, "gave up compile-worker-3");
  m.heard(WorkerId{"w"}, MemberRole::kRolloutWorker, t0 + 1s, false, "not a heartbeat");
  EXPECT_EQ(m.degraded(),
            std::vector<std::string>{"node-agent/node-b (node_agent): gave up compile-worker-3"});
  m.heard(node, MemberRole::kNodeAgent, t0 + 2s, false);  // a request: the report stands
  EXPECT_EQ(m.degraded().size(), 1u);
  m.heard(node, MemberRole::kNodeAgent, t0 + 3s, true);  // restarted healthy
  EXPECT_TRUE(m.degraded().empty());
  m.heard(node, MemberRole::kNodeAgent, t0 + 4s, true, "gave up learner");
  (void)m.check(t0 + 30s);  // lost
  EXPECT_TRUE(m.degraded().empty());
}

}  // namespace
}  // namespace cuda_agent
