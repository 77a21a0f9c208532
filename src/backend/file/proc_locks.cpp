#include "backend/file/proc_locks.hpp"

#include "backend/file/lock_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/sysmacros.h>

namespace dlock::backend::file {

// Lines look like
//   "12: FLOCK  ADVISORY  WRITE 4242 fe:00:10780673 0 EOF"
//   "12: -> FLOCK  ADVISORY  WRITE 4243 fe:00:10780673 0 EOF"   (blocked)
// with the device as hex major:minor and the inode in decimal.
std::optional<ProcLocksLine> parse_proc_locks_line(const std::string &line) {
  std::istringstream fields(line);
  std::string ordinal, kind, advisory, mode, pid_text, where;
  fields >> ordinal >> kind;
  ProcLocksLine out;
  out.blocked = kind == "->";
  if (out.blocked) fields >> kind;
  if (kind != "FLOCK") return std::nullopt;
  fields >> advisory >> mode >> pid_text >> where;
  char *end = nullptr;
  unsigned long major_number = std::strtoul(where.c_str(), &end, 16);
  if (*end != ':') return std::nullopt;
  unsigned long minor_number = std::strtoul(end + 1, &end, 16);
  if (*end != ':') return std::nullopt;
  out.inode = static_cast<ino_t>(std::strtoull(end + 1, nullptr, 10));
  out.device = makedev(static_cast<unsigned>(major_number), static_cast<unsigned>(minor_number));
  out.pid = static_cast<pid_t>(std::strtol(pid_text.c_str(), nullptr, 10));
  out.shared = mode == "READ";
  return out;
}

KernelLocks KernelLocks::read() {
  KernelLocks locks;
  std::ifstream in("/proc/locks");
  // Without it every lock would look free: say so instead.
  if (!in) throw file_error("cannot read /proc/locks to find lock holders", errno);
  std::string line;
  while (std::getline(in, line)) {
    std::optional<ProcLocksLine> lock = parse_proc_locks_line(line);
    if (!lock) continue;
    KernelLockView &view = locks.m_by_inode[{lock->device, lock->inode}];
    if (lock->blocked) {
      ++view.waiters;
      view.waiting.push_back(lock->pid);
    } else {
      view.holders.push_back(lock->pid);
      view.shared = lock->shared;
    }
  }
  return locks;
}

KernelLockView KernelLocks::of(dev_t device, ino_t inode) const {
  auto found = m_by_inode.find({device, inode});
  return found == m_by_inode.end() ? KernelLockView{} : found->second;
}

} // namespace dlock::backend::file
