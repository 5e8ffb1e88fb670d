#include "coordinator/staleness.h"

#include <gtest/gtest.h>

#include <random>

#include "coordinator/test_support.h"

namespace cuda_agent {
namespace {

TEST(Staleness, CapacityIsAReaLsFormula) {
  StalenessController c({.batch_episodes = 8, .max_staleness = 2, .max_concurrent = 0});
  EXPECT_EQ(c.bound(PolicyVersion{0}), 24u);  // (2 + 0 + 1) * 8
  EXPECT_EQ(c.capacity(PolicyVersion{0}), 24u);
  EXPECT_EQ(c.capacity(PolicyVersion{3}), 48u);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.admit(PolicyVersion{0}));
  c.on_accepted();
  EXPECT_EQ(c.capacity(PolicyVersion{0}), 19u);  // 24 - (1 + 4)
  StalenessController capped({.batch_episodes = 8, .max_staleness = 2, .max_concurrent = 3});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(capped.admit(PolicyVersion{0}));
  EXPECT_EQ(capped.capacity(PolicyVersion{0}), 0u);  // min(3 - 3, 24 - 3)
  capped.on_accepted();
  EXPECT_EQ(capped.capacity(PolicyVersion{0}), 1u);
}

// S = 0 is synchronous PPO: each version admits exactly one batch (the +1 admits version 0's).
TEST(Staleness, ZeroStalenessAdmitsExactlyOneBatchPerVersion) {
  const std::uint64_t batch = 4;
  StalenessController c({.batch_episodes = batch, .max_staleness = 0});
  for (std::uint64_t v = 0; v < 5; ++v) {
    std::uint64_t admitted = 0;
    while (c.admit(PolicyVersion{v})) ++admitted;
    EXPECT_EQ(admitted, batch) << "version " << v;
    for (std::uint64_t i = 0; i < batch; ++i) c.on_accepted();
    EXPECT_FALSE(c.admit(PolicyVersion{v})) << "nothing more until version " << v + 1;
  }
}

// Random interleavings of admissions, acknowledgements, losses, drops and version bumps: after
// every operation accepted + running <= (S + version + 1) * batch.
TEST(Staleness, AdmissionNeverExceedsTheBoundUnderRandomInterleavings) {
  const std::uint64_t seed = coord_test::test_seed("staleness interleavings");
  for (std::uint64_t round = 0; round < 200; ++round) {
    std::mt19937_64 rng(seed + round);
    const std::uint64_t batch = 1 + rng() % 8, s = rng() % 4,
                        conc = rng() % 3 == 0 ? 0 : 1 + rng() % 20;
    StalenessController c({.batch_episodes = batch, .max_staleness = s, .max_concurrent = conc});
    std::uint64_t version = 0;
    for (int op = 0; op < 2000; ++op) {
      const auto& k = c.counters();
      switch (rng() % 6) {
        case 0:
        case 1: c.admit(PolicyVersion{version}); break;
        case 2:
          if (k.running > 0) c.on_accepted();
          break;
        case 3:
          if (k.running > 0) (rng() % 2 ? c.on_lost() : c.on_rejected());
          break;
        case 4:
          if (k.accepted > 0 && rng() % 4 == 0) c.on_dropped();
          break;
        case 5:
          if (rng() % 8 == 0) ++version;
          break;
      }
      ASSERT_LE(c.counters().accepted + c.counters().running, c.bound(PolicyVersion{version}))
          << "seed " << seed + round << " op " << op;
      if (conc > 0) ASSERT_LE(c.counters().running, conc);
    }
  }
}

}  // namespace
}  // namespace cuda_agent
