#include "backend/file/holders.hpp"

#include "backend/file/lock_dir.hpp"
#include "backend/file/proc_locks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>

namespace dlock::backend::file {

RecordLock::RecordLock(int fd, const std::string &path) : m_fd(fd) {
  struct flock range {};
  range.l_type = F_WRLCK;
  range.l_whence = SEEK_SET;
  while (fcntl(fd, F_OFD_SETLKW, &range) != 0)
    if (errno != EINTR) throw file_error(fmt::format("cannot lock the record of {}", path), errno);
}

RecordLock::~RecordLock() {
  struct flock range {};
  range.l_type = F_UNLCK;
  range.l_whence = SEEK_SET;
  fcntl(m_fd, F_OFD_SETLK, &range);
}

void prune_readers(LockRecord &record, const struct stat &identity) {
  std::vector<pid_t> live = KernelLocks::read().of(identity.st_dev, identity.st_ino).holders;
  std::erase_if(record.readers, [&](const ReaderRecord &reader) {
    return std::find(live.begin(), live.end(), reader.holder.pid) == live.end();
  });
  if (record.readers.empty()) record.limit = 0;
}

std::optional<std::string> mixed_refusal(const LockRequest &request, const LockRecord &record,
                                         const std::string &path) {
  if (record.readers.empty()) return std::nullopt;
  bool semaphore = record.limit > 0;
  std::string held_as = semaphore ? fmt::format("a semaphore of {} (--limit {})", record.limit, record.limit)
                                  : "a shared lock (--shared)";
  bool same = request.mode == HoldMode::semaphore ? semaphore && record.limit == request.limit
                                                  : request.mode == HoldMode::shared && !semaphore;
  if (same) return std::nullopt;
  return fmt::format("lock '{}' is held as {} by {} holder{} (pid {} first): take it the same way, or use another "
                     "name (lock file {})",
                     request.name, held_as, record.readers.size(), record.readers.size() == 1 ? "" : "s",
                     record.readers.front().holder.pid, path);
}

std::optional<std::string> semaphore_refusal(const LockRequest &request, const LockRecord &record) {
  if (request.mode != HoldMode::exclusive || record.limit == 0 || record.readers.empty()) return std::nullopt;
  return fmt::format("lock '{}' is held as a semaphore of {} (--limit {}) by {} holder{}: take it with --limit {}, "
                     "or use another name",
                     request.name, record.limit, record.limit, record.readers.size(),
                     record.readers.size() == 1 ? "" : "s", record.limit);
}

} // namespace dlock::backend::file
