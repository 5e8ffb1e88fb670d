// fork/exec with pipes, rlimits and a poll loop with deadlines (see child_process.h).
#include "tasks/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/unique_fd.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

using Fd = UniqueFd;

void set_limit(int resource, std::int64_t value) {
  rlimit r{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  ::setrlimit(resource, &r);
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const ChildSpec& spec, char* const* argv, int in, int out, int err,
                             int report) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::setpgid(0, 0);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  set_limit(RLIMIT_AS, spec.limits.address_space_bytes);
  set_limit(RLIMIT_CPU, spec.limits.cpu_seconds);
  set_limit(RLIMIT_FSIZE, spec.limits.file_size_bytes);
  set_limit(RLIMIT_NOFILE, spec.limits.open_files);
  set_limit(RLIMIT_CORE, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::execvp(argv[0], argv);
  const int e = errno;
  (void)!::write(report, &e, sizeof e);
  ::_exit(127);
}

// Blocks SIGPIPE on this thread for its lifetime; a SIGPIPE raised meanwhile is consumed.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    timespec zero{0, 0};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
};

std::int64_t ms_until(Clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return ms < 0 ? 0 : ms;
}

}  // namespace

std::string ChildRun::describe() const {
  std::string s;
  if (timed_out) {
    s = "timed out after " + std::to_string(waited_ms) + " ms waiting for answer " +
        std::to_string(lines + 1) + " and was killed";
  } else if (signal != 0) {
    s = "was killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  } else {
    s = "exited with " + std::to_string(exit_code);
  }
  if (!stderr_tail.empty()) {
    std::string tail = stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    const auto nl = tail.rfind('\n');
    s += "; stderr: " + (nl == std::string::npos ? tail : tail.substr(nl + 1));
  }
  return s;
}

Expected<ChildRun> run_line_child(const ChildSpec& spec, std::string_view input,
                                  const std::function<void(std::string_view line)>& on_line) {
  if (spec.argv.empty()) {
    return make_error(ErrorCategory::kInternal, "task.child_start", "no program to run");
  }
  const std::string& program = spec.argv.front();
  auto start_error = [&](const std::string& why) {
    return make_error(ErrorCategory::kUnavailable, "task.child_start",
                      "cannot start " + program + ": " + why);
  };
  Fd in_r, in_w, out_r, out_w, err_r, err_w, rep_r, rep_w;
  if (!make_pipe(in_r, in_w) || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) ||
      !make_pipe(rep_r, rep_w)) {
    return start_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  SigpipeGuard sigpipe;
  const pid_t pid = ::fork();
  if (pid < 0) return start_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(spec, argv.data(), in_r.fd, out_w.fd, err_w.fd, rep_w.fd);
  in_r.reset();
  out_w.reset();
  err_w.reset();
  rep_w.reset();

  // exec succeeded when the report pipe closes without data (it is close-on-exec).
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(rep_r.fd, &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status;
    ::waitpid(pid, &status, 0);
    return start_error(std::strerror(exec_errno));
  }

  ::fcntl(in_w.fd, F_SETFL, ::fcntl(in_w.fd, F_GETFL) | O_NONBLOCK);
  ChildRun run;
  std::size_t written = 0;
  if (input.empty()) in_w.reset();
  std::string line, err;
  auto deadline = Clock::now() + std::chrono::milliseconds(spec.first_line_timeout_ms);
  std::int64_t current_timeout = spec.first_line_timeout_ms;
  char buf[65536];
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_w.fd >= 0) fds[n++] = {in_w.fd, POLLOUT, 0};
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    const int wait_ms = static_cast<int>(std::min<std::int64_t>(ms_until(deadline), 1 << 30));
    const int ready = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 || Clock::now() >= deadline) {
      run.timed_out = true;
      run.waited_ms = current_timeout;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_w.fd) {
        const ssize_t w = ::write(in_w.fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) in_w.reset();
        continue;
      }
      Fd& src = fds[i].fd == out_r.fd ? out_r : err_r;
      const ssize_t r = ::read(src.fd, buf, sizeof buf);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r <= 0) {
        src.reset();
        if (&src == &out_r) {  // stdout closed: the child has only its exit left to do
          current_timeout = spec.next_line_timeout_ms;
          deadline = Clock::now() + std::chrono::milliseconds(current_timeout);
        }
        continue;
      }
      if (&src == &err_r) {
        err.append(buf, static_cast<std::size_t>(r));
        if (err.size() > 8192) err.erase(0, err.size() - 4096);
        continue;
      }
      for (ssize_t k = 0; k < r; ++k) {
        if (buf[k] != '\n') {
          if (line.size() < spec.max_line_bytes) line.push_back(buf[k]);
          continue;
        }
        ++run.lines;
        on_line(line);
        line.clear();
        current_timeout = spec.next_line_timeout_ms;
        deadline = Clock::now() + std::chrono::milliseconds(current_timeout);
      }
    }
  }
  in_w.reset();
  int status = 0;
  if (run.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else {
    // Both pipes are closed; the child exits next. Wait for that with the same deadline.
    while (true) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) {
        run.timed_out = true;
        run.waited_ms = current_timeout;
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      ::usleep(1000);
    }
  }
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  run.stderr_tail = err.size() > 4096 ? err.substr(err.size() - 4096) : err;
  return run;
}

}  // namespace cuda_agent
