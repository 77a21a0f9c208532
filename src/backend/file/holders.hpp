#pragma once
// The file backend's shared holders (--shared readers and a semaphore's
// slot holders), who all hold LOCK_SH on the lock file and share its
// record: how they update it one at a time, drop the dead ones, and tell a
// name held another way.
#include "backend/backend.hpp"
#include "backend/file/record.hpp"

#include <optional>
#include <string>
#include <sys/stat.h>

namespace dlock::backend::file {

// Serialises the record updates of shared holders: an OFD write lock on
// the whole file for the few microseconds of a read-modify-write. Linux
// keeps OFD locks apart from flock(2), so it neither blocks nor is blocked
// by the lock itself. `path` names the file in an error.
class RecordLock {
public:
  RecordLock(int fd, const std::string &path);
  ~RecordLock();
  RecordLock(const RecordLock &) = delete;
  RecordLock &operator=(const RecordLock &) = delete;

private:
  int m_fd;
};

// Drops the readers the kernel no longer names as holders of the file
// `identity` (killed ones), and a semaphore's N once none is left.
void prune_readers(LockRecord &record, const struct stat &identity);

// Why `request` may not join the record's live shared holders (readers
// against a semaphore, a semaphore of another N), naming what holds it;
// nullopt if it may. `path` is the lock file's.
std::optional<std::string> mixed_refusal(const LockRequest &request, const LockRecord &record, const std::string &path);

// Why an exclusive request may not wait for the record's holders: they
// hold the name as a semaphore; nullopt otherwise.
std::optional<std::string> semaphore_refusal(const LockRequest &request, const LockRecord &record);

} // namespace dlock::backend::file
