#include "core/progress.h"

#include <unistd.h>

#include <fmt/format.h>

namespace cuda_agent {

Progress::Progress(ProgressOptions options) : options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return std::chrono::steady_clock::now(); };
  tty_ = options_.is_tty >= 0 ? options_.is_tty != 0 : ::isatty(::fileno(options_.out)) != 0;
  start_ = options_.now();
  last_draw_ = start_;
}

Progress::~Progress() { finish(); }

namespace {

// "12.3/s", or for slow work (long episodes, GPU checks) "35.2 s each", which "0.0/s" would hide.
std::string rate_text(std::uint64_t done, double seconds) {
  if (done == 0 || seconds <= 0) return "0.0/s";
  const double rate = static_cast<double>(done) / seconds;
  if (rate >= 0.95) return fmt::format("{:.1f}/s", rate);
  return fmt::format("{:.1f} s each", seconds / static_cast<double>(done));
}

}  // namespace

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(options_.now() - start_).count();
}

std::string Progress::status() const {
  const double s = elapsed_s();
  const double rate = s > 0 ? static_cast<double>(done_) / s : 0.0;
  std::string out = fmt::format("{}: {}", options_.label, done_);
  if (options_.total > 0) {
    out += fmt::format("/{} ({:.0f}%)", options_.total, 100.0 * done_ / options_.total);
  }
  out += " " + rate_text(done_, s);
  if (options_.total > done_ && rate > 0) {
    out += fmt::format(" ETA {:.0f} s", (options_.total - done_) / rate);
  }
  if (failed_ > 0) out += fmt::format(", {} failed", failed_);
  return out;
}

void Progress::maybe_draw() {
  const auto now = options_.now();
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_draw_);
  if (since.count() < (tty_ ? options_.redraw_ms : options_.line_every_ms)) return;
  last_draw_ = now;
  if (tty_) {
    fmt::print(options_.out, "\r\x1b[2K{}", status());
  } else {
    fmt::print(options_.out, "{}\n", status());
  }
  std::fflush(options_.out);
}

void Progress::advance(std::uint64_t n) {
  done_ += n;
  maybe_draw();
}

void Progress::fail() {
  ++failed_;
  advance();
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  const double s = elapsed_s();
  std::string line = fmt::format("{}: {}", options_.label, done_);
  if (options_.total > 0) line += fmt::format("/{}", options_.total);
  line += fmt::format(" in {:.1f} s ({})", s, rate_text(done_, s));
  if (failed_ > 0) line += fmt::format(", {} failed", failed_);
  fmt::print(options_.out, "{}{}\n", tty_ ? "\r\x1b[2K" : "", line);
  std::fflush(options_.out);
}

}  // namespace cuda_agent
