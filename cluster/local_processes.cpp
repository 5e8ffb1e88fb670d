#include "cluster/local_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>

namespace cuda_agent {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct LocalProcesses::Child {
  ProcessSpec spec;
  std::string log_path;
  pid_t pid = -1;
  int restarts = 0;
  int last_exit_code = -1;
  bool expect_exit = false;
  bool given_up = false;
  bool restart_due = false;
  bool stopped = false;  // stop_all() ended it or cancelled its restart
  Clock::time_point restart_at{};
  std::deque<Clock::time_point> recent_restarts;  // those inside restart_window_ms
};

std::string_view to_string(ChildState state) {
  switch (state) {
    case ChildState::kRunning: return "running";
    case ChildState::kRestartPending: return "restart_pending";
    case ChildState::kGivenUp: return "given_up";
    case ChildState::kFinished: return "finished";
    case ChildState::kStopped: return "stopped";
  }
  return "unknown";
}

LocalProcesses::LocalProcesses(LocalProcessOptions options) : options_(std::move(options)) {}

LocalProcesses::~LocalProcesses() { stop_all(); }

namespace {

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("cuda-agent") : p.string();
}

// `program` as execve needs it: unchanged with a '/', else the first executable of that name on
// PATH.
Expected<std::string> resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= path.size()) {
    std::size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > begin ? path.substr(begin, end - begin) : ".";
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
    begin = end + 1;
  }
  return make_error(ErrorCategory::kNotFound, "launch.not_found",
                    "program '" + program + "' not found on PATH (" + path + ")");
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Status LocalProcesses::launch(Child& c) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = c.spec.argv;
  if (args.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "launch.empty_argv",
                      "process " + c.spec.name + " has no command line");
  }
  if (args[0] == "cuda-agent") {
    args[0] = options_.cuda_agent_exe.empty() ? self_exe() : options_.cuda_agent_exe;
  }
  auto program = resolve_program(args[0]);
  if (!program) {
    return make_error(program.error().category, program.error().code,
                      "process " + c.spec.name + ": " + program.error().message);
  }
  args[0] = *program;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const std::string key(kv.substr(0, kv.find('=')));
    if (!c.spec.env.count(key)) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : c.spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(c.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return make_error(ErrorCategory::kIo, "launch.log",
                      "cannot open the log " + c.log_path + ": " + std::strerror(errno));
  }
  const std::string banner = "=== start " + std::to_string(c.restarts) + ": " + args[0] + "\n";
  (void)!::write(log_fd, banner.data(), banner.size());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return make_error(ErrorCategory::kInternal, "launch.fork",
                      "fork for " + c.spec.name + ": " + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
    ::setpgid(0, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the supervisor blocks signals; children not
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  c.pid = pid;
  return Status::ok();
}

Status LocalProcesses::start(const ProcessSpec& spec) {
  for (const Child& c : children_) {
    if (c.spec.name == spec.name) {
      return make_error(ErrorCategory::kInvalidInput, "launch.duplicate",
                        "process " + spec.name + " is already started");
    }
  }
  std::error_code ec;
  fs::create_directories(options_.log_dir, ec);
  Child c;
  c.spec = spec;
  c.log_path = (fs::path(options_.log_dir) / (spec.name + ".log")).string();
  RETURN_IF_ERROR(launch(c));
  children_.push_back(std::move(c));
  return Status::ok();
}

void LocalProcesses::expect_exit(const std::string& name) {
  for (Child& c : children_) {
    if (c.spec.name == name) c.expect_exit = true;
  }
}

std::vector<ChildEvent> LocalProcesses::poll() {
  std::vector<ChildEvent> events;
  const Clock::time_point now = Clock::now();
  for (Child& c : children_) {
    if (c.pid > 0) {
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r != c.pid) continue;
      c.pid = -1;
      const int code = exit_code_of(status);
      c.last_exit_code = code;
      ChildEvent e{ChildEventKind::kExited, c.spec.name, c.spec.role, code, false, c.log_path};
      events.push_back(e);
      if (options_.restart_window_ms.count() > 0) {
        while (!c.recent_restarts.empty() &&
               now - c.recent_restarts.front() >= options_.restart_window_ms) {
          c.recent_restarts.pop_front();
        }
      }
      const int counted = options_.restart_window_ms.count() > 0
                              ? static_cast<int>(c.recent_restarts.size())
                              : c.restarts;
      // Exit 0 is the child's own decision (its work is done): not restarted.
      if (c.expect_exit || code == 0 || counted >= options_.max_restarts ||
          (options_.fatal_exit_code != 0 && code == options_.fatal_exit_code)) {
        c.given_up = true;
        e.kind = ChildEventKind::kGivenUp;
        e.expected = code == 0;
        events.push_back(e);
        continue;
      }
      const auto backoff = std::min<std::chrono::milliseconds>(
          options_.restart_backoff_ms * (1 << std::min(counted, 16)), options_.max_backoff_ms);
      c.restart_due = true;
      c.restart_at = now + backoff;
    } else if (c.restart_due && now >= c.restart_at) {
      c.restart_due = false;
      c.restarts += 1;
      c.recent_restarts.push_back(now);
      if (Status s = launch(c); !s.is_ok()) {
        c.given_up = true;
        events.push_back(
            {ChildEventKind::kGivenUp, c.spec.name, c.spec.role, 127, false, c.log_path});
        continue;
      }
      events.push_back(
          {ChildEventKind::kRestarted, c.spec.name, c.spec.role, 0, false, c.log_path});
    }
  }
  return events;
}

bool LocalProcesses::kill(const std::string& name, int signal) {
  for (const Child& c : children_) {
    if (c.spec.name == name && c.pid > 0) return ::kill(c.pid, signal) == 0;
  }
  return false;
}

std::vector<std::string> LocalProcesses::running() const {
  std::vector<std::string> names;
  for (const Child& c : children_) {
    if (c.pid > 0) names.push_back(c.spec.name);
  }
  return names;
}

pid_t LocalProcesses::pid(const std::string& name) const {
  for (const Child& c : children_) {
    if (c.spec.name == name) return c.pid;
  }
  return -1;
}

std::vector<ChildInfo> LocalProcesses::children() const {
  std::vector<ChildInfo> out;
  for (const Child& c : children_) {
    ChildState state = ChildState::kRunning;
    if (c.pid <= 0) {
      if (c.restart_due) {
        state = ChildState::kRestartPending;
      } else if (c.stopped) {
        state = ChildState::kStopped;
      } else {
        state = c.last_exit_code == 0 ? ChildState::kFinished : ChildState::kGivenUp;
      }
    }
    out.push_back({.name = c.spec.name,
                   .role = c.spec.role,
                   .state = state,
                   .pid = c.pid,
                   .restarts = c.restarts,
                   .last_exit_code = c.last_exit_code,
                   .log_path = c.log_path});
  }
  return out;
}

void LocalProcesses::stop_all() {
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    it->stopped = it->pid > 0 || it->restart_due;
    it->restart_due = false;
    it->given_up = true;
    if (it->pid > 0) ::kill(it->pid, SIGTERM);
  }
  const Clock::time_point deadline = Clock::now() + options_.stop_grace_ms;
  for (;;) {
    bool alive = false;
    for (Child& c : children_) {
      if (c.pid <= 0) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.pid = -1;
        c.last_exit_code = exit_code_of(status);
      } else {
        alive = true;
      }
    }
    if (!alive) return;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (Child& c : children_) {
    if (c.pid <= 0) continue;
    ::kill(-c.pid, SIGKILL);  // its group: whatever it started dies with it
    ::kill(c.pid, SIGKILL);
    int status = 0;
    ::waitpid(c.pid, &status, 0);
    c.pid = -1;
    c.last_exit_code = exit_code_of(status);
  }
}

std::string LocalProcesses::log_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) out += "  | " + l + "\n";
  return out;
}

}  // namespace cuda_agent
