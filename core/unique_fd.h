// A file descriptor closed when it goes out of scope, and a close-on-exec pipe of two of them.
// Used by the child-process runners (core/sandbox.cpp, tasks/child_process.cpp).
//
//   UniqueFd r, w;
//   if (!make_pipe(r, w)) return error(errno);
//
// Threading: a UniqueFd belongs to one owner.
#pragma once

#include <fcntl.h>
#include <unistd.h>

namespace cuda_agent {

struct UniqueFd {
  int fd = -1;
  UniqueFd() = default;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~UniqueFd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

/// pipe2(O_CLOEXEC) into two owners; false (errno set) when it fails.
inline bool make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  read_end.fd = p[0];
  write_end.fd = p[1];
  return true;
}

}  // namespace cuda_agent
