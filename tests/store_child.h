// Test-only: a child process with its stdout (and stdin) on pipes, read line by line with
// deadlines. Used by the run store's multi-process tests.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace cuda_agent::testing {

class Child {
 public:
  /// Starts `argv[0]` with `argv`; its stdout and stdin are pipes held by this object.
  explicit Child(const std::vector<std::string>& argv) {
    int out[2], in[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(in[0]);
    out_ = out[0];
    in_ = in[1];
  }
  ~Child() {
    kill_now();
    if (out_ >= 0) ::close(out_);
    close_stdin();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  /// The next complete line (without '\n'), or nullopt at EOF or when `deadline` passes.
  std::optional<std::string> read_line(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (eof_) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        eof_ = true;
      } else {
        buffer_.append(chunk, static_cast<std::size_t>(n));
      }
    }
  }

  /// SIGKILL, then reap. Safe to call twice.
  void kill_now() {
    if (pid_ <= 0 || reaped_) return;
    ::kill(pid_, SIGKILL);
    wait_exit(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  }

  /// Waits until the child exits or `deadline` passes; its exit status, or -1 if still running.
  int wait_exit(std::chrono::steady_clock::time_point deadline) {
    while (!reaped_) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        status_ = status;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      pollfd none{-1, 0, 0};
      ::poll(&none, 0, 5);  // a short bounded pause between polls of waitpid
    }
    return status_;
  }

  void close_stdin() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
  std::string buffer_;
  bool eof_ = false;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace cuda_agent::testing
