#include "backend/file/proc_locks.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/sysmacros.h>

namespace dlock::backend::file {

// Lines look like
//   "12: FLOCK  ADVISORY  WRITE 4242 fe:00:10780673 0 EOF"
//   "12: -> FLOCK  ADVISORY  WRITE 4243 fe:00:10780673 0 EOF"   (blocked)
// with the device as hex major:minor and the inode in decimal.
KernelLockView read_kernel_locks(dev_t device, ino_t inode) {
  KernelLockView view;
  std::ifstream in("/proc/locks");
  char wanted[64];
  std::snprintf(wanted, sizeof wanted, "%02x:%02x:%lu", major(device), minor(device),
                static_cast<unsigned long>(inode));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string ordinal, kind, advisory, mode, pid_text, where;
    fields >> ordinal >> kind;
    bool blocked = kind == "->";
    if (blocked) fields >> kind;
    if (kind != "FLOCK") continue;
    fields >> advisory >> mode >> pid_text >> where;
    if (where != wanted) continue;
    if (blocked) {
      ++view.waiters;
    } else {
      view.holders.push_back(static_cast<pid_t>(std::strtol(pid_text.c_str(), nullptr, 10)));
    }
  }
  return view;
}

} // namespace dlock::backend::file
