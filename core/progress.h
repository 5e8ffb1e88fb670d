// Progress display for long-running commands (imports, syntheses, filters, evaluations).
// On a terminal it redraws one line at most every `redraw_ms`; otherwise (logs, CI) it prints a
// plain line every `line_every_ms`. `finish()` prints the summary: count, time and rate.
//
//   Progress p({.label = "import", .total = files.size()});
//   for (...) { ...; p.advance(); }
//   p.finish();   // "import: 200/200 in 3.2 s (62.5/s), 2 failed"
//
// Threading: one thread drives a Progress (call advance/fail/finish from that thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace cuda_agent {

struct ProgressOptions {
  std::string label;
  /// Items expected; 0 when unknown (then no percentage or ETA is shown).
  std::uint64_t total = 0;
  /// Where to draw. Default: stderr.
  std::FILE* out = stderr;
  /// Whether `out` is a terminal; default: asks isatty(). Tests set it.
  int is_tty = -1;
  std::int64_t redraw_ms = 100;
  std::int64_t line_every_ms = 10'000;
  /// Clock for tests; default: steady_clock.
  std::function<std::chrono::steady_clock::time_point()> now;
};

class Progress {
 public:
  explicit Progress(ProgressOptions options);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// `n` more items done.
  void advance(std::uint64_t n = 1);
  /// One more item done that failed (counted in done and in failed).
  void fail();
  /// Prints the summary line once. Called by the destructor if not called before.
  void finish();

  std::uint64_t done() const { return done_; }
  std::uint64_t failed() const { return failed_; }
  /// The status text as drawn now, e.g. "import: 50/200 (25%) 12.5/s ETA 12 s, 1 failed".
  std::string status() const;

 private:
  void maybe_draw();
  double elapsed_s() const;

  ProgressOptions options_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::uint64_t done_ = 0;
  std::uint64_t failed_ = 0;
  bool finished_ = false;
};

}  // namespace cuda_agent
