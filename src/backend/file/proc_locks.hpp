#pragma once

#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace dlock::backend::file {

// Who holds and who waits for a flock(2) lock on one inode, read from
// /proc/locks. Looking does not touch the lock, so status never makes a
// concurrent try-acquire fail.
struct KernelLockView {
  std::vector<pid_t> holders; // processes that placed a granted lock
  std::size_t waiters = 0;    // blocked requests
  std::vector<pid_t> waiting; // the processes that made them
  bool shared = false;        // the granted locks are LOCK_SH (readers)
};

// One line of /proc/locks that describes a flock(2) lock.
struct ProcLocksLine {
  bool blocked = false; // a waiting request ("->"), not a granted lock
  bool shared = false;  // LOCK_SH ("READ"), not LOCK_EX ("WRITE")
  pid_t pid = 0;
  dev_t device = 0;
  ino_t inode = 0;
};
// nullopt for lines about other kinds of locks (POSIX, OFD, LEASE) and
// for anything malformed.
std::optional<ProcLocksLine> parse_proc_locks_line(const std::string &line);

// One reading of /proc/locks: every flock(2) lock on the system by inode,
// so that `list` reads the file once, not once per lock.
class KernelLocks {
public:
  // Throws file_error() when /proc/locks cannot be read.
  static KernelLocks read();
  KernelLockView of(dev_t device, ino_t inode) const;

private:
  std::map<std::pair<dev_t, ino_t>, KernelLockView> m_by_inode;
};

} // namespace dlock::backend::file
