#include "core/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/log.h"
#include "core/unique_fd.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

using Fd = UniqueFd;

Error spawn_error(const std::string& what, int err) {
  return make_error(ErrorCategory::kInternal, "sandbox.spawn", what + ": " + std::strerror(err));
}

// Child side: report which step failed and its errno through the status pipe, then exit. Only
// async-signal-safe calls from here on.
[[noreturn]] void child_fail(int status_fd, int step) {
  int payload[2] = {step, errno};
  ssize_t ignored = ::write(status_fd, payload, sizeof payload);
  (void)ignored;
  ::_exit(127);
}

enum ChildStep {
  kStepDup = 1,
  kStepChdir,
  kStepRlimit,
  kStepUnshare,
  kStepGroups,
  kStepGid,
  kStepUid,
  kStepPrctl,
  kStepExec
};

const char* step_name(int step) {
  switch (step) {
    case kStepDup: return "redirecting stdio";
    case kStepChdir: return "entering the working directory";
    case kStepRlimit: return "setting resource limits";
    case kStepUnshare: return "creating the network namespace";
    case kStepGroups: return "dropping supplementary groups";
    case kStepGid: return "switching group id";
    case kStepUid: return "switching user id";
    case kStepPrctl: return "setting process controls";
    case kStepExec: return "executing the program";
  }
  return "setting up";
}

void set_limit(int status_fd, int resource, rlim_t soft, rlim_t hard) {
  struct rlimit rl {
    soft, hard
  };
  if (::setrlimit(resource, &rl) != 0) child_fail(status_fd, kStepRlimit);
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Child side: every fd from `first` up is closed at exec, so the untrusted program inherits none
// of the parent's files and sockets (a store, a broker socket, a GPU lock) that were opened
// without O_CLOEXEC; the status pipe stays open until exec closes it. close_range(2) with
// CLOSE_RANGE_CLOEXEC (Linux 5.11) where it exists, else fcntl on every possible fd.
void cloexec_from(int status_fd, int first) {
#ifdef SYS_close_range
  constexpr unsigned kCloseRangeCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0u, kCloseRangeCloexec) == 0)
    return;
#endif
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) child_fail(status_fd, kStepDup);
  const int end = rl.rlim_cur == RLIM_INFINITY ? 1 << 20 : static_cast<int>(rl.rlim_cur);
  for (int fd = first; fd < end; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && fd != status_fd) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// The group guard: what kills a sandboxed process group when the process that started it dies
// without cleaning up (SIGKILL, a crash, the OOM killer). The parent-death signal set in the child
// only reaches the program itself; nvcc's own children (cicc, ptxas, the host compiler) have no
// such signal and would run on, orphaned, using the CPU the retry of the job needs. So each
// process that starts sandboxed children also starts one guard: a forked copy of itself, alone in
// its own process group, that knows every live sandboxed group and holds one end of a socket pair
// whose other end only the parent holds (close-on-exec). When the parent dies the kernel closes
// that end, the guard reads end-of-file, kills every group it knows with SIGKILL and exits.
//
// A child registers its own group before it executes the program (so no process of the group can
// exist unregistered) and the parent unregisters it once the group is gone. Messages are
// fixed-size datagrams (SOCK_SEQPACKET): several processes may send at once without interleaving.
// No cgroup is used: the workers usually run in containers without a delegated cgroup, and a
// process group is what the wall-deadline kill already relies on (a program that calls setsid or
// setpgid leaves both; the compilers do not).
struct GuardMessage {
  std::int32_t op;  // kGuardAdd or kGuardRemove
  std::int32_t pgid;
};
constexpr std::int32_t kGuardAdd = 1, kGuardRemove = 2;
constexpr int kGuardMaxGroups = 8192;

// The guard's whole life, in the forked child: async-signal-safe calls only, no allocation.
[[noreturn]] void guard_main(int fd) {
  ::setpgid(0, 0);  // out of the parent's group: a terminal's ^C or a group kill is not for us
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &ignore, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Only our end of the socket stays open: the parent's end (or any other pipe or socket of the
  // parent) held here would keep its reader from ever seeing end-of-file.
  for (int other = 0; other < fd; ++other) ::close(other);
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(fd) + 1, ~0u, 0u) != 0)
#endif
  {
    struct rlimit rl {};
    const int end = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                        ? static_cast<int>(rl.rlim_cur)
                        : 1 << 20;
    for (int other = fd + 1; other < end; ++other) ::close(other);
  }
  ::prctl(PR_SET_NAME, "sandbox-guard", 0, 0, 0);
  pid_t groups[kGuardMaxGroups];
  int n = 0;
  while (true) {
    GuardMessage m{};
    const ssize_t got = ::recv(fd, &m, sizeof m, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof m)) break;  // end-of-file: the parent is gone
    if (m.op == kGuardAdd && m.pgid > 1 && n < kGuardMaxGroups) {
      groups[n++] = m.pgid;
    } else if (m.op == kGuardRemove) {
      for (int i = 0; i < n; ++i)
        if (groups[i] == m.pgid) {
          groups[i] = groups[--n];
          break;
        }
    }
  }
  for (int i = 0; i < n; ++i) ::kill(-groups[i], SIGKILL);
  ::_exit(0);
}

class GroupGuard {
 public:
  // Never destroyed: sandboxed children may still run while static destructors do.
  static GroupGuard& instance() {
    static GroupGuard* guard = new GroupGuard;
    return *guard;
  }

  /// The parent's end of the socket, starting the guard first if none runs (or the last one
  /// died). Null when it cannot be started: the children then run unguarded (logged once). The
  /// caller keeps the pointer until its child has forked, so the descriptor number stays valid.
  std::shared_ptr<UniqueFd> socket() {
    std::lock_guard lock(mu_);
    if (sock_ && alive_locked()) return sock_;
    sock_.reset();
    if (pid_ > 0) ::waitpid(pid_, nullptr, WNOHANG);  // the dead guard's zombie
    pidfd_.reset();
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return fail(errno);
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      return fail(err);
    }
    if (pid == 0) guard_main(sv[1]);
    ::close(sv[1]);
    pid_ = pid;
    pidfd_ = UniqueFd(pidfd_open(pid));
    sock_ = std::make_shared<UniqueFd>(sv[0]);
    return sock_;
  }

  /// The group `pgid` is gone: the guard forgets it (so a later pid reuse is never killed).
  void forget(pid_t pgid) {
    std::shared_ptr<UniqueFd> sock;
    {
      std::lock_guard lock(mu_);
      sock = sock_;
    }
    if (!sock) return;
    const GuardMessage m{kGuardRemove, static_cast<std::int32_t>(pgid)};
    (void)::send(sock->fd, &m, sizeof m, MSG_NOSIGNAL);
  }

 private:
  // Through a pidfd where the kernel has one: waitpid could not tell a live guard from one some
  // other code of this process reaped (waitpid(-1), SIGCHLD ignored).
  bool alive_locked() const {
    if (pidfd_.fd >= 0) {
      pollfd exited{pidfd_.fd, POLLIN, 0};
      return ::poll(&exited, 1, 0) == 0;
    }
    return ::kill(pid_, 0) == 0;
  }

  std::shared_ptr<UniqueFd> fail(int err) {
    if (!warned_)
      log_warn(
          "sandbox: cannot start the group guard; a sandboxed program's children may outlive "
          "this process if it is killed",
          {{"error", std::strerror(err)}});
    warned_ = true;
    return nullptr;
  }

  std::mutex mu_;
  std::shared_ptr<UniqueFd> sock_;
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  bool warned_ = false;
};

// Forks the confined child (see sandbox.h): stdin from `stdin_fd`, stdout and stderr to
// `out_fd`, `extra_fd` (when >= 0) as its fd 3. Returns the pid; `status_r` receives the
// failure report of a step that failed before exec. The child registers its process group with
// the group guard first thing (GroupGuard). Nothing is allocated after fork.
Expected<pid_t> fork_confined(const SandboxSpec& spec, bool isolate, char* const* argv,
                              char* const* envp, int stdin_fd, int out_fd, int extra_fd,
                              Fd& status_r) {
  const std::shared_ptr<UniqueFd> guard = GroupGuard::instance().socket();
  const int guard_fd = guard ? guard->fd : -1;
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return spawn_error("pipe", errno);
  status_r = Fd(status_pipe[0]);
  Fd status_w(status_pipe[1]);
  const SandboxLimits& lim = spec.limits;
  pid_t pid = ::fork();
  if (pid < 0) return spawn_error("fork", errno);
  if (pid == 0) {
    const int sfd = status_w.fd;
    ::setpgid(0, 0);
    if (guard_fd >= 0) {
      const GuardMessage add{kGuardAdd, static_cast<std::int32_t>(::getpid())};
      (void)::send(guard_fd, &add, sizeof add, MSG_NOSIGNAL);
    }
    if (::dup2(stdin_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0)
      child_fail(sfd, kStepDup);
    if (extra_fd >= 0 && ::dup2(extra_fd, 3) < 0) child_fail(sfd, kStepDup);  // dup2 clears CLOEXEC
    cloexec_from(sfd, extra_fd >= 0 ? 4 : 3);
    if (::chdir(spec.work_dir.c_str()) != 0) child_fail(sfd, kStepChdir);
    set_limit(sfd, RLIMIT_CORE, 0, 0);
    set_limit(sfd, RLIMIT_CPU, static_cast<rlim_t>(lim.cpu_seconds),
              static_cast<rlim_t>(lim.cpu_seconds + 1));
    if (lim.memory_bytes > 0)
      set_limit(sfd, RLIMIT_AS, static_cast<rlim_t>(lim.memory_bytes),
                static_cast<rlim_t>(lim.memory_bytes));
    set_limit(sfd, RLIMIT_FSIZE, static_cast<rlim_t>(lim.file_bytes),
              static_cast<rlim_t>(lim.file_bytes));
    set_limit(sfd, RLIMIT_NOFILE, static_cast<rlim_t>(lim.open_files),
              static_cast<rlim_t>(lim.open_files));
    if (isolate && ::unshare(CLONE_NEWNET) != 0) child_fail(sfd, kStepUnshare);
    if (spec.run_as) {
      set_limit(sfd, RLIMIT_NPROC, static_cast<rlim_t>(lim.processes),
                static_cast<rlim_t>(lim.processes));
      if (::setgroups(0, nullptr) != 0) child_fail(sfd, kStepGroups);
      if (::setgid(spec.run_as->gid) != 0) child_fail(sfd, kStepGid);
      if (::setuid(spec.run_as->uid) != 0) child_fail(sfd, kStepUid);
    }
    // After the credential change, which clears the parent-death signal.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      child_fail(sfd, kStepPrctl);
    ::execve(argv[0], argv, envp);
    child_fail(sfd, kStepExec);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  return pid;
}

// execve's argv/envp form of `strings`: pointers into them, then a null. Built before fork (the
// child may not allocate); `strings` must outlive the result.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

Status check_spec(const SandboxSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/')
    return make_error(ErrorCategory::kInvalidInput, "sandbox.spawn",
                      "argv[0] must be an absolute path, got '" +
                          (spec.argv.empty() ? std::string() : spec.argv[0]) + "'");
  if (spec.work_dir.empty())
    return make_error(ErrorCategory::kInvalidInput, "sandbox.spawn", "work_dir is required");
  return Status::ok();
}

}  // namespace

std::string_view to_string(SandboxOutcome outcome) {
  switch (outcome) {
    case SandboxOutcome::kExited: return "exited";
    case SandboxOutcome::kSignalled: return "signalled";
    case SandboxOutcome::kWallTimeout: return "wall_timeout";
    case SandboxOutcome::kCpuLimit: return "cpu_limit";
    case SandboxOutcome::kOutputLimit: return "output_limit";
    case SandboxOutcome::kFileLimit: return "file_limit";
  }
  return "unknown";
}

bool can_isolate_network() {
  static std::once_flag once;
  static bool can = false;
  std::call_once(once, [] {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(::unshare(CLONE_NEWNET) == 0 ? 0 : 1);
    int status = 0;
    can = pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0;
  });
  return can;
}

Expected<SandboxResult> run_sandboxed(const SandboxSpec& spec) {
  RETURN_IF_ERROR(check_spec(spec));
  const bool isolate = spec.isolate_network && can_isolate_network();

  // Everything the child needs is built before fork: it may not allocate afterwards.
  const std::vector<char*> argv = c_strings(spec.argv), envp = c_strings(spec.env);
  const SandboxLimits& lim = spec.limits;

  int out_pipe[2], in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return spawn_error("pipe", errno);
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return spawn_error("pipe", errno);
  Fd in_r(in_pipe[0]), in_w(in_pipe[1]);
  Fd status_r;

  const auto started = Clock::now();
  ASSIGN_OR_RETURN(pid_t pid, fork_confined(spec, isolate, argv.data(), envp.data(), in_r.fd,
                                            out_w.fd, -1, status_r));
  out_w.reset();
  in_r.reset();

  SandboxResult result;
  result.network_isolated = isolate;
  bool killed_for_time = false, killed_for_output = false, child_exited = false;
  int wait_status = 0;
  struct rusage usage {};
  Fd pidfd(pidfd_open(pid));
  const auto deadline = started + std::chrono::milliseconds(lim.wall_ms);
  std::size_t stdin_sent = 0;
  ::fcntl(out_r.fd, F_SETFL, O_NONBLOCK);  // a process that left the group may hold the pipe
  if (spec.stdin_data.empty())
    in_w.reset();
  else
    ::fcntl(in_w.fd, F_SETFL, O_NONBLOCK);
  char buf[65536];

  auto reap = [&](int flags) {
    if (child_exited) return true;
    pid_t r = ::wait4(pid, &wait_status, flags, &usage);
    if (r == pid) child_exited = true;
    return child_exited;
  };
  auto kill_group = [&] { ::kill(-pid, SIGKILL); };

  // Read output until the pipe closes (every holder exited) or the main process is gone.
  while (out_r.fd >= 0) {
    auto now = Clock::now();
    if (now >= deadline) {
      killed_for_time = true;
      kill_group();
      break;
    }
    pollfd fds[3];
    int n = 0;
    fds[n++] = {out_r.fd, POLLIN, 0};
    int pidfd_at = -1, in_at = -1;
    if (pidfd.fd >= 0 && !child_exited) pidfd_at = n, fds[n++] = {pidfd.fd, POLLIN, 0};
    if (in_w.fd >= 0) in_at = n, fds[n++] = {in_w.fd, POLLOUT, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    int timeout = static_cast<int>(std::min<long long>(left, pidfd.fd >= 0 ? left : 20));
    int pr = ::poll(fds, n, timeout);
    if (pr < 0 && errno != EINTR) break;
    if (in_at >= 0 && (fds[in_at].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(in_w.fd, spec.stdin_data.data() + stdin_sent,
                          spec.stdin_data.size() - stdin_sent);
      if (w > 0) stdin_sent += static_cast<std::size_t>(w);
      if (w < 0 && errno != EAGAIN) in_w.reset();
      if (stdin_sent == spec.stdin_data.size()) in_w.reset();
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = ::read(out_r.fd, buf, sizeof buf);
      if (r > 0) {
        std::size_t room = static_cast<std::size_t>(lim.output_bytes) - result.output.size();
        result.output.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(r)));
        if (static_cast<std::size_t>(r) > room) {
          killed_for_output = true;
          kill_group();
          break;
        }
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        out_r.reset();
      }
    }
    if ((pidfd_at >= 0 && (fds[pidfd_at].revents & POLLIN)) || pidfd.fd < 0) {
      if (reap(WNOHANG)) {
        // The main process is done: nothing of its group may outlive it. Drain what is left.
        kill_group();
        while (true) {
          ssize_t r = ::read(out_r.fd, buf, sizeof buf);
          if (r <= 0) break;
          std::size_t room = static_cast<std::size_t>(lim.output_bytes) - result.output.size();
          result.output.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(r)));
        }
        break;
      }
    }
  }
  reap(0);
  kill_group();
  GroupGuard::instance().forget(pid);
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  result.max_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;

  int failure[2] = {0, 0};
  if (::read(status_r.fd, failure, sizeof failure) == static_cast<ssize_t>(sizeof failure))
    return spawn_error(std::string(step_name(failure[0])) + " for '" + spec.argv[0] + "'",
                       failure[1]);

  if (killed_for_time) {
    result.outcome = SandboxOutcome::kWallTimeout;
  } else if (killed_for_output) {
    result.outcome = SandboxOutcome::kOutputLimit;
  } else if (WIFEXITED(wait_status)) {
    result.outcome = SandboxOutcome::kExited;
    result.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    result.signal = WTERMSIG(wait_status);
    if (result.signal == SIGXCPU ||
        (result.signal == SIGKILL && result.cpu_seconds >= static_cast<double>(lim.cpu_seconds)))
      result.outcome = SandboxOutcome::kCpuLimit;
    else if (result.signal == SIGXFSZ)
      result.outcome = SandboxOutcome::kFileLimit;
    else
      result.outcome = SandboxOutcome::kSignalled;
  }
  if (killed_for_time || killed_for_output) result.signal = SIGKILL;
  return result;
}

Expected<SandboxedProcess> SandboxedProcess::start(const SandboxSpec& spec, int control_fd) {
  RETURN_IF_ERROR(check_spec(spec));
  const bool isolate = spec.isolate_network && can_isolate_network();
  // Built before fork, as in run_sandboxed.
  const std::vector<char*> argv = c_strings(spec.argv), envp = c_strings(spec.env);
  Fd out_r, out_w;
  if (!make_pipe(out_r, out_w)) return spawn_error("pipe", errno);
  Fd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_in.fd < 0) return spawn_error("open /dev/null", errno);
  Fd status_r;
  ASSIGN_OR_RETURN(pid_t pid, fork_confined(spec, isolate, argv.data(), envp.data(), null_in.fd,
                                            out_w.fd, control_fd, status_r));
  out_w.reset();
  SandboxedProcess p;
  p.pid_ = pid;
  p.pidfd_ = Fd(pidfd_open(pid));
  p.output_ = std::move(out_r);
  p.network_isolated_ = isolate;
  p.started_ = Clock::now();
  ::fcntl(p.output_.fd, F_SETFL, O_NONBLOCK);
  // The status pipe closes at exec (close-on-exec) or carries the failed step: a short wait.
  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(status_r.fd, failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    (void)p.stop();
    return spawn_error(std::string(step_name(failure[0])) + " for '" + spec.argv[0] + "'",
                       failure[1]);
  }
  return p;
}

SandboxedProcess::SandboxedProcess(SandboxedProcess&& o) noexcept
    : pid_(o.pid_),
      pidfd_(std::move(o.pidfd_)),
      output_(std::move(o.output_)),
      network_isolated_(o.network_isolated_),
      reaped_(o.reaped_),
      wait_status_(o.wait_status_),
      started_(o.started_) {
  o.pid_ = -1;
}

SandboxedProcess& SandboxedProcess::operator=(SandboxedProcess&& o) noexcept {
  if (this != &o) {
    (void)stop();
    pid_ = o.pid_;
    pidfd_ = std::move(o.pidfd_);
    output_ = std::move(o.output_);
    network_isolated_ = o.network_isolated_;
    reaped_ = o.reaped_;
    wait_status_ = o.wait_status_;
    started_ = o.started_;
    o.pid_ = -1;
  }
  return *this;
}

SandboxedProcess::~SandboxedProcess() { (void)stop(); }

bool SandboxedProcess::exited() {
  if (pid_ < 0 || reaped_) return true;
  if (::waitpid(pid_, &wait_status_, WNOHANG) == pid_) reaped_ = true;
  return reaped_;
}

std::string SandboxedProcess::read_output(std::size_t max_bytes) {
  std::string out;
  char buf[65536];
  while (output_.fd >= 0 && out.size() < max_bytes) {
    ssize_t r = ::read(output_.fd, buf, std::min(sizeof buf, max_bytes - out.size()));
    if (r > 0) {
      out.append(buf, static_cast<std::size_t>(r));
    } else {
      if (r == 0) output_.reset();
      break;
    }
  }
  return out;
}

SandboxResult SandboxedProcess::stop() {
  SandboxResult result;
  if (pid_ < 0) return result;
  result.network_isolated = network_isolated_;
  ::kill(-pid_, SIGKILL);
  if (!reaped_) {
    while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  ::kill(-pid_, SIGKILL);  // anything of the group still there
  GroupGuard::instance().forget(pid_);
  result.output = read_output(1 << 20);
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  if (WIFEXITED(wait_status_)) {
    result.outcome = SandboxOutcome::kExited;
    result.exit_code = WEXITSTATUS(wait_status_);
  } else if (WIFSIGNALED(wait_status_)) {
    result.outcome = SandboxOutcome::kSignalled;
    result.signal = WTERMSIG(wait_status_);
  }
  pid_ = -1;
  pidfd_.reset();
  output_.reset();
  return result;
}

Expected<std::string> read_untrusted_file(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.fd < 0) {
    const int err = errno;
    if (err == ENOENT)
      return make_error(ErrorCategory::kNotFound, "sandbox.no_file", path + ": no such file");
    if (err == ELOOP)
      return make_error(ErrorCategory::kPolicy, "sandbox.not_regular_file",
                        path + ": is a symbolic link (not followed)");
    return make_error(ErrorCategory::kIo, "sandbox.read", path + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0)
    return make_error(ErrorCategory::kIo, "sandbox.read", path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(ErrorCategory::kPolicy, "sandbox.not_regular_file",
                      path + ": not a regular file (a fifo, device, socket or directory)");
  if (st.st_nlink != 1)
    return make_error(ErrorCategory::kPolicy, "sandbox.not_regular_file",
                      path + ": has " + std::to_string(st.st_nlink) +
                          " hard links (it may be a file outside the job)");
  if (std::uint64_t(st.st_size) > max_bytes)
    return make_error(ErrorCategory::kInvalidInput, "sandbox.file_too_large",
                      path + ": " + std::to_string(st.st_size) + " bytes, more than " +
                          std::to_string(max_bytes));
  std::string out(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd.fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return make_error(ErrorCategory::kIo, "sandbox.read", path + ": " + std::strerror(errno));
    if (n == 0) break;
    got += std::size_t(n);
  }
  out.resize(got);
  return out;
}

}  // namespace cuda_agent
