#include "core/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

#include "core/unique_fd.h"

namespace cuda_agent {
namespace {

// The whole of a small /proc file, or nullopt on any error (ENOENT, ESRCH, ...).
std::optional<std::string> read_small_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// The next space-separated field of `rest` as a number; false when there is none.
template <typename T>
bool next_number(std::string_view& rest, T& out) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
  if (ec != std::errc()) return false;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  return true;
}

bool skip_fields(std::string_view& rest, int count) {
  for (long long ignored = 0; count > 0; --count)
    if (!next_number(rest, ignored)) return false;
  return true;
}

}  // namespace

double ProcStat::cpu_seconds() const {
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::optional<ProcStat> parse_proc_stat(pid_t pid, std::string_view text) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  //  stime cutime cstime priority nice num_threads itrealvalue starttime ..." (proc(5))
  const auto open = text.find('('), close = text.rfind(')');  // comm may hold ')' itself
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      close + 3 >= text.size())
    return std::nullopt;
  ProcStat p;
  p.pid = pid;
  p.comm = std::string(text.substr(open + 1, close - open - 1));
  p.state = text[close + 2];
  std::string_view rest = text.substr(close + 3);
  if (!next_number(rest, p.ppid) || !next_number(rest, p.pgid) || !skip_fields(rest, 8) ||
      !next_number(rest, p.utime) || !next_number(rest, p.stime) || !skip_fields(rest, 6) ||
      !next_number(rest, p.start))
    return std::nullopt;
  return p;
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const auto text = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  return parse_proc_stat(pid, *text);
}

std::vector<ProcStat> all_processes() {
  std::vector<ProcStat> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    pid_t pid = 0;
    const auto [last, bad] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (bad != std::errc() || last != name.data() + name.size()) continue;
    if (auto p = read_proc_stat(pid)) out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace cuda_agent
