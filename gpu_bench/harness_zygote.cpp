// The worker's side of the harness zygote (see harness_zygote.h; the Python side is
// gpu_bench/harness/zygote.py).
#include "gpu_bench/harness_zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr std::size_t kMaxMessage = 1 << 20;
constexpr std::size_t kZygoteOutputKept = 16 << 10;

Error zygote_error(const std::string& message) {
  return make_error(ErrorCategory::kUnavailable, "bench.zygote", message);
}

int ms_until(Clock::time_point t) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left + 1, 0, 60'000));
}

/// One SOCK_SEQPACKET message, with an fd as SCM_RIGHTS when fd >= 0. Never blocks.
bool send_message(int sock, const std::string& text, int fd) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(text.size());
}

/// One message (empty: the peer closed the socket) and the fds it carried (owned by the caller).
/// nullopt on an error other than EOF.
std::optional<std::string> recv_message(int sock, std::vector<UniqueFd>& fds) {
  std::string buf(kMaxMessage, '\0');
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return std::nullopt;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return std::nullopt;
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

void kill_job(pid_t pid, int pidfd) {
  if (pidfd >= 0) ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  if (pid > 0) ::kill(-pid, SIGKILL);  // its group: the job made it its own, so did the zygote
}

}  // namespace

Expected<std::unique_ptr<HarnessZygote>> HarnessZygote::start(const HarnessZygoteOptions& o) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return make_error(ErrorCategory::kInternal, "sandbox.spawn",
                      std::string("socketpair: ") + std::strerror(errno));
  UniqueFd mine(sv[0]), theirs(sv[1]);
  HarnessSandbox box = o.box;
  box.wall_ms = 600'000;  // only shapes the CPU backstop below; the zygote has no wall limit
  SandboxSpec spec = harness_sandbox_spec(box, {o.zygote_script, "--harness", o.harness_script});
  // The zygote's own CPU time is the imports and the forks; each job lowers its limit to its own.
  // Kept high so that a long-lived zygote does not run into it; the hard limit is what a job may
  // still set for itself.
  spec.limits.cpu_seconds = 7 * 24 * 3600;
  ASSIGN_OR_RETURN(SandboxedProcess p, SandboxedProcess::start(spec, theirs.fd));
  auto z = std::unique_ptr<HarnessZygote>(new HarnessZygote());
  z->process_ = std::move(p);
  z->control_ = std::move(mine);
  z->grace_ms_ = o.message_grace_ms;
  return z;
}

HarnessZygote::~HarnessZygote() {
  control_.reset();  // the zygote's recv returns 0 and it exits; stop() kills it regardless
  (void)process_.stop();
}

bool HarnessZygote::alive() { return process_.running() && !process_.exited(); }

void HarnessZygote::keep_output(const std::string& more) {
  output_ += more;
  if (output_.size() > kZygoteOutputKept) output_.erase(0, output_.size() - kZygoteOutputKept);
}

Error HarnessZygote::fail(const std::string& what) {
  ready_ = false;
  control_.reset();
  SandboxResult r = process_.stop();
  keep_output(r.output);
  std::string out = output_;
  if (out.size() > 2000) out = "..." + out.substr(out.size() - 2000);
  Error e = zygote_error("harness zygote: " + what +
                         (out.empty() ? std::string() : " (zygote output: " + out + ")"));
  failure_ = e.message;
  return e;
}

Status HarnessZygote::wait_ready(Clock::time_point deadline) {
  if (ready_) return Status::ok();
  if (control_.fd < 0) return zygote_error("harness zygote: stopped");
  while (true) {
    if (Clock::now() >= deadline) return fail("not ready before its start-up deadline");
    pollfd fds[2] = {{control_.fd, POLLIN, 0}, {process_.output_fd(), POLLIN, 0}};
    int n = ::poll(fds, process_.output_fd() >= 0 ? 2 : 1, ms_until(deadline));
    if (n < 0 && errno != EINTR) return fail(std::string("poll: ") + std::strerror(errno));
    if (process_.output_fd() >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
      keep_output(process_.read_output(kZygoteOutputKept));  // keep its pipe from filling
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      std::vector<UniqueFd> carried;
      auto msg = recv_message(control_.fd, carried);
      if (!msg || msg->empty()) return fail("exited before it was ready");
      json j = json::parse(*msg, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("ready"))
        return fail("sent an unexpected first message");
      if (!j["ready"].is_boolean() || !j["ready"].get<bool>())
        return fail("refused to serve: " + j.value("error", std::string("no reason given")));
      ready_ = true;
      ready_info_ = *msg;
      return Status::ok();
    }
  }
}

Expected<SandboxResult> HarnessZygote::run(const ZygoteJob& job) {
  if (!ready_ || control_.fd < 0) return zygote_error("harness zygote: not ready");
  const std::uint64_t id = ++jobs_;
  UniqueFd out_r, out_w;
  if (!make_pipe(out_r, out_w)) return zygote_error(std::string("pipe: ") + std::strerror(errno));
  const std::string text = json{
      {"id", id},
      {"argv", job.argv},
      {"env", job.env},
      {"dir", job.dir},
      {"cpu_seconds",
       job.limits.cpu_seconds}}.dump();
  const auto started = Clock::now();
  if (!send_message(control_.fd, text, out_w.fd))
    return fail(std::string("cannot send the job: ") + std::strerror(errno));
  out_w.reset();  // the job's own copy (and the zygote's, until it forks) are the only writers
  ::fcntl(out_r.fd, F_SETFL, O_NONBLOCK);

  const auto grace = std::chrono::milliseconds(grace_ms_);
  const auto deadline = started + std::chrono::milliseconds(job.limits.wall_ms);
  SandboxResult result;
  result.network_isolated = process_.network_isolated();
  pid_t job_pid = -1;
  UniqueFd job_pidfd;
  bool job_gone = false, killed_for_time = false, killed_for_output = false;
  // While waiting for a message the zygote owes: its pid message, or the status once the job's
  // process has ended or was killed.
  std::optional<Clock::time_point> owed = started + grace;
  json status;
  char buf[65536];
  auto kill_it = [&] { kill_job(job_pid, job_pidfd.fd); };
  auto read_output = [&] {
    while (out_r.fd >= 0) {
      ssize_t r = ::read(out_r.fd, buf, sizeof buf);
      if (r > 0) {
        const auto room = static_cast<std::size_t>(job.limits.output_bytes) - result.output.size();
        result.output.append(buf, std::min(room, static_cast<std::size_t>(r)));
        if (static_cast<std::size_t>(r) > room && !killed_for_output) {
          killed_for_output = true;
          kill_it();
          if (!owed) owed = Clock::now() + grace;
          out_r.reset();
        }
      } else {
        if (r == 0 || (errno != EAGAIN && errno != EINTR)) out_r.reset();
        if (r < 0 && errno == EINTR) continue;
        break;
      }
    }
  };

  while (true) {
    const auto now = Clock::now();
    if (!killed_for_time && now >= deadline) {
      killed_for_time = true;
      kill_it();
      if (!owed || *owed > now + grace) owed = now + grace;
    }
    if (owed && now >= *owed) {
      kill_it();
      Error e = fail(job_pid < 0 ? "no pid for the job within the grace period"
                                 : "no exit status for the job within the grace period");
      // A job killed at its deadline (or for its output) ended that way whatever the zygote
      // did; the zygote is replaced all the same. Any other job's outcome is unknown.
      if (!killed_for_time && !killed_for_output) return e;
      failure_ = e.message;
      break;
    }
    pollfd fds[5];
    int n = 0, out_at = -1, pidfd_at = -1, zygote_at = -1, zygote_out_at = -1;
    fds[n++] = {control_.fd, POLLIN, 0};
    if (out_r.fd >= 0) out_at = n, fds[n++] = {out_r.fd, POLLIN, 0};
    if (job_pidfd.fd >= 0 && !job_gone) pidfd_at = n, fds[n++] = {job_pidfd.fd, POLLIN, 0};
    if (process_.pidfd() >= 0) zygote_at = n, fds[n++] = {process_.pidfd(), POLLIN, 0};
    if (process_.output_fd() >= 0) zygote_out_at = n, fds[n++] = {process_.output_fd(), POLLIN, 0};
    auto until = killed_for_time ? *owed : std::min(deadline, owed.value_or(deadline));
    int pr = ::poll(fds, n, ms_until(until));
    if (pr < 0 && errno != EINTR) {
      kill_it();
      return fail(std::string("poll: ") + std::strerror(errno));
    }
    if (pr <= 0) continue;
    if (zygote_out_at >= 0 && (fds[zygote_out_at].revents & (POLLIN | POLLHUP | POLLERR)))
      keep_output(process_.read_output(kZygoteOutputKept));  // keep its pipe from filling
    if (out_at >= 0 && (fds[out_at].revents & (POLLIN | POLLHUP | POLLERR))) read_output();
    if (pidfd_at >= 0 && (fds[pidfd_at].revents & POLLIN)) {
      job_gone = true;
      ::kill(-job_pid, SIGKILL);  // nothing of its group may outlive it
      if (!owed) owed = Clock::now() + grace;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      std::vector<UniqueFd> carried;
      auto msg = recv_message(control_.fd, carried);
      if (!msg || msg->empty()) {
        kill_it();
        return fail("closed its control socket during a job");
      }
      json j = json::parse(*msg, nullptr, false);
      if (j.is_discarded() || !j.is_object() || j.value("job", std::uint64_t{0}) != id) {
        kill_it();
        return fail("sent an unexpected message during a job: " + msg->substr(0, 200));
      }
      if (j.contains("pid") && job_pid < 0) {
        job_pid = j["pid"].get<pid_t>();
        if (job_pid <= 1) return fail("sent an invalid pid");
        if (!carried.empty()) job_pidfd = std::move(carried.front());
        owed.reset();
        if (killed_for_time || killed_for_output) {  // a late pid: kill what we could not before
          kill_it();
          owed = Clock::now() + grace;
        }
      } else if (j.contains("exit_code") && job_pid > 0) {
        status = std::move(j);
        break;
      } else {
        kill_it();
        return fail("sent an unexpected message during a job: " + msg->substr(0, 200));
      }
    }
    if (zygote_at >= 0 && (fds[zygote_at].revents & POLLIN)) {
      kill_it();
      return fail("died during a job");
    }
  }
  if (job_pid > 0) ::kill(-job_pid, SIGKILL);  // stragglers of the job's group
  read_output();
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_seconds = status.value("cpu_s", 0.0);
  result.max_rss_bytes = status.value("max_rss_bytes", std::int64_t{0});
  const bool exited = status.contains("exit_code") && status["exit_code"].is_number_integer();
  const int sig = status.contains("signal") && status["signal"].is_number_integer()
                      ? status["signal"].get<int>()
                      : 0;
  if (killed_for_time) {
    result.outcome = SandboxOutcome::kWallTimeout;
    result.signal = SIGKILL;
  } else if (killed_for_output) {
    result.outcome = SandboxOutcome::kOutputLimit;
    result.signal = SIGKILL;
  } else if (exited) {
    result.outcome = SandboxOutcome::kExited;
    result.exit_code = status["exit_code"].get<int>();
  } else if (sig > 0) {
    result.signal = sig;
    if (sig == SIGXCPU ||
        (sig == SIGKILL && result.cpu_seconds >= static_cast<double>(job.limits.cpu_seconds)))
      result.outcome = SandboxOutcome::kCpuLimit;
    else if (sig == SIGXFSZ)
      result.outcome = SandboxOutcome::kFileLimit;
    else
      result.outcome = SandboxOutcome::kSignalled;
  } else {
    return fail("sent a status with neither an exit code nor a signal");
  }
  return result;
}

}  // namespace cuda_agent
