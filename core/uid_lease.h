// A host-wide lease on one uid of a range, for sandboxed jobs that must not share a uid with a
// job of another process (two compile workers on one host; core/sandbox.h runs each job as its
// uid, and two jobs with one uid could signal or read each other).
//
// The lease is an exclusive flock(2) on <lock_dir>/<uid>.lock, taken without blocking: a busy uid
// is skipped for the next one of the range. The kernel drops the lock when the holder's file is
// closed, including when the process dies, so a crashed worker leaves no stale lease.
//
//   ASSIGN_OR_RETURN(UidLease lease, UidLease::acquire(61000, seq, 4096));
//   job.run_as = RunAs{lease.uid(), lease.uid()};   // keep `lease` alive until the job ends
//
// Errors: kIo uid.lock_dir when the lock directory cannot be made or is not a directory;
// kUnavailable uid.exhausted when every uid of the range is leased.
// Threading: acquire() is safe from any thread; a UidLease belongs to one owner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/unique_fd.h"

namespace cuda_agent {

/// Where leases live unless told otherwise: one directory per host (root-owned, 0700).
inline constexpr const char* kDefaultUidLockDir = "/tmp/cuda-agent-uid-leases";

class UidLease {
 public:
  /// The first free uid of base + ((start + i) mod span), i = 0 .. span-1.
  static Expected<UidLease> acquire(std::int64_t base, std::uint64_t start, std::uint32_t span,
                                    const std::string& lock_dir = kDefaultUidLockDir);
  UidLease(UidLease&&) = default;
  UidLease& operator=(UidLease&&) = default;
  uid_t uid() const { return uid_; }

 private:
  UidLease(UniqueFd fd, uid_t uid) : fd_(std::move(fd)), uid_(uid) {}
  UniqueFd fd_;
  uid_t uid_ = 0;
};

}  // namespace cuda_agent
