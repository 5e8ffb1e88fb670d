#include "core/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace cuda_agent {
namespace {

// A manual clock: the test decides when time passes, so no sleeps.
struct FakeClock {
  std::chrono::steady_clock::time_point t{};
  void advance_ms(int ms) { t += std::chrono::milliseconds(ms); }
};

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(Progress, NonTerminalPrintsPeriodicLinesAndASummary) {
  FakeClock clock;
  std::FILE* out = std::tmpfile();
  {
    Progress p(
        {.label = "import", .total = 4, .out = out, .is_tty = 0, .line_every_ms = 1000, .now = [&] {
           return clock.t;
         }});
    clock.advance_ms(500);
    p.advance();  // 500 ms since start: no line yet
    clock.advance_ms(600);
    p.advance();  // 1100 ms: a line
    EXPECT_EQ(p.status(), "import: 2/4 (50%) 1.8/s ETA 1 s");
    p.fail();
    clock.advance_ms(900);
    p.advance();
  }  // destructor prints the summary
  std::string s = read_all(out);
  std::fclose(out);
  EXPECT_EQ(s, "import: 2/4 (50%) 1.8/s ETA 1 s\nimport: 4/4 in 2.0 s (2.0/s), 1 failed\n");
}

TEST(Progress, UnknownTotalShowsCountAndRateOnly) {
  FakeClock clock;
  std::FILE* out = std::tmpfile();
  Progress p({.label = "synth", .out = out, .is_tty = 1, .now = [&] { return clock.t; }});
  clock.advance_ms(2000);
  p.advance(10);
  EXPECT_EQ(p.status(), "synth: 10 5.0/s");
  p.finish();
  p.finish();  // once only
  std::string s = read_all(out);
  std::fclose(out);
  EXPECT_EQ(s, "\r\x1b[2Ksynth: 10 5.0/s\r\x1b[2Ksynth: 10 in 2.0 s (5.0/s)\n");
}

TEST(Progress, SlowWorkShowsSecondsEachNotARateRoundedToZero) {
  FakeClock clock;
  std::FILE* out = std::tmpfile();
  Progress p(
      {.label = "eval", .total = 4, .out = out, .is_tty = 1, .now = [&] { return clock.t; }});
  clock.advance_ms(70'400);
  p.advance(2);
  EXPECT_EQ(p.status(), "eval: 2/4 (50%) 35.2 s each ETA 70 s");
  clock.advance_ms(70'400);
  p.advance(2);
  p.finish();
  std::string s = read_all(out);
  std::fclose(out);
  EXPECT_EQ(s.substr(s.rfind('\r')), "\r\x1b[2Keval: 4/4 in 140.8 s (35.2 s each)\n");
}

}  // namespace
}  // namespace cuda_agent
