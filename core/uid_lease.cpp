#include "core/uid_lease.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace cuda_agent {

Expected<UidLease> UidLease::acquire(std::int64_t base, std::uint64_t start, std::uint32_t span,
                                     const std::string& lock_dir) {
  if (base < 0 || span == 0)
    return make_error(ErrorCategory::kInvalidInput, "uid.range",
                      "uid range base " + std::to_string(base) + " span " + std::to_string(span) +
                          " is empty or negative");
  if (::mkdir(lock_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(ErrorCategory::kIo, "uid.lock_dir",
                      "cannot create '" + lock_dir + "': " + std::strerror(errno));
  struct stat st {};
  if (::lstat(lock_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return make_error(ErrorCategory::kIo, "uid.lock_dir", "'" + lock_dir + "' is not a directory");
  for (std::uint32_t i = 0; i < span; ++i) {
    const auto uid = static_cast<uid_t>(base + static_cast<std::int64_t>((start + i) % span));
    const std::string path = lock_dir + "/" + std::to_string(uid) + ".lock";
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.fd < 0)
      return make_error(ErrorCategory::kIo, "uid.lock_dir",
                        "cannot open '" + path + "': " + std::strerror(errno));
    if (::flock(fd.fd, LOCK_EX | LOCK_NB) == 0) return UidLease(std::move(fd), uid);
    if (errno != EWOULDBLOCK)
      return make_error(ErrorCategory::kIo, "uid.lock_dir",
                        "flock '" + path + "': " + std::strerror(errno));
  }
  return make_error(ErrorCategory::kUnavailable, "uid.exhausted",
                    "all " + std::to_string(span) + " uids from " + std::to_string(base) +
                        " are leased by running jobs on this host");
}

}  // namespace cuda_agent
