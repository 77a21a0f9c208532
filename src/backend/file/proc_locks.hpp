#pragma once

#include <sys/types.h>
#include <vector>

namespace dlock::backend::file {

// Who holds and who waits for a flock(2) lock on one inode, read from
// /proc/locks. Looking does not touch the lock, so status never makes a
// concurrent try-acquire fail.
struct KernelLockView {
  std::vector<pid_t> holders; // processes that placed a granted lock
  std::size_t waiters = 0;    // blocked requests
};

KernelLockView read_kernel_locks(dev_t device, ino_t inode);

} // namespace dlock::backend::file
